"""No-knowledge alarms (Corrada-Emmanuel, "the logic of unsupervised evaluation"), pure functions.

N judges label the same Q items with R labels. All we observe is each judge's label counts
(R_1 .. R_R), the M = 1 summaries. An *answer key summary* is a point (Q_1 .. Q_R) of the integer
simplex sum Q_i = Q: how many items truly carry each label. At a fixed key, a judge's possible
evaluations are the integer confusion matrices c (rows: true label, columns: the judge's label)
with row sums Q_i and column sums R_j; its accuracy on label i is c_ii / Q_i.

Everything here is exact (integers and Fractions); floats appear only where a caller asks.

Results (proved in docs/alarms.md):

1. One judge, one key. The best weakest-label accuracy is  min over i with Q_i > 0 of
   min(1, R_i / Q_i).  Every diagonal can reach min(Q_i, R_i) *at once*: put d_i = min(Q_i, R_i)
   on the diagonal; what is left of row i (Q_i - d_i) and of column i (R_i - d_i) is zero for at
   least one of the two, so the leftovers (equal totals) fill off-diagonal cells only (north-west
   corner rule), and no c_ii can exceed min(Q_i, R_i) (it is bounded by its row and its column).
   So the labels do not compete at M = 1, and no LP is needed.
2. All judges, one key (the paper's product space of M = 1 sets): the judges are independent, so
   the curve value is  f(Q) = min_i min(1, m_i / Q_i)  with  m_i = min over judges of R_i.
3. theta* = max over keys of f(Q). f(Q) >= t  iff  Q_i <= floor(m_i / t) for every i, so
   theta* = max { t : sum_i floor(m_i / t) >= Q }  (capped at 1): the Q-th largest of the numbers
   m_i / q (q = 1, 2, ...), the D'Hondt quotient. It lies between sum(m)/(Q+R) and sum(m)/Q, so
   only about R quotients per label need checking: O(R^2) work whatever Q is (Q = 10^6 included).
   Integers are never rounded: the key, the matrices and theta* are exact.

Convention: a label with Q_i = 0 has no items, so "at least theta of its items are labelled
correctly" holds vacuously; it constrains nothing (as if its accuracy were 1). The paper's axioms
likewise only constrain labels that occur.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

Counts = tuple[int, ...]


class AlarmInputError(ValueError):
    """Counts that describe no test (negative, different totals, a single label...)."""


# --------------------------------------------------------------------------- validation
def check_judges(judges: Sequence[Sequence[int]]) -> tuple[list[Counts], int, int]:
    """Validate N judges' label counts; returns (counts, Q, R)."""
    if not judges:
        raise AlarmInputError("no judge given")
    out = [tuple(j) for j in judges]
    R = len(out[0])
    if R < 2:
        raise AlarmInputError(f"need at least 2 labels, got {R}")
    for k, c in enumerate(out):
        if len(c) != R:
            raise AlarmInputError(f"judge {k} gives {len(c)} label counts, judge 0 gives {R}")
        if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in c):
            raise AlarmInputError(f"judge {k}: counts must be non-negative integers, got {list(c)}")
    Q = sum(out[0])
    for k, c in enumerate(out):
        if sum(c) != Q:
            raise AlarmInputError(
                f"judge {k} labels {sum(c)} items, judge 0 labels {Q}: the judges "
                "must label the same items"
            )
    if Q < 1:
        raise AlarmInputError("the judges label no item")
    return out, Q, R


def check_key(key: Sequence[int], Q: int, R: int) -> Counts:
    key = tuple(key)
    if len(key) != R or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in key):
        raise AlarmInputError(f"answer key summary {list(key)} is not {R} non-negative integers")
    if sum(key) != Q:
        raise AlarmInputError(f"answer key summary {list(key)} sums to {sum(key)}, not Q = {Q}")
    return key


# --------------------------------------------------------------------------- one judge, one key
def best_weakest_accuracy(counts: Sequence[int], key: Sequence[int]) -> Fraction:
    """Max over the judge's possible confusion matrices at `key` of its weakest per-label accuracy
    (labels with Q_i = 0 ignored): min_i min(1, R_i / Q_i). Closed form, see the module doc."""
    (counts,), Q, R = check_judges([counts])
    key = check_key(key, Q, R)
    return min(
        (Fraction(min(r, q), q) for r, q in zip(counts, key, strict=True) if q > 0),
        default=Fraction(1),
    )


def witness_matrix(counts: Sequence[int], key: Sequence[int]) -> list[list[int]]:
    """An integer confusion matrix (rows: true label, columns: judge's label) with row sums `key`
    and column sums `counts` whose diagonal is min(Q_i, R_i) everywhere: it attains
    best_weakest_accuracy on every label at once."""
    (counts,), Q, R = check_judges([counts])
    key = check_key(key, Q, R)
    c = [[0] * R for _ in range(R)]
    rows, cols = [], []
    for i in range(R):
        c[i][i] = min(key[i], counts[i])
        rows.append(key[i] - c[i][i])
        cols.append(counts[i] - c[i][i])
    # North-west corner fill of the leftovers: row i and column i are never both left over,
    # so nothing lands on the diagonal.
    i = j = 0
    while i < R and j < R:
        if rows[i] == 0:
            i += 1
            continue
        if cols[j] == 0:
            j += 1
            continue
        x = min(rows[i], cols[j])
        c[i][j] += x
        rows[i] -= x
        cols[j] -= x
    return c


def per_label_accuracy(matrix: Sequence[Sequence[int]]) -> list[Fraction | None]:
    """c_ii / Q_i per label; None for a label with no item."""
    return [Fraction(row[i], sum(row)) if sum(row) else None for i, row in enumerate(matrix)]


def confusion_matrices(counts: Sequence[int], key: Sequence[int]) -> Iterator[list[list[int]]]:
    """Every integer confusion matrix with row sums `key` and column sums `counts` (brute force,
    for tests and small cases only: the number grows like Q^((R-1)^2))."""
    R = len(key)

    def rows(i: int, left: list[int]):
        if i == R - 1:
            if sum(left) == key[i]:
                yield [list(left)]
            return
        for row in _compositions(key[i], left):
            rest = [a - b for a, b in zip(left, row, strict=True)]
            for tail in rows(i + 1, rest):
                yield [row, *tail]

    yield from rows(0, list(counts))


def _compositions(total: int, caps: Sequence[int]) -> Iterator[list[int]]:
    """All non-negative integer vectors x with sum total and x_j <= caps[j]."""
    if len(caps) == 1:
        if total <= caps[0]:
            yield [total]
        return
    rest_cap = sum(caps[1:])
    for x in range(max(0, total - rest_cap), min(total, caps[0]) + 1):
        for tail in _compositions(total - x, caps[1:]):
            yield [x, *tail]


def best_weakest_accuracy_brute(counts: Sequence[int], key: Sequence[int]) -> Fraction | None:
    """best_weakest_accuracy by enumerating every confusion matrix (None if there is none)."""
    best = None
    for m in confusion_matrices(counts, key):
        acc = min((a for a in per_label_accuracy(m) if a is not None), default=Fraction(1))
        best = acc if best is None or acc > best else best
    return best


# --------------------------------------------------------------------------- all judges, all keys
def label_minima(judges: Sequence[Sequence[int]]) -> Counts:
    """m_i = min over judges of R_i: the only thing the M = 1 alarm depends on."""
    judges, _, _ = check_judges(judges)
    return tuple(min(c) for c in zip(*judges, strict=True))


def curve_value(judges: Sequence[Sequence[int]], key: Sequence[int]) -> Fraction:
    """f(key): the largest t such that, at this answer key, every judge can be at least t on every
    label (min over judges of best_weakest_accuracy)."""
    return min(best_weakest_accuracy(c, key) for c in judges)


def simplex_points(Q: int, R: int) -> Iterator[Counts]:
    """Every answer key summary: non-negative integer R-vectors summing to Q (lexicographic)."""
    if R == 1:
        yield (Q,)
        return
    for first in range(Q + 1):
        for rest in simplex_points(Q - first, R - 1):
            yield (first, *rest)


def n_keys(Q: int, R: int) -> int:
    return math.comb(Q + R - 1, R - 1)


def keys_at_least(judges: Sequence[Sequence[int]], theta: Fraction | float | int) -> int:
    """How many answer key summaries have f(key) >= theta, exactly: Q_i <= floor(m_i / theta) for
    every i, counted by inclusion-exclusion over the labels whose bound is broken."""
    judges, Q, R = check_judges(judges)
    theta = Fraction(theta)
    if theta <= 0:
        return n_keys(Q, R)
    if theta > 1:
        return 0
    caps = [math.floor(Fraction(m) / theta) for m in label_minima(judges)]
    total = 0
    for size in range(R + 1):
        for subset in itertools.combinations(range(R), size):
            left = Q - sum(caps[i] + 1 for i in subset)
            if left >= 0:
                total += (-1) ** size * math.comb(left + R - 1, R - 1)
    return total


@dataclass(frozen=True)
class Alarm:
    """theta* and the answer key that attains it."""

    theta: Fraction  # the largest threshold every judge can meet on every label at one key
    key: Counts  # an answer key summary where f(key) = theta
    Q: int
    R: int
    continuous_bound: Fraction  # sum(m)/Q capped at 1: the LP relaxation (real-valued keys)

    def fires(self, threshold: Fraction | float) -> bool:
        """True when a threshold provably fails: some judge is below it on some label, whatever
        the true labels are."""
        return Fraction(threshold) > self.theta


def theta_star(judges: Sequence[Sequence[int]]) -> Alarm:
    """theta* = max over answer keys of min over judges of the best weakest-label accuracy.

    Exact in O(R^2) arithmetic (module doc, point 3)."""
    judges, Q, R = check_judges(judges)
    m = label_minima(judges)
    total = sum(m)
    bound = min(Fraction(1), Fraction(total, Q))
    if total >= Q:
        theta = Fraction(1)
    elif total == 0:
        # Some judge never uses label i, for every i: any key puts a label with items where some
        # judge has accuracy 0.
        return Alarm(Fraction(0), tuple(judges[0]), Q, R, bound)
    else:
        hi, lo = Fraction(total, Q), Fraction(total, Q + R)
        # theta* is some m_i / q in [lo, hi]: the quotients there, largest first.
        cands = sorted(
            {
                Fraction(mi, q)
                for mi in m
                if mi
                for q in range(max(1, math.ceil(mi / hi)), math.floor(mi / lo) + 1)
            },
            reverse=True,
        )
        theta = next(t for t in cands if sum(math.floor(mi / t) for mi in m) >= Q)
    return Alarm(theta, _key_at(m, Q, theta), Q, R, bound)


def _key_at(m: Sequence[int], Q: int, theta: Fraction) -> Counts:
    """A key with f(key) >= theta: Q_i <= floor(m_i / theta), trimmed to sum Q from the last
    label backwards (deterministic)."""
    caps = [math.floor(mi / theta) if theta < 1 else mi for mi in m]
    excess = sum(caps) - Q
    for i in reversed(range(len(caps))):
        cut = min(excess, caps[i])
        caps[i] -= cut
        excess -= cut
    return tuple(caps)


def theta_star_brute(
    judges: Sequence[Sequence[int]], matrices: bool = True
) -> tuple[Fraction, list[Counts]]:
    """theta* and every key attaining it by enumerating the simplex; with `matrices`, each judge's
    best weakest accuracy is itself found by enumerating its confusion matrices (tests only)."""
    judges, Q, R = check_judges(judges)
    best, arg = Fraction(-1), []
    for key in simplex_points(Q, R):
        if matrices:
            vals = [best_weakest_accuracy_brute(c, key) for c in judges]
            v = min(vals)
        else:
            v = curve_value(judges, key)
        if v > best:
            best, arg = v, [key]
        elif v == best:
            arg.append(key)
    return best, arg


def sorted_curve(judges: Sequence[Sequence[int]], max_points: int = 200_000) -> list[Fraction]:
    """The paper's Fig. 7: f(key) at every answer key summary, sorted from high to low (exact;
    refuses simplices with more than `max_points` keys, use curve_shares there)."""
    judges, Q, R = check_judges(judges)
    if n_keys(Q, R) > max_points:
        raise AlarmInputError(
            f"{n_keys(Q, R)} answer keys (Q={Q}, R={R}) are too many to list; use curve_shares"
        )
    return sorted((curve_value(judges, k) for k in simplex_points(Q, R)), reverse=True)


def curve_shares(
    judges: Sequence[Sequence[int]], levels: int = 100
) -> list[tuple[Fraction, Fraction]]:
    """The same curve for any Q, as (t, share of answer keys with f(key) >= t) for t = 0, 1/levels,
    .., 1: the sorted curve read sideways (its value at rank share s is the largest t with
    share(t) >= s). Exact counts."""
    judges, Q, R = check_judges(judges)
    total = n_keys(Q, R)
    return [
        (Fraction(k, levels), Fraction(keys_at_least(judges, Fraction(k, levels)), total))
        for k in range(levels + 1)
    ]


def judge_report(judges: Sequence[Sequence[int]], key: Sequence[int]) -> list[dict]:
    """Per judge at `key`: its best weakest-label accuracy and the best per label."""
    out = []
    for c in judges:
        m = witness_matrix(c, key)
        out.append(
            {
                "best_weakest": best_weakest_accuracy(c, key),
                "best_per_label": per_label_accuracy(m),
                "matrix": m,
            }
        )
    return out


def true_accuracies(
    truth: Sequence[int], predictions: Sequence[int], R: int
) -> list[Fraction | None]:
    """Per-label accuracy of one judge against known labels (label indices 0..R-1)."""
    right, total = [0] * R, [0] * R
    for t, p in zip(truth, predictions, strict=True):
        total[t] += 1
        right[t] += t == p
    return [Fraction(r, n) if n else None for r, n in zip(right, total, strict=True)]


# -------------------------------------------------------------------------- beyond the paper: joint
# When the judges' labels are question-aligned (transnli has them), the counts of each *pattern*
# of labels (one label per judge) are known: for two judges this is the paper's M = 2 summary; for
# more it is the full M = N summary, which implies every M = 2 one. The possible evaluations at a
# key are then the ways to split each pattern's count over the true labels: integer n[i][p] >= 0
# with sum_i n[i][p] = J[p]. Judge k is right on label i for the items of pattern p with p_k = i
# that are truly i. The labels now compete (an item counted as truly i is not truly j), so no
# closed form: for a fixed t = a/b, "every judge >= t on every label" is the integer program
#     b * sum_{p: p_k = i} n[i][p] - a * sum_p n[i][p] >= 0   for every judge k and label i
# (a label with no item satisfies it as 0 >= 0, the same convention as above), solved by HiGHS
# (scipy.optimize.milp) with integer coefficients. theta* is found by bisection over fractions:
# each feasible solution is checked exactly in integers and its own min ratio raises the lower
# bound; the search stops when no fraction with denominator <= Q lies strictly between the
# attained lower bound and the infeasible upper bound (theta* = c / q with q <= Q).

Pattern = tuple[int, ...]


@dataclass(frozen=True)
class JointAlarm:
    theta: Fraction
    key: Counts
    split: dict[Pattern, Counts]  # pattern -> how many of its items are truly label 0..R-1
    Q: int
    R: int
    programs: int  # integer programs solved


def check_patterns(patterns: dict[Pattern, int], R: int) -> tuple[dict[Pattern, int], int, int]:
    if R < 2:
        raise AlarmInputError(f"need at least 2 labels, got {R}")
    pats = {tuple(p): c for p, c in patterns.items() if c}
    if not pats:
        raise AlarmInputError("the judges label no item")
    N = len(next(iter(pats)))
    for p, c in pats.items():
        if len(p) != N or any(not (isinstance(x, int) and 0 <= x < R) for x in p):
            raise AlarmInputError(f"pattern {p} is not {N} label indices in 0..{R - 1}")
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise AlarmInputError(f"pattern {p}: count {c!r} is not a non-negative integer")
    return pats, N, sum(pats.values())


def patterns_from_labels(per_judge: Sequence[Sequence[int]]) -> dict[Pattern, int]:
    """Question-aligned labels (judge -> label index per item) to pattern counts."""
    out: dict[Pattern, int] = {}
    for p in zip(*per_judge, strict=True):
        out[p] = out.get(p, 0) + 1
    return dict(sorted(out.items()))


def marginal_counts(patterns: dict[Pattern, int], R: int) -> list[Counts]:
    """Each judge's M = 1 counts implied by the pattern counts."""
    N = len(next(iter(patterns)))
    return [
        tuple(sum(c for p, c in patterns.items() if p[k] == i) for i in range(R)) for k in range(N)
    ]


def _joint_value(split: dict[Pattern, Counts], R: int, N: int) -> Fraction:
    rows = [sum(s[i] for s in split.values()) for i in range(R)]
    vals = [
        Fraction(sum(s[i] for p, s in split.items() if p[k] == i), rows[i])
        for i in range(R)
        if rows[i]
        for k in range(N)
    ]
    return min(vals, default=Fraction(1))


class JointUnsolved(RuntimeError):
    """An integer program gave no answer that can be trusted (the caller falls back to the LP)."""


class JointTimeout(JointUnsolved):
    """An integer program ran out of its time limit before deciding."""


def _joint_feasible(
    pats: dict[Pattern, int], R: int, N: int, t: Fraction, time_limit: float | None = None
) -> dict[Pattern, Counts] | None:
    """An integer split with every judge >= t on every label, or None when there is none."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    plist = list(pats)
    P = len(plist)
    nvar = R * P  # variable i * P + j: items of pattern j that are truly label i
    a, b = t.numerator, t.denominator
    eq = np.zeros((P, nvar))
    for j in range(P):
        eq[j, [i * P + j for i in range(R)]] = 1
    rows = []
    for i in range(R):
        for k in range(N):
            row = np.zeros(nvar)
            for j, p in enumerate(plist):
                row[i * P + j] = (b if p[k] == i else 0) - a
            rows.append(row)
    counts = np.array([pats[p] for p in plist], dtype=float)
    constraints = [
        LinearConstraint(eq, counts, counts),
        LinearConstraint(np.array(rows), np.zeros(len(rows)), np.full(len(rows), np.inf)),
    ]
    res = milp(
        np.zeros(nvar),
        constraints=constraints,
        integrality=np.ones(nvar),
        bounds=Bounds(np.zeros(nvar), np.repeat(counts[None, :], R, axis=0).ravel()),
        options={} if time_limit is None else {"time_limit": time_limit},
    )
    if res.status == 2:  # infeasible
        return None
    if res.x is None:
        raise JointTimeout(f"the integer program did not finish: {res.message}")
    x = [round(v) for v in res.x]
    split = {p: tuple(x[i * P + j] for i in range(R)) for j, p in enumerate(plist)}
    # exact check in integers: never trust a float solution
    if (
        any(min(s) < 0 or sum(s) != pats[p] for p, s in split.items())
        or _joint_value(split, R, N) < t
    ):
        raise JointUnsolved("the integer program's solution does not check out exactly")
    return split


def _simplest_between(lo: Fraction, hi: Fraction) -> Fraction:
    """The fraction with the smallest denominator strictly between lo < hi (lo >= 0)."""
    fl = math.floor(lo)
    if fl + 1 < hi:
        return Fraction(fl + 1)
    x = lo - fl
    y = hi - fl
    # both in [0, 1]; recurse on reciprocals
    inner = _simplest_between(1 / y, 1 / x) if x else Fraction(math.floor(1 / y) + 1)
    return fl + 1 / inner


def theta_star_joint(
    patterns: dict[Pattern, int], R: int, time_limit: float | None = None
) -> JointAlarm:
    """theta* from question-aligned pattern counts (M = N summaries; M = 2 for two judges).
    Never above theta_star of the marginal counts; exact (see the comment above). With
    `time_limit` (seconds for the whole search), raises JointTimeout rather than guess."""
    pats, N, Q = check_patterns(patterns, R)
    import time

    deadline = None if time_limit is None else time.monotonic() + time_limit

    def feasible(t: Fraction):
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise JointTimeout(f"no answer within {time_limit} s")
        return _joint_feasible(pats, R, N, t, left)

    hi_m1 = theta_star(marginal_counts(pats, R)).theta
    programs = 1
    best = feasible(hi_m1)

    def narrow(t: Fraction) -> None:
        """One integer program at t: t becomes the upper bound, or its solution the lower one."""
        nonlocal best, lo, hi, programs
        programs += 1
        found = feasible(t)
        if found is None:
            hi = t
        else:
            best, lo = found, _joint_value(found, R, N)

    if best is not None:
        lo, hi = _joint_value(best, R, N), None
    else:
        best = {p: (c,) + (0,) * (R - 1) for p, c in pats.items()}  # t = 0 always holds
        lo, hi = _joint_value(best, R, N), hi_m1
        # Probe first at the LP bound and just below it (the integer value is usually within a few
        # 1/Q of it): this only picks test points, so a wrong LP answer costs time, not exactness.
        lp = theta_star_joint_lp(pats, R)
        for probe in (lp, lp - Fraction(4, Q)):
            if lo < probe < hi:
                narrow(probe)
    while hi is not None:
        if _simplest_between(lo, hi).denominator > Q:
            break
        mid = (lo + hi) / 2
        simple = mid.limit_denominator(Q * Q)
        narrow(simple if lo < simple < hi else mid)
    key = tuple(sum(s[i] for s in best.values()) for i in range(R))
    return JointAlarm(lo, key, dict(sorted(best.items())), Q, R, programs)


def _joint_lp_feasible(pats: dict[Pattern, int], R: int, N: int, t: float) -> bool:
    """Is there a real-valued split with every judge >= t on every label? (LP relaxation)"""
    import numpy as np
    from scipy.optimize import linprog

    plist = list(pats)
    P = len(plist)
    nvar = R * P
    eq = np.zeros((P, nvar))
    for j in range(P):
        eq[j, [i * P + j for i in range(R)]] = 1
    rows = np.zeros((R * N, nvar))  # -(correct - t * row) <= 0
    for i in range(R):
        for k in range(N):
            for j, p in enumerate(plist):
                rows[i * N + k, i * P + j] = t - (1.0 if p[k] == i else 0.0)
    res = linprog(
        np.zeros(nvar),
        A_ub=rows,
        b_ub=np.zeros(R * N),
        A_eq=eq,
        b_eq=np.array([pats[p] for p in plist], dtype=float),
        bounds=(0, None),
        method="highs",
    )
    # 0: a split exists; 2: proven infeasible. Anything else (HiGHS can stop with "model status
    # Unknown" on a degenerate program exactly at the bound) proves nothing, so t counts as
    # reachable: the bound only grows, and an alarm above an upper bound stays sound.
    return res.status != 2


def theta_star_joint_lp(patterns: dict[Pattern, int], R: int, digits: int = 6) -> Fraction:
    """Upper bound on theta_star_joint from the LP relaxation (real-valued splits), for any size
    in milliseconds: no real split reaches a higher t, so no integer one does, and an alarm above
    it is proven. Found by bisection on LP feasibility and rounded *up* to `digits` decimals (so
    float tolerances can only make it larger, i.e. more cautious). Exceeds the integer value by
    O(1/Q) at most in practice (tests compare both)."""
    pats, N, Q = check_patterns(patterns, R)
    m = label_minima(marginal_counts(pats, R))
    hi = min(1.0, sum(m) / Q) + 1e-12  # the M = 1 real-valued bound
    if _joint_lp_feasible(pats, R, N, hi - 1e-12):
        best = hi
    else:
        lo = 0.0
        for _ in range(50):
            mid = (lo + hi) / 2
            if _joint_lp_feasible(pats, R, N, mid):
                lo = mid
            else:
                hi = mid
        best = hi + 1e-9
    scale = 10**digits
    return min(Fraction(1), Fraction(math.ceil(best * scale), scale))


def theta_star_pairs(
    per_judge: Sequence[Sequence[int]], R: int, time_limit: float | None = None, exact: bool = True
) -> tuple[Fraction, tuple[int, int]]:
    """The M = 2 alarm judge pair by judge pair: min over pairs of the pair's exact joint theta*,
    and the pair reaching it. Sound (a pair below t everywhere proves the alarm for all judges);
    never above that pair's own M = 1 theta*, but with N > 2 judges it can be above the M = 1
    theta* of all of them (three judges' counts constrain more than any two): the best proven
    bound is the lower of the two. Using every pair at one common key would be tighter still; this
    does not attempt it. `time_limit`: seconds for all pairs (exact only). exact=False uses
    the LP relaxation (theta_star_joint_lp): milliseconds, an upper bound, still sound."""
    import time

    if len(per_judge) < 2:
        raise AlarmInputError("need at least two judges")
    start = time.monotonic()
    best: tuple[Fraction, tuple[int, int]] | None = None
    for a, b in itertools.combinations(range(len(per_judge)), 2):
        left = None if time_limit is None else time_limit - (time.monotonic() - start)
        pats = patterns_from_labels([per_judge[a], per_judge[b]])
        theta = theta_star_joint(pats, R, left).theta if exact else theta_star_joint_lp(pats, R)
        if best is None or theta < best[0]:
            best = (theta, (a, b))
    return best


EXACT_M2_MAX_ITEMS = 2000  # above this, integer programs can take minutes: the LP bound is used


def m2_alarm(per_judge: Sequence[Sequence[int]], R: int, time_limit: float = 30.0) -> dict:
    """The M = 2 pair alarm as reported by transnli: exact integer programs up to
    EXACT_M2_MAX_ITEMS items (falling back to the LP bound if they exceed `time_limit`), the LP
    relaxation above. Returns theta (Fraction), pair (indices) and method."""
    Q = len(per_judge[0])
    if Q <= EXACT_M2_MAX_ITEMS:
        try:
            theta, pair = theta_star_pairs(per_judge, R, time_limit=time_limit)
            return {"theta": theta, "pair": pair, "method": "integer programs (exact)"}
        except JointUnsolved:
            pass
    theta, pair = theta_star_pairs(per_judge, R, exact=False)
    return {"theta": theta, "pair": pair, "method": "LP relaxation (upper bound, rounded up)"}


def theta_star_joint_brute(patterns: dict[Pattern, int], R: int) -> Fraction:
    """theta_star_joint by enumerating every split of every pattern (tests only)."""
    pats, N, _ = check_patterns(patterns, R)
    plist = list(pats)
    choices = [list(_compositions(pats[p], [pats[p]] * R)) for p in plist]
    best = Fraction(-1)
    for combo in itertools.product(*choices):
        v = _joint_value({p: tuple(c) for p, c in zip(plist, combo, strict=True)}, R, N)
        best = max(best, v)
    return best
