"""Benchmark the no-knowledge alarm's fast path: theta*, the answer key attaining it, the curve
(exact shares at 101 thresholds) and, for comparison, the number of answer keys a brute-force
search would visit, for Q = 1,000,000 items, R = 3 labels and N = 2..4 judges. Then the M = 2
alarm beyond the paper (LP relaxation per pair of judges, the method used above 2000 items) on
question-aligned labels: noisy copies of random true labels (each judge right with a probability
drawn from 0.5..0.9).

    .venv/bin/python benchmarks/bench_alarms.py [--items 1000000] [--labels 3] [--repeat 5]

Judges' counts are random compositions of Q (fixed seed). Times are the best of --repeat runs.
Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time

from transnli.evaluator import alarms as A


def composition(rng: random.Random, Q: int, R: int) -> tuple[int, ...]:
    cuts = sorted(rng.randint(0, Q) for _ in range(R - 1))
    return tuple(b - a for a, b in zip([0, *cuts], [*cuts, Q], strict=True))


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--labels", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(0)
    rows = []
    for n in (2, 3, 4):
        judges = [composition(rng, args.items, args.labels) for _ in range(n)]
        alarm = A.theta_star(judges)
        rows.append(
            {
                "judges": n,
                "counts": [list(j) for j in judges],
                "theta_star": float(alarm.theta),
                "theta_star_exact": str(alarm.theta),
                "answer_key": list(alarm.key),
                "seconds_theta_star": round(
                    best_time(lambda j=judges: A.theta_star(j), args.repeat), 6
                ),
                "seconds_curve_101": round(
                    best_time(lambda j=judges: A.curve_shares(j, 100), args.repeat), 6
                ),
            }
        )
    m2_rows = []
    gold = [rng.randrange(args.labels) for _ in range(args.items)]
    preds = []
    for _ in range(4):
        skill = 0.5 + 0.4 * rng.random()
        preds.append([g if rng.random() < skill else rng.randrange(args.labels) for g in gold])
    for n in (2, 3, 4):
        start = time.perf_counter()
        theta, pair = A.theta_star_pairs(preds[:n], args.labels, exact=False)
        seconds = time.perf_counter() - start
        m1 = A.theta_star([tuple(p.count(i) for i in range(args.labels)) for p in preds[:n]]).theta
        weakest = min(
            a for p in preds[:n] for a in A.true_accuracies(gold, p, args.labels) if a is not None
        )
        m2_rows.append(
            {
                "judges": n,
                "theta_star_m1": float(m1),
                "theta_star_m2_pairs": float(theta),
                "pair": list(pair),
                "weakest_true_accuracy": float(weakest),
                "seconds_m2_pairs_lp": round(seconds, 3),
            }
        )
    print(
        json.dumps(
            {
                "items": args.items,
                "labels": args.labels,
                "answer_keys_in_simplex": A.n_keys(args.items, args.labels),
                "python": platform.python_version(),
                "results": rows,
                "m2": m2_rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
