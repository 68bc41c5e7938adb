"""REPAIR for NLI: the fewest label changes that make a family's label graph consistent.

Pure (no I/O). Exact, as a 0/1 integer program solved by scipy's HiGHS (`scipy.optimize.milp`):
one binary x[pair, label] per ordered pair and label, exactly one label per pair, and

- for every chain a -> b -> c and rule: x[ab, ph] + x[bc, m] + x[cb, m] - sum(x[ac, allowed]) <= 2
  (the antecedent cannot hold unless M(a,c) is a label the rule allows);
- for every H¬ (when the family has one): (H,H¬) and (H¬,H) are C, and M(P,H¬) is M(P,H)
  flipped (E <-> C, N stays N);
- pinned labels (e.g. the gold label of (P,H)) are fixed.

The objective counts the model's labels that change; pairs the model left unlabelled are free.
The program grows with n^3 chains, so families are limited to MAX_REPAIR_MEMBERS members.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations

from .labels import FLIP, LABELS, C, Graph
from .rules import RULES

MAX_REPAIR_MEMBERS = 10  # 90 ordered pairs, 2,880 chain constraints: well under a second
_ALLOWED = {r.key: [label for label in LABELS if not r.violated_by(label)] for r in RULES}


class RepairLimitError(ValueError):
    """A family too large for the exact repair."""


@dataclass(frozen=True)
class Repair:
    graph: list[list[str | None]]  # every off-diagonal pair labelled
    changed: list[tuple[int, int]]  # pairs whose model label was changed, in row order


def consistent_complete(
    graph: Graph, negations: Sequence[int] = (), p: int = 0, h: int = 1
) -> bool:
    """Whether a fully labelled graph satisfies every constraint the repair enforces (used to
    check a repair, and by tests as the brute-force oracle)."""
    n = len(graph)
    for a, b, c in permutations(range(n), 3):
        for r in RULES:
            if (
                graph[a][b] == r.ph
                and graph[b][c] == r.mutual == graph[c][b]
                and r.violated_by(graph[a][c])
            ):
                return False
    for q in negations:
        if graph[h][q] != C or graph[q][h] != C or graph[p][q] != FLIP[graph[p][h]]:
            return False
    return True


def repair(
    graph: Graph,
    negations: Sequence[int] = (),
    pinned: Mapping[tuple[int, int], str] | None = None,
    p: int = 0,
    h: int = 1,
    max_members: int | None = MAX_REPAIR_MEMBERS,
) -> Repair:
    """The minimal relabelling of `graph` (member indices: `p` the premise, `h` the hypothesis,
    `negations` the H¬ members). Raises RepairLimitError beyond `max_members` (None: no limit),
    ValueError when the pinned labels leave no consistent labelling."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    n = len(graph)
    if max_members is not None and n > max_members:
        raise RepairLimitError(
            f"a family of {n} members is beyond the exact repair's limit of {max_members} members"
        )
    pairs = [(a, b) for a, b in permutations(range(n), 2)]
    pos = {pair: i for i, pair in enumerate(pairs)}
    lab = {label: i for i, label in enumerate(LABELS)}

    def var(pair, label):
        return 3 * pos[pair] + lab[label]

    nvar = 3 * len(pairs)
    cost = np.zeros(nvar)
    for pair in pairs:
        observed = graph[pair[0]][pair[1]]
        if observed is not None:
            cost[var(pair, observed)] = -1.0  # keeping a label saves one change
    data, row_ix, col_ix, lo, hi = _constraints(n, pairs, var, negations, pinned or {}, p, h)
    matrix = coo_matrix((data, (row_ix, col_ix)), shape=(len(lo), nvar)).tocsr()
    res = milp(
        cost,
        constraints=[LinearConstraint(matrix, lo, hi)],
        integrality=np.ones(nvar),
        bounds=Bounds(0, 1),
    )
    if res.status != 0 or res.x is None:
        raise ValueError(f"no consistent labelling exists under the pinned labels ({res.message})")
    x = np.round(res.x).astype(int)
    out: list[list[str | None]] = [[None] * n for _ in range(n)]
    changed = []
    for pair in pairs:
        (label,) = [label for label in LABELS if x[var(pair, label)] == 1]
        out[pair[0]][pair[1]] = label
        observed = graph[pair[0]][pair[1]]
        if observed is not None and observed != label:
            changed.append(pair)
    return Repair(out, changed)


def _constraints(n, pairs, var, negations, pinned, p, h):
    """The program's rows as sparse coordinates (data, row, column) and bounds (lo, hi): one label
    per pair, the rules over every chain, the negations, the pinned labels."""
    import numpy as np

    # the constraint matrix is sparse (at most 6 entries a row): kept as coordinates
    data: list[float] = []
    row_ix: list[int] = []
    col_ix: list[int] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(coeffs: dict[int, float], lower: float, upper: float):
        for i, v in coeffs.items():
            data.append(v)
            row_ix.append(len(lo))
            col_ix.append(i)
        lo.append(lower)
        hi.append(upper)

    for pair in pairs:
        add({var(pair, label): 1.0 for label in LABELS}, 1, 1)
    for a, b, c in permutations(range(n), 3):
        for r in RULES:
            coeffs = {
                var((a, b), r.ph): 1.0,
                var((b, c), r.mutual): 1.0,
                var((c, b), r.mutual): 1.0,
            }
            for label in _ALLOWED[r.key]:
                coeffs[var((a, c), label)] = -1.0
            add(coeffs, -np.inf, 2)
    for q in negations:
        add({var((h, q), C): 1.0}, 1, 1)
        add({var((q, h), C): 1.0}, 1, 1)
        for label in LABELS:
            add({var((p, q), FLIP[label]): 1.0, var((p, h), label): -1.0}, 0, 0)
    for pair, label in pinned.items():
        add({var(pair, label): 1.0}, 1, 1)
    return data, row_ix, col_ix, lo, hi
