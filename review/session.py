"""A review session: which triples are shown in which order, what the page shows of each, and the
actions (judge, skip, undo) that append to the log.

Orders (`--order`):
- random (default): a sample of `--sample N` triples drawn with `random.Random(seed).sample`, so
  the same run, size and seed always give the same items in the same order; the judged sample is
  an unbiased estimate of the run's precision (the card's figure);
- all: every triple, in file order;
- uncertain: least certain first: the triples closest to a learned decision boundary, so a
  judgement teaches the scorer most. The margin is |score - threshold| of the quality_model
  filter's record (checks.quality_model) where present, else of the acceptability check's
  (the CoLA or LLM score); triples with neither come last. Ties keep a seeded random order.
  Reading every record takes seconds on a 100,000-triple run, so the margins are cached too.
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

from transnli.review.errors import ReviewError
from transnli.review.index import LineIndex
from transnli.review.log import ERROR_TYPES, JudgementLog, Verdict, judgement_record

ORDERS = ("random", "all", "uncertain")
# Checks whose score against a threshold is the margin of the `uncertain` order, first found wins.
MARGIN_CHECKS = ("quality_model", "acceptability")
MARGINS = ".margins"  # the margins' cache, next to triples.jsonl (transnli.review.index)


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
        return self


def certainty_margin(record: dict[str, Any]) -> float | None:
    """How far the record's first scored check is from its threshold; None when none is."""
    checks = record.get("checks") or {}
    for name in MARGIN_CHECKS:
        check = checks.get(name) or {}
        score, threshold = check.get("score"), check.get("threshold")
        if isinstance(score, int | float) and isinstance(threshold, int | float):
            return abs(float(score) - float(threshold))
    return None


def review_order(index: LineIndex, settings: SessionSettings) -> list[int]:
    """The record numbers to show, in order (deterministic for the same file and settings)."""
    n = len(index)
    if settings.order == "all":
        return list(range(n))
    rng = random.Random(settings.seed)
    if settings.order == "random":
        return rng.sample(range(n), min(settings.sample, n))
    shuffled = rng.sample(range(n), n)
    rank = {i: r for r, i in enumerate(shuffled)}
    margins = index.cached(MARGINS, "d", lambda: array("d", _margins(index)))
    # No score (NaN) sorts last, in the seeded order (NaN itself never compares).
    missing = [math.isnan(m) for m in margins]
    return sorted(range(n), key=lambda i: (missing[i], 0.0 if missing[i] else margins[i], rank[i]))


def _margins(index: LineIndex) -> Iterator[float]:
    for rec in index.records():
        margin = certainty_margin(rec)
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
    handlers share one session."""

    def __init__(self, index: LineIndex, log: JudgementLog, settings: SessionSettings):
        self.index, self.log, self.settings = index, log, settings.validate()
        self.order = review_order(index, settings)
        self._lock = threading.Lock()

    def _annotator(self, annotator: str | None) -> str | None:
        return (annotator or "").strip() or self.settings.annotator

    def state(self, annotator: str | None = None) -> dict[str, Any]:
        """Progress and the next triple the annotator has not judged or skipped."""
        who = self._annotator(annotator)
        with self._lock:
            self.log.refresh()
            current = self.log.standing.current
            counts = {"good": 0, "bad": 0, "skip": 0}
            next_index = None
            for i in self.order:
                rec = current.get((i, who))
                if rec is None:
                    if next_index is None:
                        next_index = i
                    continue
                counts[{True: "good", False: "bad", None: "skip"}[rec.get("good")]] += 1
            last = self.log.standing.last_standing(who)
        return {
            "annotator": who,
            "order": self.settings.order,
            "total": len(self.order),
            "counts": counts,
            "triple": None
            if next_index is None
            else triple_view(self.index.record(next_index), next_index),
            "last": last,
            "error_types": ERROR_TYPES,
        }

    def judge(self, index: int, verdict: Verdict, annotator: str | None = None) -> dict[str, Any]:
        """Append the annotator's verdict on record `index`. Refused when it already has a
        standing one (judged meanwhile in another tab); the caller shows the state again."""
        who = self._annotator(annotator)
        verdict.check()
        if not (isinstance(index, int) and 0 <= index < len(self.index)):
            raise ReviewError(f"record {index!r} is not in {self.index.path}")
        record = self.index.record(index)
        with self._lock, self.log.locked():
            if (index, who) in self.log.standing.current:
                raise Conflict(f"record {index} was judged meanwhile (another tab?)")
            rec = judgement_record(record, index, verdict, who, self.settings.order)
            self.log.append(rec)
        return rec

    def undo(self, annotator: str | None = None) -> dict[str, Any] | None:
        """Take back the annotator's most recent standing verdict; None when there is none."""
        who = self._annotator(annotator)
        with self._lock, self.log.locked():
            last = self.log.standing.last_standing(who)
            if last is None:
                return None
            self.log.append({**last, "undone": True})
        return last


class Conflict(ReviewError):
    """An action that another tab made stale; the page refetches the state."""
