"""How often the intervals of the noise-aware violation rates (transnli.evaluator.metrics) hold
the rate they estimate, by simulation.

    .venv/bin/python benchmarks/bench_noise_rates.py [--sims 4000] [--seed 0]

Each scenario fixes a benchmark: `good` triples whose p_good is drawn from Beta(12, 1.5) (mostly
above 0.8) and `bad` ones with p_good uniform in [0.02, 0.5], and a model that violates a rule
on each good triple with probability q_good and on each bad one with q_bad. Every simulation
draws the violations again and checks whether
- the Wilson 95% interval of the confident-triple rate (p_good >= 0.8) holds the expected rate
  on those triples, and
- the effective-sample-size Wilson 95% interval of the p_good-weighted rate holds the expected
  weighted rate sum(p * q) / sum(p).

Prints one JSON object: per scenario, the share of simulations whose interval held the rate
(0.95 is nominal). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transnli.evaluator.metrics import CONFIDENT_LEVEL, RuleTally  # noqa: E402

SCENARIOS = [  # good, bad, q_good, q_bad
    (400, 150, 0.06, 0.7),  # violations sit on the bad triples (tests/test_noise_rates.py)
    (100, 40, 0.06, 0.7),
    (40, 15, 0.1, 0.6),  # few cases
    (400, 150, 0.2, 0.2),  # violations unrelated to p_good
    (1000, 300, 0.03, 0.5),
]


def coverage(good: int, bad: int, q_good: float, q_bad: float, sims: int, seed: int) -> dict:
    rng = random.Random(seed)
    p = np.array(
        [rng.betavariate(12, 1.5) for _ in range(good)]
        + [rng.uniform(0.02, 0.5) for _ in range(bad)]
    )
    q = np.array([q_good] * good + [q_bad] * bad)
    confident = p >= CONFIDENT_LEVEL
    truth = {"confident": float(q[confident].mean()), "weighted": float((p * q).sum() / p.sum())}
    held = {"confident": 0, "weighted": 0}
    draws = np.random.default_rng(seed)
    for _ in range(sims):
        tally = RuleTally()
        for violated, p_good in zip(draws.random(p.size) < q, p, strict=True):
            tally.add(bool(violated), float(p_good))
        for kind, cell in (
            ("confident", tally.confident_cell()),
            ("weighted", tally.weighted_cell()),
        ):
            lo, hi = cell["ci95"]
            held[kind] += lo <= truth[kind] <= hi
    return {
        "good": good,
        "bad": bad,
        "q_good": q_good,
        "q_bad": q_bad,
        "confident_triples": int(confident.sum()),
        "coverage_confident": round(held["confident"] / sims, 3),
        "coverage_weighted": round(held["weighted"] / sims, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    results = [coverage(*s, sims=args.sims, seed=args.seed) for s in SCENARIOS]
    print(json.dumps({"sims": args.sims, "seed": args.seed, "scenarios": results}, indent=2))


if __name__ == "__main__":
    main()
