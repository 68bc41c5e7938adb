"""How uncertain a check was about a triple, for the review's `uncertain` order: one entry per
check that records a score against a threshold, read from the record's `checks`.

Each scoring check keeps its score and its threshold on the record (generator/checks/,
generator/filters/quality_model.py); a triple's uncertainty is how far the score lies from the
threshold, |score - threshold|, in the check's own units: a probability for the judges (p_good),
CoLA and the quality scorer, nats for the language model's d. The first entry of `SCORED` that a
record has decides, so a run is ordered by one measure (the checks of a run are the same on every
triple). The judges come first: the judge is the default preset's deciding check, and their
probabilities are calibrated, so |p_good - threshold| is the closest thing to "how likely a
person disagrees".
Checks that record no score (harper, link-grammar's counts, the LLM judge's yes/no answers) have
no entry: their triples come last in the order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scored:
    """A check that records `score` against `threshold` on checks[check] when its backend is
    `backend`."""

    check: str  # the key of the record's `checks`
    backend: str  # the check's backend, as the record names it
    score: str  # the field holding the score (the threshold is always `threshold`)

    def uncertainty(self, checks: dict[str, Any]) -> float | None:
        """|score - threshold| of this check's entry, None where the record has none."""
        entry = checks.get(self.check)
        if not isinstance(entry, dict) or entry.get("backend") != self.backend:
            return None
        score, threshold = entry.get(self.score), entry.get("threshold")
        if not (_number(score) and _number(threshold)):
            return None
        return abs(float(score) - float(threshold))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# In order of preference (see the module's docstring).
SCORED: tuple[Scored, ...] = (
    Scored("acceptability", "judge", "p_good"),
    Scored("acceptability", "pair-judge", "p_good"),
    Scored("quality_model", "rules", "score"),
    Scored("acceptability", "cola", "score"),
    Scored("acceptability", "lm", "d"),
)


def uncertainty(record: dict[str, Any]) -> float | None:
    """How far the record's first scored check is from its threshold (smaller: less certain);
    None when no check of `SCORED` scored it."""
    checks = record.get("checks")
    if not isinstance(checks, dict):
        return None
    for scored in SCORED:
        found = scored.uncertainty(checks)
        if found is not None:
            return found
    return None
