"""Acceptability judged by an LLM (`--acceptability llm`): the strongest filter for users who have
one. The fixed prompt `resources/prompts/acceptability_judge.txt` asks whether the candidate is
natural, coherent English and whether it changes the meaning of its original (docs/judging.md's two
questions); the reply must answer both, each exactly once, or the candidate is rejected as
`unparseable` (never guessed). Replies go through the same client and SQLite reply cache as the
LLM pipeline (`--llm-backend`, `--llm-model`, `--llm-base-url` ...), so a rerun asks nothing again,
and each record keeps the raw reply under `checks.acceptability.reply`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from transnli.generator.checks.base import CheckResult, check_lengths
from transnli.generator.checks.registry import register_check

PROMPT = "acceptability_judge"
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_ANSWER = re.compile(
    r"^[\s*_#>-]*(natural|meaning[ _]changed)[\s*_]*:[\s*_]*(yes|no)\b", re.I | re.M
)


def parse_acceptability_reply(text: str) -> tuple[bool, bool] | None:
    """(natural, meaning_changed) from a reply, or None unless each is answered exactly once."""
    found: dict[str, list[bool]] = {}
    for key, answer in _ANSWER.findall(_THINK.sub("", text or "")):
        found.setdefault(key.lower().replace(" ", "_"), []).append(answer.lower() == "yes")
    natural, changed = found.get("natural", []), found.get("meaning_changed", [])
    if len(natural) != 1 or len(changed) != 1:
        return None
    return natural[0], changed[0]


@register_check("acceptability", "llm")
class LLMAcceptability:
    """An LLM answers docs/judging.md's two questions for each candidate; it passes when both are
    yes. A request that fails stops the run with an LLMError (the run can be resumed; replies
    received so far are cached), so a flaky server never silently rejects candidates."""

    @classmethod
    def from_options(cls, *, llm_client, **_options: Any) -> LLMAcceptability:
        return cls(llm_client)

    def __init__(self, client, template=None):
        from transnli.generator.llm.prompting import load_template

        self.client = client
        self.template = template or load_template(PROMPT)

    def prompt(self, original: str, candidate: str) -> str:
        return self.template.render(original=original, candidate=candidate)

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        from transnli.common.llm.base import LLMError

        check_lengths(originals, candidates)
        prompts = [self.prompt(o, c) for o, c in zip(originals, candidates, strict=True)]
        replies = self.client.complete_many(prompts) if prompts else []
        out = []
        for reply in replies:
            if not reply.ok:
                raise LLMError(
                    f"LLM acceptability check: a request failed ({reply.error_kind}: {reply.error})"
                )
            parsed = parse_acceptability_reply(reply.text)
            details = {"reply": reply.text}
            if parsed is None:
                out.append(
                    CheckResult(
                        self.backend,
                        False,
                        {**details, "outcome": "unparseable"},
                        "unparseable reply from the LLM",
                    )
                )
                continue
            natural, changed = parsed
            details.update(natural=natural, meaning_changed=changed)
            reason = (
                ""
                if natural and changed
                else (
                    "the LLM judged it not natural"
                    if not natural
                    else "the LLM judged the meaning unchanged"
                )
            )
            out.append(CheckResult(self.backend, natural and changed, details, reason))
        return out

    def version(self) -> str:
        d = self.client.describe()
        return f"llm {d.get('backend', '?')}:{d.get('model', '?')} prompt {self.template.id}"
