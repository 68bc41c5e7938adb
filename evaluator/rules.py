"""The transitive rules as pure functions over labels (no I/O, no models).

Notation: for a triple (P, H, H') a model M gives four labels,
ph = M(P,H), hh2 = M(H,H'), h2h = M(H',H), ph2 = M(P,H').
(H,H') is *mutual* E (or C) when hh2 = h2h = E (or C). The four rules of the paper (Li et al. 2019):

| rule  | name    | antecedent            | must hold  | violation  |
|-------|---------|-----------------------|------------|------------|
| rule1 | E&E->E  | ph = E and mutual E   | ph2 = E    | ph2 != E   |
| rule2 | E&C->C  | ph = E and mutual C   | ph2 = C    | ph2 != C   |
| rule3 | N&E->¬C | ph = N and mutual E   | ph2 != C   | ph2 = C    |
| rule4 | N&C->¬E | ph = N and mutual C   | ph2 != E   | ph2 = E    |

At most one antecedent holds for a triple. Beyond the paper (reported separately):
- substitution: mutual E means H and H' are interchangeable, so ph2 should equal ph;
- contradiction symmetry: hh2 = C but h2h != C (contradiction is a symmetric relation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .labels import LABELS, C, E, N


@dataclass(frozen=True)
class Rule:
    key: str  # "rule1"
    name: str  # "E&E->E"
    ph: str  # label M(P,H) must have
    mutual: str  # E or C: the mutual label (H,H') must have
    violated_by: Callable[[str], bool]  # ph2 -> violation?
    description: str


RULES: tuple[Rule, ...] = (
    Rule("rule1", "E&E->E", E, E, lambda ph2: ph2 != E, "M(P,H)=E and mutual E => M(P,H')=E"),
    Rule("rule2", "E&C->C", E, C, lambda ph2: ph2 != C, "M(P,H)=E and mutual C => M(P,H')=C"),
    Rule("rule3", "N&E->¬C", N, E, lambda ph2: ph2 == C, "M(P,H)=N and mutual E => M(P,H')!=C"),
    Rule("rule4", "N&C->¬E", N, C, lambda ph2: ph2 == E, "M(P,H)=N and mutual C => M(P,H')!=E"),
)
RULES_BY_KEY = {r.key: r for r in RULES}
# The beyond-paper checks (`substitution`, `contradiction_symmetry` below), in the order the
# outputs list them.
EXTRA_KEYS = ("substitution", "contradiction_symmetry")


@dataclass(frozen=True)
class RuleOutcome:
    rule: str | None  # key of the rule whose antecedent holds, or None
    violated: bool | None  # None when no rule applies


def _check(*labels: str | None) -> None:
    for label in labels:
        if label is not None and label not in LABELS:
            raise ValueError(f"{label!r} is not a canonical label ({', '.join(LABELS)})")


def mutual(hh2: str, h2h: str) -> str | None:
    """E or C when (H,H') is mutual entailment or mutual contradiction, else None."""
    _check(hh2, h2h)
    return hh2 if hh2 == h2h and hh2 in (E, C) else None


def needs_ph2(hh2: str, h2h: str) -> bool:
    """Whether any rule (paper's or extra) can use M(P,H') for this triple."""
    return mutual(hh2, h2h) is not None


def applicable_rule(ph: str, hh2: str, h2h: str) -> Rule | None:
    """The rule whose antecedent holds (at most one), or None."""
    _check(ph)
    m = mutual(hh2, h2h)
    if m is None:
        return None
    for rule in RULES:
        if rule.ph == ph and rule.mutual == m:
            return rule
    return None


def evaluate_triple(ph: str, hh2: str, h2h: str, ph2: str | None) -> RuleOutcome:
    """Which rule applies to one triple and whether the model violates it.

    `ph2` may be None (not computed) only when no rule applies.
    """
    _check(ph2)
    rule = applicable_rule(ph, hh2, h2h)
    if rule is None:
        return RuleOutcome(None, None)
    if ph2 is None:
        raise ValueError(f"{rule.key} applies but M(P,H') was not computed")
    return RuleOutcome(rule.key, bool(rule.violated_by(ph2)))


def substitution(ph: str, hh2: str, h2h: str, ph2: str | None) -> bool | None:
    """Beyond the paper. Mutual E: H and H' are interchangeable, so M(P,H') must equal M(P,H).
    None when (H,H') is not mutual E, else whether the rule is violated."""
    _check(ph, ph2)
    if mutual(hh2, h2h) != E:
        return None
    if ph2 is None:
        raise ValueError("substitution applies but M(P,H') was not computed")
    return ph2 != ph


def contradiction_symmetry(hh2: str, h2h: str) -> bool | None:
    """Beyond the paper. Contradiction is symmetric: when M(H,H') = C, M(H',H) must be C too.
    None when M(H,H') != C, else whether it is violated."""
    _check(hh2, h2h)
    if hh2 != C:
        return None
    return h2h != C
