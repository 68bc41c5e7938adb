"""An LLM as NLI judge: ``--model llm:openai:MODEL`` (also ``llm:hf-causal:PATH`` and
``llm:hf-seq2seq:PATH``; a bare ``llm:MODEL`` means openai).

Each pair is put into the fixed template ``resources/prompts/nli_judge.txt`` and the reply is
parsed into entailment / neutral / contradiction (`parse_judge_reply`). A reply that names no
label, or more than one without saying which is the answer, gets the label None: it is counted and
reported (`describe()["unparseable"]`, and the evaluator's per-model count of unlabelled pairs),
never guessed. The rules treat such a triple as having no label.

Settings come from `BackendOptions.extra` (the evaluator's ``--llm-*`` flags): llm_base_url
(else $TRANSNLI_LLM_BASE_URL, else $OPENAI_BASE_URL, else OpenAI's), llm_api_key_env (default
OPENAI_API_KEY), llm_concurrency, llm_timeout, llm_max_retries, llm_temperature (default 0),
llm_max_tokens. Replies are cached by the LLM client (keyed by model, parameters and the exact
prompt), so the label cache is not used for this backend and a rerun costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..errors import BackendError
from ..labels import C, E, N, normalize_label
from .base import BackendOptions, NLIBackend, Pair, Prediction

_WORDS = {
    "entailment": E,
    "entailed": E,
    "entails": E,
    "entail": E,
    "entailing": E,
    "neutral": N,
    "neutrality": N,
    "contradiction": C,
    "contradictory": C,
    "contradicts": C,
    "contradict": C,
    "contradicted": C,
    "contradicting": C,
}
_WORD_RE = "|".join(sorted(_WORDS, key=len, reverse=True))
_MENTION = re.compile(rf"\b({_WORD_RE})\b", re.I)
_ANSWER = re.compile(
    rf"\b(?:final\s+answer|answer|label|relation(?:ship)?|verdict|prediction|classification|judg(?:e)?ment|"
    rf"output|category)\b\s*(?:is|would\s+be|:|=|-)?\s*[:\-]?\s*[\"'*_`(\[]*\s*({_WORD_RE})\b",
    re.I,
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|neither|nor|isn't|aren't|doesn't|don't|cannot|can't|without)\s+"
    r"(?:\w+\s+){0,2}$",
    re.I,
)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_FIRST = re.compile(rf"^\W*({_WORD_RE})\b\s*(?:[.,:;!\n)]|$)", re.I)


def parse_judge_reply(reply: str | None) -> str | None:
    """The NLI label a reply gives, or None when it gives none (or several without saying which).

    In order: the whole reply is a label ("Entailment.", "**neutral**", "C"); the reply starts with
    a label word followed by punctuation ("Contradiction. The premise says ..."); an explicit
    answer ("The answer is: Entailment.", "Label: neutral", the last one wins); the only label word
    used without negation ("The hypothesis contradicts the premise." -> contradiction, but "does not
    entail" alone -> None).
    """
    if not reply:
        return None
    text = _THINK.sub("", reply).strip()
    if not text:
        return None
    bare = re.sub(r"[^a-z]", "", text.lower())
    if len(bare) <= 16:
        label = normalize_label(bare) or _WORDS.get(bare)
        if label:
            return label
    m = _FIRST.match(text)
    if m:
        return _WORDS[m.group(1).lower()]
    answers = _ANSWER.findall(text)
    if answers:
        return _WORDS[answers[-1].lower()]
    found = set()
    for m in _MENTION.finditer(text):
        if _NEGATION.search(text[max(0, m.start() - 40) : m.start()]):
            continue
        found.add(_WORDS[m.group(1).lower()])
    return found.pop() if len(found) == 1 else None


def split_llm_spec(arg: str) -> tuple[str, str]:
    """(client backend, model) of what follows `llm:`: "hf-causal:/m" -> ("hf-causal", "/m"); a
    bare model name is an OpenAI-compatible server's."""
    from transnli.common.llm.clients import BACKENDS

    head, sep, rest = arg.partition(":")
    if sep and head.lower() in BACKENDS:
        if not rest.strip():
            raise BackendError(f"llm:{arg}: no model after '{head}:'")
        return head.lower(), rest.strip()
    return "openai", arg.strip()


def _max_tokens(value: Any) -> int | None:
    """128 by default (the template asks for one word; room for a short explanation); 0: no
    limit."""
    if value is None:
        return 128
    return int(value) or None


class LLMJudgeBackend(NLIBackend):
    """Labels pairs by prompting an LLM with a fixed template."""

    cacheable = False  # the LLM reply cache already keys on the exact prompt

    def __init__(self, client, template, batch_size: int = 64):
        self.client = client
        self.template = template
        self.batch_size = batch_size
        self.unparseable = 0
        self.request_failures = 0
        self.answered = 0  # replies received (parseable or not)
        self.examples: list[dict[str, str]] = []

    @classmethod
    def from_spec(cls, arg: str, options: BackendOptions) -> LLMJudgeBackend:
        from transnli.common.llm.base import LLMError
        from transnli.common.llm.clients import make_client
        from transnli.generator.llm.prompting import NLI_JUDGE, load_template

        backend, model = split_llm_spec(arg)
        x = dict(options.extra or {})
        try:
            client = make_client(
                backend,
                model,
                base_url=x.get("llm_base_url"),
                api_key_env=x.get("llm_api_key_env") or "OPENAI_API_KEY",
                concurrency=int(x.get("llm_concurrency") or 8),
                timeout=float(x.get("llm_timeout") or 60.0),
                max_retries=int(x["llm_max_retries"])
                if x.get("llm_max_retries") is not None
                else 5,
                temperature=float(x.get("llm_temperature") or 0.0),
                max_tokens=_max_tokens(x.get("llm_max_tokens")),
                device=options.device,
                cache=x.get("llm_cache", True),
            )
            client.prepare()
        except LLMError as e:
            raise BackendError(f"llm:{arg}: {e}") from e
        concurrency = int(x.get("llm_concurrency") or 8)
        # A server answers `concurrency` requests at once, so a batch keeps it busy; a local model
        # generates one batch of `concurrency` at a time, and the bar moves after each.
        batch = (
            concurrency if backend != "openai" else max(int(options.batch_size), concurrency * 4)
        )
        return cls(client, load_template(x.get("llm_prompt") or NLI_JUDGE), batch_size=batch)

    @property
    def identity(self) -> str:
        import json

        params = json.dumps(self.client.params(), sort_keys=True)
        return f"llm|{self.client.backend}|{self.client.model_identity}|{self.template.id}|{params}"

    def predict(self, pairs: Sequence[Pair]) -> list[Prediction]:
        from transnli.common.llm.base import LLMError, all_unreachable, none_answered
        from transnli.generator.llm.prompting import judge_prompt

        prompts = [judge_prompt(self.template, p, h) for p, h in pairs]
        try:
            replies = self.client.complete_many(prompts)
        except LLMError as e:  # the reply cache cannot be used
            raise BackendError(f"{self.spec or 'llm'}: {e}") from e
        fatal = all_unreachable(replies)
        if fatal is not None:
            raise BackendError(f"{self.spec or 'llm'}: {fatal.error}")
        failed_all = none_answered(replies, self.answered)
        if failed_all is not None:
            raise BackendError(
                f"{self.spec or 'llm'}: all {len(replies)} requests failed and none has been "
                f"answered in this run; the first: {failed_all.error}"
            )
        out = []
        for (premise, hypothesis), reply in zip(pairs, replies, strict=True):
            if not reply.ok:
                self.request_failures += 1
                out.append(Prediction(None))  # type: ignore[arg-type] - no label, never a guess
                continue
            self.answered += 1
            label = parse_judge_reply(reply.text)
            if label is None:
                self.unparseable += 1
                if len(self.examples) < 5:
                    self.examples.append(
                        {
                            "premise": premise,
                            "hypothesis": hypothesis,
                            "reply": (reply.text or "")[:300],
                        }
                    )
            out.append(Prediction(label))  # type: ignore[arg-type]
        return out

    def cost_note(self, n_triples: int | None) -> str:
        """Said before labelling: an LLM's reply costs far more than a classifier's label."""
        client = getattr(self.client, "inner", self.client)  # the reply cache's wrapped client
        pairs = f"up to {4 * n_triples} pairs" if n_triples else "every pair"
        if self.client.backend == "openai":
            return (
                f"{pairs} asked of {client.base_url}, {client.concurrency} at a time (replies in "
                "the reply cache cost nothing)"
            )
        return (
            f"{pairs} answered by {client.model} on this machine "
            f"({getattr(client, 'device', 'cpu')}), {self.batch_size} at a time, up to "
            f"{client.max_new_tokens} new tokens a reply: seconds a pair on a CPU "
            "(--llm-max-tokens and --limit bound it; replies in the reply cache cost nothing)"
        )

    @property
    def uncached_note(self) -> str:
        """What labelling cost this run (shown by `transnli evaluate`)."""
        u = self.client.usage
        return f"LLM: {u.cache_hits} replies from the reply cache, {u.prompts - u.cache_hits} asked"

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "backend": "llm",
            "llm": self.client.describe(),
            "prompt": self.template.id,
            "unparseable": self.unparseable,
            "request_failures": self.request_failures,
            "unparseable_examples": self.examples,
        }

    def close(self) -> None:
        self.client.close()
