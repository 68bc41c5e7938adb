"""No-knowledge alarms: the closed forms against brute-force enumeration, invariants, soundness,
and the paper's MT-Bench example."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
from transnli.evaluator import alarms as A


def random_counts(rng: random.Random, Q: int, R: int) -> tuple[int, ...]:
    """A random composition of Q into R non-negative parts (zeros included on purpose)."""
    cuts = sorted(rng.randint(0, Q) for _ in range(R - 1))
    return tuple(b - a for a, b in zip([0, *cuts], [*cuts, Q], strict=True))


def random_judges(rng, Q, R, N):
    return [random_counts(rng, Q, R) for _ in range(N)]


# --------------------------------------------------------------------------- one judge, one key
@pytest.mark.parametrize("R,Qmax,cases", [(2, 30, 150), (3, 12, 150), (4, 7, 40)])
def test_closed_form_matches_matrix_enumeration(R, Qmax, cases):
    rng = random.Random(1000 + R)
    for _ in range(cases):
        Q = rng.randint(1, Qmax)
        counts, key = random_counts(rng, Q, R), random_counts(rng, Q, R)
        assert A.best_weakest_accuracy(counts, key) == A.best_weakest_accuracy_brute(counts, key)


def test_witness_matrix_has_the_margins_and_the_best_diagonal():
    rng = random.Random(7)
    for _ in range(300):
        R = rng.randint(2, 5)
        Q = rng.randint(1, 40)
        counts, key = random_counts(rng, Q, R), random_counts(rng, Q, R)
        m = A.witness_matrix(counts, key)
        assert [sum(row) for row in m] == list(key)
        assert [sum(col) for col in zip(*m, strict=True)] == list(counts)
        assert all(x >= 0 for row in m for x in row)
        assert [m[i][i] for i in range(R)] == [min(q, r) for q, r in zip(key, counts, strict=True)]


def test_enumeration_counts_the_papers_binary_example():
    # Q = 10, observed (R_a, R_b) = (4, 6): at key (Q_a, Q_b) = (7, 3) the paper's impossible
    # evaluation (R_a;a = 3, R_b;b = 1) must be absent and (2, 1) present.
    diagonals = {(m[0][0], m[1][1]) for m in A.confusion_matrices((4, 6), (7, 3))}
    assert (3, 1) not in diagonals and (2, 1) in diagonals
    # Whatever the key, a binary judge's matrices are fixed by one free cell.
    for qa in range(11):
        n = sum(1 for _ in A.confusion_matrices((4, 6), (qa, 10 - qa)))
        assert n == min(qa, 4) - max(0, qa - 6) + 1


# --------------------------------------------------------------------------- theta*
@pytest.mark.parametrize(
    "R,Qmax,cases,matrices",
    [
        (2, 30, 60, True),  # every matrix of every judge at every key
        (3, 12, 20, True),
        (3, 30, 60, False),  # every key; per-judge value from the closed form (checked above)
        (4, 12, 20, False),
    ],
)
def test_fast_theta_matches_brute_force(R, Qmax, cases, matrices):
    rng = random.Random(R * 100 + Qmax)
    for _ in range(cases):
        Q = rng.randint(1, Qmax)
        judges = random_judges(rng, Q, R, rng.randint(2, 4))
        fast = A.theta_star(judges)
        brute, argmax = A.theta_star_brute(judges, matrices=matrices)
        assert fast.theta == brute, judges
        assert fast.key in argmax
        assert A.curve_value(judges, fast.key) == fast.theta
        assert fast.theta <= fast.continuous_bound


def test_theta_is_exact_for_awkward_quotients():
    # D'Hondt-like ties and labels nobody uses.
    for judges in (
        [(3, 0, 2), (2, 1, 2)],
        [(0, 5, 0), (5, 0, 0)],
        [(1, 1, 1, 1), (4, 0, 0, 0)],
        [(7, 0), (0, 7)],
    ):
        assert A.theta_star(judges).theta == A.theta_star_brute(judges, matrices=True)[0]
    assert A.theta_star([(7, 0), (0, 7)]).theta == 0


def test_one_judge_alone_never_fires():
    rng = random.Random(3)
    for _ in range(100):
        R = rng.randint(2, 5)
        judge = random_counts(rng, rng.randint(1, 10**6), R)
        alarm = A.theta_star([judge])
        assert alarm.theta == 1 and alarm.key == judge
        assert not alarm.fires(1.0)
    # judges with the same counts are as good as one
    assert A.theta_star([(3, 4, 5), (3, 4, 5), (3, 4, 5)]).theta == 1


def test_permuting_labels_or_judges_changes_nothing():
    rng = random.Random(11)
    for _ in range(80):
        R = rng.randint(2, 4)
        Q = rng.randint(1, 500)
        judges = random_judges(rng, Q, R, rng.randint(2, 4))
        theta = A.theta_star(judges).theta
        perm = list(range(R))
        rng.shuffle(perm)
        relabelled = [tuple(j[p] for p in perm) for j in judges]
        assert A.theta_star(relabelled).theta == theta
        assert A.theta_star(list(reversed(judges))).theta == theta
        assert A.keys_at_least(relabelled, theta) == A.keys_at_least(judges, theta)


def test_alarm_is_sound_against_random_gold_labels():
    """Whatever the true labels, the weakest true per-label accuracy of the judges is <= theta*:
    the true key and the true confusion matrices are among those the alarm ranges over."""
    rng = random.Random(5)
    for _ in range(300):
        R = rng.randint(2, 4)
        Q = rng.randint(1, 60)
        gold = [rng.randrange(R) for _ in range(Q)]
        preds = []
        for _ in range(rng.randint(2, 4)):
            skill = rng.random()
            preds.append([g if rng.random() < skill else rng.randrange(R) for g in gold])
        judges = [tuple(p.count(i) for i in range(R)) for p in preds]
        alarm = A.theta_star(judges)
        weakest = min(a for p in preds for a in A.true_accuracies(gold, p, R) if a is not None)
        assert weakest <= alarm.theta
        key = tuple(gold.count(i) for i in range(R))
        assert A.curve_value(judges, key) <= alarm.theta
        assert not alarm.fires(weakest)  # a threshold the judges all meet never fires


def test_curve_counts_and_shares_are_exact():
    rng = random.Random(9)
    for _ in range(40):
        R = rng.randint(2, 4)
        Q = rng.randint(1, 18)
        judges = random_judges(rng, Q, R, rng.randint(2, 3))
        values = A.sorted_curve(judges)
        assert len(values) == A.n_keys(Q, R)
        assert values[0] == A.theta_star(judges).theta
        for t in {
            Fraction(0),
            Fraction(1, 3),
            Fraction(1, 2),
            values[len(values) // 2],
            Fraction(1),
        }:
            assert A.keys_at_least(judges, t) == sum(v >= t for v in values)
    shares = A.curve_shares([(5, 10, 10), (4, 18, 3)], levels=4)
    assert shares[0] == (0, 1) and shares[-1] == (1, 0)
    assert [s for _, s in shares] == sorted((s for _, s in shares), reverse=True)


def test_fast_path_at_a_million_items_is_quick_and_consistent():
    import time

    rng = random.Random(2)
    for N in (2, 3, 4):
        judges = random_judges(rng, 1_000_000, 3, N)
        start = time.perf_counter()
        alarm = A.theta_star(judges)
        shares = A.curve_shares(judges, levels=100)
        assert time.perf_counter() - start < 5
        m = A.label_minima(judges)
        # theta* is a quotient m_i / q and the key attains it; a slightly higher t has no key
        assert any(alarm.theta * q == mi for mi in m for q in alarm.key if q)
        assert A.curve_value(judges, alarm.key) == alarm.theta
        assert A.keys_at_least(judges, alarm.theta) >= 1
        assert A.keys_at_least(judges, alarm.theta + Fraction(1, 10**13)) == 0
        assert shares[0][1] == 1


def test_bad_counts_are_refused():
    with pytest.raises(A.AlarmInputError, match="same items"):
        A.theta_star([(1, 2), (2, 2)])
    with pytest.raises(A.AlarmInputError, match="at least 2 labels"):
        A.theta_star([(3,), (3,)])
    with pytest.raises(A.AlarmInputError, match="non-negative"):
        A.theta_star([(3, -1), (1, 1)])
    with pytest.raises(A.AlarmInputError, match="no item"):
        A.theta_star([(0, 0), (0, 0)])
    with pytest.raises(A.AlarmInputError, match="sums to"):
        A.best_weakest_accuracy((1, 2), (2, 2))


# --------------------------------------------------------------------------- the paper's example
AUTHORS, GPT4 = (5, 10, 10), (4, 18, 3)  # (a, b, tie), as printed in the paper (Fig. 6, 7 captions)
GPT4_FROM_TABLE = (5, 18, 2)  # counted from the paper's Table I


def test_paper_example_as_printed():
    alarm = A.theta_star([AUTHORS, GPT4])
    assert alarm.theta == Fraction(2, 3)
    assert alarm.key == (6, 15, 4)
    assert A.n_keys(25, 3) == 351  # "The 351 points in the QC"
    # the certificate: both graders at least 2/3 on every label at this key, so a 50% alarm
    # cannot be proven from these summaries (the paper says anything above 46% fires)
    for counts in (AUTHORS, GPT4):
        m = A.witness_matrix(counts, alarm.key)
        assert min(A.per_label_accuracy(m)) >= Fraction(2, 3)
    assert not alarm.fires(0.5) and alarm.fires(0.67)


def test_paper_example_from_its_table():
    assert A.theta_star([AUTHORS, GPT4_FROM_TABLE]).theta == Fraction(2, 3)
    # Fig. 6: at key (8, 9, 8) gpt4 cannot beat 25% on ties - true for the table's 2 ties,
    # not for the printed 3 (3/8 = 37.5% is possible)
    assert A.best_weakest_accuracy(GPT4_FROM_TABLE, (8, 9, 8)) == Fraction(1, 4)
    assert A.best_weakest_accuracy(GPT4, (8, 9, 8)) == Fraction(3, 8)


def test_all_compositions_of_small_tests_agree():
    # every pair of binary judges on Q = 6 items: fast == brute, exhaustively
    comps = list(A.simplex_points(6, 2))
    for j1, j2 in itertools.product(comps, repeat=2):
        assert A.theta_star([j1, j2]).theta == A.theta_star_brute([j1, j2])[0]


# --------------------------------------------------------------------------- joint (M = 2 / M = N)
def random_aligned(rng, Q, R, N):
    gold = [rng.randrange(R) for _ in range(Q)]
    preds = []
    for _ in range(N):
        skill = rng.random()
        preds.append([g if rng.random() < skill else rng.randrange(R) for g in gold])
    return gold, preds


@pytest.mark.parametrize("R,Qmax,N,cases", [(2, 8, 2, 25), (3, 6, 2, 20), (2, 6, 3, 15)])
def test_joint_theta_matches_brute_force_and_is_sound(R, Qmax, N, cases):
    rng = random.Random(R * 10 + N)
    for _ in range(cases):
        gold, preds = random_aligned(rng, rng.randint(1, Qmax), R, N)
        pats = A.patterns_from_labels(preds)
        joint = A.theta_star_joint(pats, R)
        assert joint.theta == A.theta_star_joint_brute(pats, R), pats
        assert joint.theta <= A.theta_star(A.marginal_counts(pats, R)).theta
        weakest = min(a for p in preds for a in A.true_accuracies(gold, p, R) if a is not None)
        assert weakest <= joint.theta
        assert sum(joint.key) == len(gold)


def test_joint_on_the_papers_table():
    experts = "bbttbatbbtbbaabbbttbtbbba"
    authors = "abttbtabbttbtattbbtbaabbt"
    gpt4 = "abbaababbbbbtabtbbbbbbbbb"
    ix = {"a": 0, "b": 1, "t": 2}  # Table I columns, one letter a row (t: tie)
    pats = A.patterns_from_labels([[ix[x] for x in authors], [ix[x] for x in gpt4]])
    assert A.marginal_counts(pats, 3) == [AUTHORS, GPT4_FROM_TABLE]
    assert A.theta_star_joint(pats, 3).theta == Fraction(5, 8)  # M = 1 gives 2/3
    truth = [ix[x] for x in experts]
    for judge in (authors, gpt4):
        accs = A.true_accuracies(truth, [ix[x] for x in judge], 3)
        assert min(accs) <= Fraction(5, 8)


def test_simplest_fraction_between():
    assert A._simplest_between(Fraction(0), Fraction(1, 3)) == Fraction(1, 4)
    assert A._simplest_between(Fraction(1, 3), Fraction(1, 2)) == Fraction(2, 5)
    assert A._simplest_between(Fraction(5, 8), Fraction(2, 3)) == Fraction(7, 11)
    rng = random.Random(1)
    for _ in range(200):
        lo = Fraction(rng.randint(0, 50), rng.randint(1, 50))
        hi = lo + Fraction(rng.randint(1, 20), rng.randint(1, 400))
        s = A._simplest_between(lo, hi)
        assert lo < s < hi
        # no smaller denominator d has a fraction strictly between: the first n/d above lo is not
        # below hi
        assert not any(Fraction(lo * d // 1 + 1, d) < hi for d in range(1, s.denominator))


def test_pairwise_m2_alarm_is_between_the_joint_and_m1_and_sound():
    rng = random.Random(21)
    for _ in range(15):
        R = rng.randint(2, 3)
        gold, preds = random_aligned(rng, rng.randint(1, 7), R, 3)
        pairs_theta, (a, b) = A.theta_star_pairs(preds, R)
        joint = A.theta_star_joint(A.patterns_from_labels(preds), R).theta
        m1 = A.theta_star([tuple(p.count(i) for i in range(R)) for p in preds]).theta
        pair_m1 = A.theta_star(
            [tuple(p.count(i) for i in range(R)) for p in (preds[a], preds[b])]
        ).theta
        assert joint <= min(pairs_theta, m1) and pairs_theta <= pair_m1
        assert (
            pairs_theta == A.theta_star_joint(A.patterns_from_labels([preds[a], preds[b]]), R).theta
        )
        weakest = min(x for p in preds for x in A.true_accuracies(gold, p, R) if x is not None)
        assert weakest <= pairs_theta


def test_joint_time_limit_raises_instead_of_guessing():
    rng = random.Random(3)
    gold, preds = random_aligned(rng, 2000, 3, 3)
    with pytest.raises(A.JointTimeout):
        A.theta_star_joint(A.patterns_from_labels(preds), 3, time_limit=1e-9)


def test_lp_bound_is_above_the_exact_joint_value_and_close():
    rng = random.Random(8)
    for _ in range(12):
        gold, preds = random_aligned(rng, rng.randint(5, 300), 3, 2)
        pats = A.patterns_from_labels(preds)
        exact = A.theta_star_joint(pats, 3).theta
        lp = A.theta_star_joint_lp(pats, 3)
        assert exact <= lp <= exact + Fraction(3, len(gold)) + Fraction(1, 10**5)
        assert lp <= A.theta_star(A.marginal_counts(pats, 3)).continuous_bound + Fraction(1, 10**6)
    big_gold, big = random_aligned(random.Random(1), A.EXACT_M2_MAX_ITEMS + 1, 3, 2)
    res = A.m2_alarm(big, 3)
    assert res["method"].startswith("LP") and res["theta"] == A.theta_star_joint_lp(
        A.patterns_from_labels(big), 3
    )
    assert min(x for p in big for x in A.true_accuracies(big_gold, p, 3)) <= res["theta"]


# The joint (P,H) label counts of two judges on 2,000 triples with which HiGHS (scipy 1.17) stopped
# with "model_status is Unknown" inside the LP bound's bisection (issue 38).
UNFINISHED_LP_COUNTS = {(2, 0): 666, (1, 2): 444, (0, 2): 326, (0, 1): 279, (0, 0): 189, (2, 2): 96}


def aligned_from(joint):
    a, b = [], []
    for (x, y), c in joint.items():
        a += [x] * c
        b += [y] * c
    return [a, b]


def test_unfinished_lp_means_not_proven(monkeypatch):
    """An LP that stops without optimal/infeasible proves nothing: t counts as reachable, so the LP
    bound can only grow (still an upper bound, the alarm stays sound) and nothing raises."""
    import scipy.optimize

    exact = A.theta_star_joint(UNFINISHED_LP_COUNTS, 3).theta
    real = A.theta_star_joint_lp(UNFINISHED_LP_COUNTS, 3)
    assert exact <= real
    res = A.m2_alarm(aligned_from(UNFINISHED_LP_COUNTS), 3)
    assert res["theta"] == exact and res["method"].startswith("integer")

    solve = scipy.optimize.linprog

    def unfinished(*args, **kwargs):
        out = solve(*args, **kwargs)
        out.status, out.message = 4, "HiGHS Status 15: model_status is Unknown"
        return out

    monkeypatch.setattr(scipy.optimize, "linprog", unfinished)
    bound = A.theta_star_joint_lp(UNFINISHED_LP_COUNTS, 3)
    m1 = A.theta_star(A.marginal_counts(UNFINISHED_LP_COUNTS, 3)).continuous_bound
    assert real <= bound and bound >= m1 - Fraction(1, 10**6)  # nothing proven: the M = 1 bound
    assert A.theta_star_joint(UNFINISHED_LP_COUNTS, 3).theta == exact  # the LP only picks probes
    fallback = A.m2_alarm(aligned_from(UNFINISHED_LP_COUNTS), 3, time_limit=1e-9)
    assert fallback["method"].startswith("LP") and fallback["theta"] == bound >= exact


def test_integer_solution_that_does_not_check_out_falls_back_to_the_lp(monkeypatch):
    import scipy.optimize

    solve = scipy.optimize.milp

    def wrong(*args, **kwargs):
        out = solve(*args, **kwargs)
        if out.x is not None:
            out.x = out.x * 0  # a split that does not sum to the pattern counts
        return out

    monkeypatch.setattr(scipy.optimize, "milp", wrong)
    res = A.m2_alarm(aligned_from(UNFINISHED_LP_COUNTS), 3)
    assert res["method"].startswith("LP")
    assert res["theta"] >= A.theta_star_joint_lp(UNFINISHED_LP_COUNTS, 3) - Fraction(1, 10**6)
