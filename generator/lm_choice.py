"""The language model chooses among candidates: within a word, and within a sentence.

Within a word (`lm_antonyms` = N > 1): the WordNet pipeline realises up to N of a word's antonyms
(the vector ranker's best N, in its order), the filters judge each, and among the survivors the
one the language model scores best is kept: the highest d = log p(H') - log p(H), ties going to
the better vector rank. The others go to the rejected file (rejected_by "lm_choice"). On the
judged sets d chooses no better than the vector ranker, but a word whose first antonym a filter
rejects can still give a triple (docs/generation.md, "The language model chooses").

Within a sentence (`max_per_sentence` = K > 0): of the triples a sentence has after the checks,
the K with the highest d are kept (ties: the earlier word), the others are rejected
("max_per_sentence").

Both rank by the acceptability check's own measure, so both need a language-model check: with
`acceptability = "lm"` the measure is d, with `acceptability = "judge"` the judge's probability
that H' is good (p_good). A choice's score is the check's score (the same model and pass, served
by the model's score cache). Every number is on the record: `checks.lm_choice` = {"backend",
"passed", "chosen", "scored": [{"antonym", MEASURE}, ...] (in vector-rank order)},
`checks.max_per_sentence` = {"backend", "passed", MEASURE, "rank", "kept"}, MEASURE being "d" or
"p_good".
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from transnli.common.lm.settings import LMError
from transnli.generator.checks.base import BackendUnavailable
from transnli.generator.record import TripleRecord

CHOICE = "lm_choice"
PER_SENTENCE = "max_per_sentence"
T = TypeVar("T")


def runs(items: Sequence[T], key: Callable[[T], Hashable]) -> list[list[T]]:
    """Consecutive items with the same key, as groups, in order."""
    groups: list[list[T]] = []
    for item in items:
        if groups and key(groups[-1][-1]) == key(item):
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def best_index(scores: Sequence[float]) -> int:
    """The highest score; the earliest (the better vector rank, the earlier word) among equals."""
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def choice_entries(
    antonyms: Sequence[str], scores: Sequence[float], chooser: Any
) -> list[dict[str, Any]]:
    """`checks.lm_choice` of each of a word's candidates (in the same order)."""
    best = best_index(scores)
    scored = [{"antonym": a, chooser.measure: x} for a, x in zip(antonyms, scores, strict=True)]
    return [
        {
            "backend": chooser.backend,
            "passed": i == best,
            "chosen": antonyms[best],
            "scored": scored,
        }
        for i in range(len(antonyms))
    ]


def sentence_key(rec: TripleRecord) -> tuple:
    return (rec.dataset, rec.split, rec.source_id, rec.premise, rec.hypothesis)


def sentence_groups(records: Sequence[TripleRecord]) -> list[list[TripleRecord]]:
    """The records of each sentence, in order. A sentence's records come together, in word order;
    a new group starts where the sentence changes or the word order restarts (the same pair
    repeated in the input)."""
    groups: list[list[TripleRecord]] = []
    for rec in records:
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and sentence_key(last) == sentence_key(rec)
            and last.word_index < rec.word_index
        ):
            groups[-1].append(rec)
        else:
            groups.append([rec])
    return groups


def record_score(rec: TripleRecord, measure: str) -> float:
    """The acceptability check's `measure` (d or p_good) of a record that passed it."""
    return float(rec.checks["acceptability"][measure])


def limit_per_sentence(
    records: Sequence[TripleRecord], k: int, backend: str = "lm", measure: str = "d"
) -> tuple[list[TripleRecord], list[TripleRecord]]:
    """(kept, dropped), each in input order: the `k` records of every sentence with the highest
    `measure` (what the acceptability check `backend` recorded) are kept. Every record gets its
    `checks.max_per_sentence` entry; a dropped one its rejection."""
    kept_ids: set[int] = set()
    for group in sentence_groups(records):
        scores = [record_score(r, measure) for r in group]
        order = sorted(range(len(group)), key=lambda i: (-scores[i], i))
        for rank, i in enumerate(order, start=1):
            rec = group[i]
            passed = rank <= k
            rec.checks[PER_SENTENCE] = {
                "backend": backend,
                "passed": passed,
                measure: scores[i],
                "rank": rank,
                "kept": k,
            }
            if passed:
                kept_ids.add(id(rec))
            else:
                rec.rejected_by = PER_SENTENCE
                rec.reason = (
                    f"the sentence keeps its {k} best by {measure}; this one is number {rank}"
                )
    kept = [r for r in records if id(r) in kept_ids]
    dropped = [r for r in records if id(r) not in kept_ids]
    return kept, dropped


def pair_scores(chooser, records: Sequence[TripleRecord]) -> list[float]:
    """The chooser's measure of each record's (H, H'); a model failure is one line."""
    try:
        return chooser.rank_scores([(r.hypothesis, r.modified_hypothesis) for r in records])
    except LMError as exc:
        raise BackendUnavailable(f"lm_antonyms: {exc}") from exc


def language_model_check(checks: Sequence[Any]):
    """The acceptability check among `checks` that ranks candidates (`rank_scores`), or None."""
    for check in checks:
        if getattr(check, "name", None) == "acceptability" and hasattr(check, "rank_scores"):
            return check
    return None
