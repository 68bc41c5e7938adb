"""Several pair judges read as one: the mean of their calibrated p on the left-out genres they
all scored (score files of train_pair_judge.py --scores or read_pair_judge.py --scores), read by
the same figures as one judge (train_pair_judge.py's), so that pair_judge_compare.py can set an
average of seeds or templates beside a single judge.

    .venv/bin/python benchmarks/pair_judge_average.py --leave-out test,genres5,genres6 \
        --scores SEED0_TEST.jsonl,SEED0_SETS.jsonl --scores SEED1.jsonl [--out FILE]

Each --scores is one judge (its files joined); a left-out candidate one of them did not score
exits naming the judge. Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import print_result  # noqa: E402
from train_pair_judge import held_out_figures, leave_out_rows, read_score_files  # noqa: E402


def averaged(judges: list[dict[str, float]], held: list[dict], names: list[str]) -> np.ndarray:
    """The mean p of `judges` ({key: p} each) over the `held` rows, in their order."""
    for judge, name in zip(judges, names, strict=True):
        missing = [r["key"] for r in held if r["key"] not in judge]
        if missing:
            sys.exit(f"{name}: no p for {len(missing)} left-out candidates (first: {missing[0]})")
    return np.array([np.mean([judge[r["key"]] for judge in judges]) for r in held])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leave-out", required=True, help="the genres or sets the judges never saw")
    ap.add_argument(
        "--scores",
        action="append",
        required=True,
        help="FILE[,FILE...]: one judge's score files; give it once per judge",
    )
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--out", type=Path, help="Also write the JSON here.")
    args = ap.parse_args(argv)
    if len(args.scores) < 2:
        ap.error("give --scores once per judge, two judges or more")
    judges = [read_score_files(files.split(",")) for files in args.scores]
    _, held, left_out = leave_out_rows(args.leave_out, "gate")
    p = averaged(judges, held, args.scores)
    print_result(
        {
            "benchmark": "pair_judge_average",
            "judges": args.scores,
            "combine": "mean",
            "held_out": held_out_figures(p, held, left_out, args.threshold),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
