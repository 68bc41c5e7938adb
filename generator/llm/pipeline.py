"""The LLM pipeline (the paper's Section on LLM replacement, Tables 6-7, Appendices D and F).

Words are picked exactly as in the WordNet pipeline (same tagger, same `select_words`), and the
WordNet stages still run on each word, so every LLM answer can be compared with WordNet's choice
for the same word. For each word the LLM gets the paper's prompt with the word in quotation marks;
all prompts of a batch go to the client in one call (concurrent requests, cached). Each reply is
verified (`verify.py`); failures are rejected with ``rejected_by="llm_answer"`` and the verdict as
reason; answers that pass go through the same grammar and acceptability checks as WordNet's.

Mode ``wordnet+llm`` (Appendix F): the WordNet pipeline as usual, and the LLM only for words
WordNet has no antonym for (lookup status no_antonym or no_pos_match).

Outputs stay deterministic: records come out in word order, ids are stable, and the figures in
stats.json use the tokens and seconds each reply cost when it was generated (kept in the cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transnli.common.llm.base import LLMClient, LLMError, LLMReply, all_unreachable, none_answered
from transnli.generator.config import GeneratorConfig
from transnli.generator.pipeline import (
    BatchResult,
    GenerationStats,
    WordChoice,
    WordNetPipeline,
    select_words,
    word_record,
)
from transnli.generator.readers import NLIPair
from transnli.generator.record import TripleRecord

from .prompting import PromptTemplate, replacement_prompt
from .verify import REASONS, Verdict, verify_reply

CHECK_NAME = "llm_answer"
FALLBACK_STATUSES = ("no_antonym", "no_pos_match")
FAILURES = tuple(r for r in REASONS if r != "ok")
REQUEST_FAILED = "request_failed"


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 6) if d else None


class LLMGenerationStats(GenerationStats):
    """GenerationStats plus the LLM figures (the paper's Table 7) under the key "llm".

    Invariants: words_considered = skipped_* + rejected_llm_answer + candidates_built, and
    candidates_built = rejected_grammar + rejected_acceptability + triples_accepted.
    """

    def __init__(self, mode: str = "llm", describe: dict[str, Any] | None = None):
        super().__init__()
        self.mode = mode
        self.describe = describe or {}

    def to_dict(self) -> dict:
        d = super().to_dict()
        c = self.counts
        # rejected_llm_answer goes beside the other rejection counts
        items = list(d.items())
        keys = [k for k, _ in items]
        at = keys.index("rejected_grammar") if "rejected_grammar" in keys else len(items)
        items.insert(at, ("rejected_llm_answer", c["rejected_llm_answer"]))
        d = dict(items)
        prompted, failed = c["llm_prompted"], c[f"llm_{REQUEST_FAILED}"]
        answers = prompted - failed
        ok = c["llm_verdict_ok"]
        compared = c["llm_wordnet_same"] + c["llm_wordnet_different"]
        no_wordnet = {
            k[len("llm_nowordnet_") :]: v
            for k, v in sorted(c.items())
            if k.startswith("llm_nowordnet_") and v
        }
        llm_built = c["llm_candidates_built"]
        d["llm"] = {
            "mode": self.mode,
            **self.describe,
            "words_prompted": prompted,
            **(
                {"fallback_words": {s: c[f"llm_fallback_{s}"] for s in FALLBACK_STATUSES}}
                if self.mode == "wordnet+llm"
                else {}
            ),
            "request_failures": failed,
            "answers": answers,
            # Table 7: answers that meet the prompt's requirements (one word changed, at the quoted
            # position, no negation)
            "answers_meeting_requirements": ok,
            "answers_meeting_requirements_rate": _rate(ok, answers),
            "answer_failures": {r: c[f"llm_verdict_{r}"] for r in FAILURES},
            "answer_failure_rates": {r: _rate(c[f"llm_verdict_{r}"], answers) for r in FAILURES},
            # Table 7: how many of those antonyms differ from the WordNet pipeline's for the same
            # word
            "compared_with_wordnet": {
                "compared": compared,
                "same_as_wordnet": c["llm_wordnet_same"],
                "different_from_wordnet": c["llm_wordnet_different"],
                "different_rate": _rate(c["llm_wordnet_different"], compared),
                "no_wordnet_antonym": no_wordnet,
            },
            "candidates_built": llm_built,
            "rejected_grammar": c["llm_rejected_grammar"],
            "rejected_acceptability": c["llm_rejected_acceptability"],
            "triples_accepted": c["llm_triples_accepted"],
            "acceptance_rate": _rate(c["llm_triples_accepted"], llm_built),
            "tokens": {
                "prompt": c["llm_prompt_tokens"],
                "completion": c["llm_completion_tokens"],
                "total": c["llm_prompt_tokens"] + c["llm_completion_tokens"],
            },
            # summed request latency of the replies used, as measured when each was generated
            # (a reply served from the cache keeps its original figure)
            "request_seconds": round(c["llm_request_ms"] / 1000, 3),
        }
        return d

    def checkpoint_dict(self) -> dict:
        d = super().checkpoint_dict()
        d["_llm_counts"] = {k: v for k, v in self.counts.items() if k.startswith("llm_")}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> LLMGenerationStats:
        base = GenerationStats.from_dict({k: v for k, v in d.items() if k != "llm"})
        llm = d.get("llm", {})
        s = cls(
            llm.get("mode", "llm"), {k: llm[k] for k in ("backend", "model", "prompt") if k in llm}
        )
        s.counts, s.skipped_sentences = base.counts, base.skipped_sentences
        s.counts.update(d.get("_llm_counts", {}))
        return s


def wordnet_status(choice: WordChoice) -> str:
    """What WordNet made of the word: ok, no_antonym, no_pos_match, fixed_expression,
    unrealisable (the WordNet pipeline's statuses), or unavailable (no WordNet stages)."""
    return choice.status


def _lemmas(word: str) -> set[str]:
    w = word.lower()
    out = {w}
    try:
        import lemminflect

        for forms in lemminflect.getAllLemmas(w).values():
            out.update(f.lower() for f in forms)
    except ImportError:  # pragma: no cover - lemminflect is a dependency
        pass
    return out


def same_as_wordnet(new_word: str, choice: WordChoice) -> bool:
    """The LLM's word equals WordNet's choice: the same surface form, or a lemma of the LLM's
    word is the WordNet antonym (so "awake" = "awake", "lost" = "lose")."""
    if choice.record is None:
        return False
    surface = getattr(choice.realised, "surface", None)
    if surface and surface.lower() == new_word.lower():
        return True
    return choice.record.antonym.lower() in _lemmas(new_word)


class LLMPipeline(WordNetPipeline):
    """`mode` is "llm" (every selected word goes to the LLM) or "wordnet+llm" (the LLM only where
    WordNet has no antonym). `antonyms`, `ranker` and `realiser` may be None in "llm" mode: the
    answers are then not compared with WordNet."""

    def __init__(
        self,
        config: GeneratorConfig,
        tagger,
        antonyms,
        ranker,
        realiser,
        checks,
        client: LLMClient,
        template: PromptTemplate,
        mode: str | None = None,
    ):
        super().__init__(config, tagger, antonyms, ranker, realiser, checks)
        self.mode = mode or config.pipeline
        if self.mode not in ("llm", "wordnet+llm"):
            raise ValueError(f"LLMPipeline mode must be llm or wordnet+llm, not {self.mode!r}")
        if self.mode == "wordnet+llm" and antonyms is None:
            raise ValueError("wordnet+llm needs the WordNet stages")
        self.client = client
        self.template = template
        self.compare = antonyms is not None and ranker is not None and realiser is not None
        self.stats = LLMGenerationStats(self.mode, self.describe_llm())
        self._word_order: dict[int, int] = {}

    def describe_llm(self) -> dict[str, Any]:
        return {
            "backend": self.client.backend,
            "model": self.client.model_identity,
            "prompt": self.template.id,
        }

    # -- building -------------------------------------------------------------------------------
    def _choices(self, pairs: Sequence[NLIPair]) -> list[WordChoice]:
        with self.timer.stage("tagging"):
            tagged = self.tagger.tag([p.hypothesis for p in pairs])
        if self.compare:
            return self.choose_words(pairs, tagged)
        cfg = self.config
        return [
            WordChoice(pair, sent, tok, "unavailable")
            for pair, sent in zip(pairs, tagged, strict=True)
            for tok in select_words(sent, cfg.pos, cfg.include_aux)
        ]

    def _build(self, pairs: Sequence[NLIPair]) -> tuple[list[TripleRecord], list[TripleRecord]]:
        """(candidates for the checks, records rejected by the answer check), both in word order."""
        counts = self.stats.counts
        slots: list[TripleRecord | None] = []  # one per word that yields a record, in word order
        jobs: list[tuple[int, WordChoice]] = []
        for choice in self._choices(pairs):
            counts["words_considered"] += 1
            raw_status = wordnet_status(choice)
            if self.mode == "wordnet+llm":
                if choice.record is not None:
                    counts["candidates_built"] += 1
                    slots.append(choice.record)
                    continue
                if raw_status not in FALLBACK_STATUSES:
                    counts[f"skipped_{choice.status}"] += 1
                    continue
                counts[f"llm_fallback_{raw_status}"] += 1
            jobs.append((len(slots), choice))
            slots.append(None)
        prompts = [
            replacement_prompt(
                self.template, c.pair.hypothesis, c.token.idx, c.token.idx + len(c.token.text)
            )
            for _, c in jobs
        ]
        with self.timer.stage("llm"):
            replies = self.client.complete_many(prompts) if prompts else []
        fatal = all_unreachable(replies)
        if fatal is not None:
            raise LLMError(f"the LLM cannot be used: {fatal.error}")
        answered = self.stats.counts["llm_prompted"] - self.stats.counts[f"llm_{REQUEST_FAILED}"]
        failed_all = none_answered(replies, answered)
        if failed_all is not None:
            raise LLMError(
                f"all {len(replies)} LLM requests failed and none has been answered in this run; "
                f"the first: {failed_all.error}"
            )
        failed: set[int] = set()
        for (slot, choice), prompt, reply in zip(jobs, prompts, replies, strict=True):
            rec = self._llm_record(choice, prompt, reply)
            slots[slot] = rec
            if rec.rejected_by is not None:
                failed.add(slot)
        self._word_order = {id(r): i for i, r in enumerate(slots)}
        built = [r for i, r in enumerate(slots) if r is not None and i not in failed]
        rejected = [slots[i] for i in sorted(failed)]
        return built, rejected

    def build_candidates(self, pairs: Sequence[NLIPair]) -> list[TripleRecord]:
        return self._build(pairs)[0]

    def _llm_record(self, choice: WordChoice, prompt: str, reply: LLMReply) -> TripleRecord:
        counts = self.stats.counts
        pair, tok = choice.pair, choice.token
        counts["llm_prompted"] += 1
        if reply.ok:
            verdict = verify_reply(reply.text, pair.hypothesis, tok.idx, tok.idx + len(tok.text))
            reason = verdict.reason
            counts["llm_prompt_tokens"] += reply.prompt_tokens
            counts["llm_completion_tokens"] += reply.completion_tokens
            counts["llm_request_ms"] += round(reply.seconds * 1000)
        else:
            verdict, reason = Verdict("unparseable"), REQUEST_FAILED
        counts[
            f"llm_verdict_{reason}" if reason != REQUEST_FAILED else f"llm_{REQUEST_FAILED}"
        ] += 1

        wordnet: dict[str, Any] = {"status": wordnet_status(choice)}
        if choice.record is not None:
            wordnet["antonym"] = choice.record.antonym
            wordnet["modified_hypothesis"] = choice.record.modified_hypothesis
        if verdict.passed:
            if choice.record is not None:
                same = same_as_wordnet(verdict.new_word, choice)
                wordnet["same"] = same
                counts["llm_wordnet_same" if same else "llm_wordnet_different"] += 1
            else:
                counts[f"llm_nowordnet_{wordnet_status(choice)}"] += 1

        modified = verdict.modified or verdict.answer or ""
        info: dict[str, Any] = {
            "backend": self.client.backend,
            "model": self.client.model_identity,
            "prompt_id": self.template.id,
            "reply": reply.text,
            "answer": verdict.answer,
            "verdict": reason,
            "tokens": {"prompt": reply.prompt_tokens, "completion": reply.completion_tokens},
            "wordnet": wordnet,
        }
        if reply.error:
            info["error"] = reply.error
        check = {"backend": self.client.backend, **verdict.to_dict()}
        if reason == REQUEST_FAILED:
            check["verdict"] = REQUEST_FAILED
        rec = word_record(
            pair,
            tok,
            modified,
            "llm",
            verdict.new_word or "",
            [{"antonym": verdict.new_word, "score": None}] if verdict.new_word else [],
            checks={CHECK_NAME: check},
            llm=info,
        )
        if verdict.passed:
            counts["candidates_built"] += 1
            counts["llm_candidates_built"] += 1
        else:
            rec.rejected_by, rec.reason = CHECK_NAME, reason
            counts["rejected_llm_answer"] += 1
        return rec

    # -- driving --------------------------------------------------------------------------------
    def process(self, pairs: Sequence[NLIPair]) -> BatchResult:
        counts = self.stats.counts
        counts["sentences_read"] += len(pairs)
        usable = [p for p in pairs if self.usable(p)]
        built, answer_rejects = self._build(usable)
        word_order = self._word_order
        accepted, check_rejects = self.apply_checks(built)
        for rec in accepted:
            if rec.pipeline == "llm":
                counts["llm_triples_accepted"] += 1
        for rec in check_rejects:
            if rec.pipeline == "llm":
                counts[f"llm_rejected_{rec.rejected_by}"] += 1
        rejected = sorted(answer_rejects + check_rejects, key=lambda r: word_order[id(r)])
        return BatchResult(len(pairs), accepted, rejected)
