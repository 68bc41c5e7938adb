"""A review session: which triples are shown in which order, what the page shows of each, and the
actions (judge, skip, undo) that append to the log.

Orders (`--order`):
- random (default): a sample of `--sample N` triples drawn with `random.Random(seed).sample`, so
  the same run, size and seed always give the same items in the same order; the judged sample is
  an unbiased estimate of the run's precision (the card's figure);
- all: every triple, in file order;
- uncertain: least certain first: the triples whose score lies closest to its check's threshold
  (the judge's p_good, else the quality scorer's, CoLA's or the language model's score:
  transnli.review.uncertainty), so a judgement lands where the checks are least sure; triples no
  check scored come last. Ties keep a seeded random order. Reading every record takes seconds
  on a 100,000-triple run, so the distances are cached too.
"""

from __future__ import annotations

import json
import math
import random
import threading
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from transnli.generator.run_folder import TRIPLES, UNCERTAINTY_CACHE
from transnli.review.errors import ReviewError
from transnli.review.index import LineIndex
from transnli.review.integrity import ORDERS, RANDOM, TripleKey, random_sample, triple_problem
from transnli.review.log import (
    ERROR_TYPES,
    JudgementLog,
    SampleSpec,
    Verdict,
    check_annotator,
    judgement_record,
    triple_digest,
    utc_now,
)
from transnli.review.uncertainty import uncertainty

# The `uncertain` order's distances, cached next to triples.jsonl (transnli.review.index). Not
# the `.margins` of earlier versions, which read another field and would be taken as current.
MARGINS = UNCERTAINTY_CACHE.removeprefix(TRIPLES)


@dataclass(frozen=True)
class SessionSettings:
    order: str = "random"
    sample: int = 100
    seed: int = 0
    annotator: str | None = None

    def validate(self) -> SessionSettings:
        if self.order not in ORDERS:
            raise ReviewError(f"--order {self.order!r} is not one of {', '.join(ORDERS)}")
        if self.sample < 1:
            raise ReviewError(f"--sample must be at least 1 (got {self.sample})")
        try:
            check_annotator(self.annotator)
        except ReviewError as e:
            raise ReviewError(f"--annotator: {e}") from e
        return self

    def spec(self, n: int) -> SampleSpec:
        """What each judgement of this session records about its order."""
        size = self.sample if self.order == RANDOM else max(n, 1)
        return SampleSpec(self.order, self.seed, size, n)

    def describe(self) -> str:
        if self.order == RANDOM:
            return f"the random sample of {self.sample}, seed {self.seed},"
        return f"the {self.order} order"


def review_order(index: LineIndex, settings: SessionSettings) -> list[int]:
    """The record numbers to show, in order (deterministic for the same file and settings)."""
    n = len(index)
    if settings.order == "all":
        return list(range(n))
    if settings.order == RANDOM:
        return random_sample(n, settings.seed, settings.sample)
    rng = random.Random(settings.seed)
    shuffled = rng.sample(range(n), n)
    rank = {i: r for r, i in enumerate(shuffled)}
    margins = index.cached(MARGINS, "d", lambda: array("d", _margins(index)))
    # No score (NaN) sorts last, in the seeded order (NaN itself never compares).
    missing = [math.isnan(m) for m in margins]
    return sorted(range(n), key=lambda i: (missing[i], 0.0 if missing[i] else margins[i], rank[i]))


def _margins(index: LineIndex) -> Iterator[float]:
    for rec in index.records():
        margin = uncertainty(rec)
        yield math.nan if margin is None else margin


def highlight_spans(record: dict[str, Any]) -> dict[str, list[int] | None]:
    """Character spans of the replaced word in H and of its replacement in H' (None when the
    record's offsets do not match its sentences)."""
    h, m = record.get("hypothesis") or "", record.get("modified_hypothesis") or ""
    start, end = record.get("char_start", -1), record.get("char_end", -1)
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(h)):
        return {"hypothesis": None, "modified_hypothesis": None}
    m_end = end + len(m) - len(h)
    if m_end <= start or m[:start] != h[:start] or m[m_end:] != h[end:]:
        return {"hypothesis": [start, end], "modified_hypothesis": None}
    return {"hypothesis": [start, end], "modified_hypothesis": [start, m_end]}


def check_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Each check's verdict and its scalar evidence (scores, thresholds, counts), for the page."""
    rows = []
    for name, check in (record.get("checks") or {}).items():
        if not isinstance(check, dict):
            continue
        evidence = {
            k: v
            for k, v in check.items()
            if k not in ("backend", "passed") and isinstance(v, str | int | float | bool)
        }
        rows.append(
            {
                "name": name,
                "backend": check.get("backend"),
                "passed": check.get("passed"),
                "evidence": evidence,
            }
        )
    return rows


def triple_view(record: dict[str, Any], index: int) -> dict[str, Any]:
    """What the page shows of one triple."""
    llm = record.get("llm")
    return {
        "index": index,
        "digest": triple_digest(record),  # sent back with the verdict: what the annotator saw
        "id": record.get("id", ""),
        "dataset": record.get("dataset", ""),
        "premise": record.get("premise", ""),
        "hypothesis": record.get("hypothesis", ""),
        "modified_hypothesis": record.get("modified_hypothesis", ""),
        "word": record.get("word", ""),
        "antonym": record.get("antonym", ""),
        "pos": record.get("pos", ""),
        "tag": record.get("tag", ""),
        "gold_label": record.get("gold_label"),
        "spans": highlight_spans(record),
        "candidates": record.get("candidates") or [],
        "checks": check_rows(record),
        "llm": json.dumps(llm, ensure_ascii=False) if llm else None,
    }


class ReviewSession:
    """One run under review: the order, the log, and the actions. Thread-safe: the server's
    handlers share one session. A judgement stands for a triple only while the triple is the one
    it judged (transnli.review.integrity): a triple that changed since is shown again."""

    def __init__(self, index: LineIndex, log: JudgementLog, settings: SessionSettings):
        self.index, self.log, self.settings = index, log, settings.validate()
        self.order = review_order(index, settings)
        self.members = frozenset(self.order)
        self._spec = settings.spec(len(index))
        self._keys: dict[int, TripleKey] = {}  # of the records read so far, by index
        self._keys_version = index.version  # the keys hold while the file is not indexed again
        self._lock = threading.Lock()

    def _annotator(self, annotator: Any) -> str | None:
        return check_annotator(annotator) or self.settings.annotator

    def _follow(self) -> None:
        """Take in a triples.jsonl that changed since it was read (keys read before are void)."""
        self.index.follow()
        if self._keys_version != self.index.version:
            self._keys, self._keys_version = {}, self.index.version

    def _key(self, index: int) -> TripleKey:
        if index not in self._keys:
            self._keys[index] = TripleKey.of(self.index.record(index))
        return self._keys[index]

    def _standing(self, index: int, who: str | None) -> dict[str, Any] | None:
        """The annotator's standing line about record `index`, if it judged this very triple."""
        rec = self.log.standing.current.get((index, who))
        if rec is None or triple_problem(rec, self._key(index), len(self.index)):
            return None
        return rec

    def state(self, annotator: Any = None) -> dict[str, Any]:
        """Progress and the next triple the annotator has not judged or skipped."""
        who = self._annotator(annotator)
        with self._lock:
            self._follow()
            self.log.refresh()
            current = self.log.standing.current
            counts = {"good": 0, "bad": 0, "skip": 0}
            next_index, stale = None, 0
            for i in self.order:
                rec = self._standing(i, who)
                if rec is None:
                    stale += (i, who) in current
                    if next_index is None:
                        next_index = i
                    continue
                counts[{True: "good", False: "bad", None: "skip"}[rec.get("good")]] += 1
            last = self.log.standing.last_standing(who)
            triple = None if next_index is None else self.index.record(next_index)
        return {
            "annotator": who,
            "order": self.settings.order,
            "total": len(self.order),
            "counts": counts,
            "stale": stale,
            "triple": None if triple is None else triple_view(triple, next_index),
            "last": last,
            "error_types": ERROR_TYPES,
        }

    def judge(
        self, index: Any, verdict: Verdict, annotator: Any = None, digest: str | None = None
    ) -> dict[str, Any]:
        """Append the annotator's verdict on record `index`, one of this session's order.
        Refused when it already has a standing one (judged meanwhile in another tab), or when
        `digest` (what the page showed; the HTTP API requires it) is not the triple's digest now
        (triples.jsonl changed under the page); the caller shows the state again."""
        who = self._annotator(annotator)
        verdict.check()
        if type(index) is not int:
            raise ReviewError(f"index must be an integer (got {json.dumps(index)[:40]})")
        if index not in self.members:
            raise ReviewError(
                f"record {index} is not in this session's order ({self.settings.describe()} of "
                f"{self.index.path})"
            )
        with self._lock, self.log.locked():
            self._follow()
            if self._standing(index, who) is not None:
                raise Conflict(f"record {index} was judged meanwhile (another tab?)", who)
            triple = self.index.record(index)
            if digest is not None and digest != triple_digest(triple):
                raise Conflict(
                    f"record {index} changed in triples.jsonl since the page showed it: not saved",
                    who,
                )
            rec = judgement_record(triple, index, verdict, who, self._spec)
            self.log.append(rec)
        return rec

    def undo(self, annotator: Any = None) -> dict[str, Any] | None:
        """Take back the annotator's most recent standing verdict; None when there is none."""
        who = self._annotator(annotator)
        with self._lock, self.log.locked():
            last = self.log.standing.last_standing(who)
            if last is None:
                return None
            self.log.append({**last, "undone": True, "time": utc_now()})
        return last


class Conflict(ReviewError):
    """An action that another tab made stale; the page refetches the state (of `annotator`)."""

    def __init__(self, message: str, annotator: str | None = None):
        super().__init__(message)
        self.annotator = annotator
