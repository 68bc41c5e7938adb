"""What the trained judge's hidden states cost over the lm check alone: the same language model,
in one process, scores the same pairs with `compare_many` (the lm check) and with `read_pairs`
at the judge's layer (the judge check), alternately, without the score cache.

    .venv/bin/python benchmarks/bench_lm_states.py [--pairs 160] [--rounds 3]

Pairs: the first N judged candidates of the test set (benchmarks/data/quality_test.jsonl).
Prints one JSON object: seconds per round of each, their medians, and the ratio of the medians
(read_pairs / compare_many; 1.10 would be 10% more). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_quality import DATA, load_judgements  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=160)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    from transnli.common.lm.scorer import CausalLMScorer
    from transnli.common.lm.settings import LMSettings
    from transnli.generator.judge import load_judge

    judged = load_judgements(DATA / "quality_test.jsonl")
    pairs = [(j["hypothesis"], j["modified_hypothesis"]) for j in judged.values()][: args.pairs]
    layer = load_judge().layer
    scorer = CausalLMScorer.load(LMSettings(use_cache=False))
    scorer.compare_many(pairs[:16])  # warm-up
    times: dict[str, list[float]] = {"compare_many": [], "read_pairs": []}
    for _ in range(args.rounds):
        for name, call in (
            ("compare_many", lambda: scorer.compare_many(pairs)),
            ("read_pairs", lambda: scorer.read_pairs(pairs, (layer,))),
        ):
            t0 = time.perf_counter()
            call()
            times[name].append(round(time.perf_counter() - t0, 3))
    medians = {k: statistics.median(v) for k, v in times.items()}
    print(
        json.dumps(
            {
                "pairs": len(pairs),
                "layer": layer,
                "seconds": times,
                "median": medians,
                "states_over_scores": round(medians["read_pairs"] / medians["compare_many"], 3),
                "load_avg": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
