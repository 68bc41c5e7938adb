"""The pair judge beside the linear judge, and the two together, on genres neither was trained on.

    .venv/bin/python benchmarks/train_pair_judge.py --leave-out genres2,test --score gate \
        --scores PAIR.jsonl --out PAIR.json
    .venv/bin/python benchmarks/judge_stack.py --pair-scores PAIR.jsonl --train-sets dev,genres \
        [--out benchmarks/data/judge_stack.json]

The linear judge (the shipped configuration, judge_logo.py's "shipped") is trained on the same
sets the pair judge was (`--train-sets`) and calibrated the same way; both read every left-out
candidate the pair judge scored (the gate population of each left-out genre). Reported per genre:
AUC, precision at 80% and 65% of the fast preset's good triples, precision at the threshold, ECE,
for "linear", "pair" and two stacks that need no fitting (so nothing is tuned on a left-out genre):
"mean" (the mean of the two calibrated probabilities) and "logit_mean" (the sigmoid of the mean of
their logits). Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_logo import MODELS, THRESHOLD, all_sets, subset, train_model  # noqa: E402
from train_judge import (  # noqa: E402
    at_threshold,
    auc,
    linear_scores,
    precision_at_kept,
    reliability,
    sigmoid,
)


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def read(p: np.ndarray, y: np.ndarray, fast_good: int) -> dict:
    return {
        "auc": auc(p, y),
        "at_kept": precision_at_kept(p, y, fast_good),
        "at_threshold": at_threshold(p, y, THRESHOLD),
        "ece": reliability(p, y)["ece"],
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair-scores", type=Path, required=True)
    ap.add_argument("--train-sets", required=True)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    pair = {}
    with open(args.pair_scores, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            pair[row["key"]] = row
    data = all_sets()
    cfg = MODELS["shipped"]
    train = subset(data, np.isin(data["set"], args.train_sets.split(",")))
    model, a, b = train_model(train, cfg)
    result = {"threshold": THRESHOLD, "trained_on": args.train_sets.split(","), "genres": {}}
    for genre in sorted({r["genre"] for r in pair.values()}):
        held = subset(data, data["genre"] == genre)
        rows = np.array([k in pair for k in held["keys"]]) & held["gate"]
        fast_good = int(held["y"][held["fast"]].sum())
        y = held["y"][rows]
        linear = sigmoid(a * linear_scores(model, held, np.flatnonzero(rows), cfg) + b)
        fine = np.array([pair[k]["p"] for k in held["keys"][rows]])
        models = {
            "linear": linear,
            "pair": fine,
            "mean": (linear + fine) / 2,
            "logit_mean": sigmoid((logit(linear) + logit(fine)) / 2),
        }
        result["genres"][genre] = {
            "candidates": int(rows.sum()),
            "good": int(y.sum()),
            "fast_good": fast_good,
            **{name: read(p, y, fast_good) for name, p in models.items()},
        }
    result["summary"] = {
        name: {
            "mean_auc": round(
                float(np.mean([g[name]["auc"] for g in result["genres"].values()])), 4
            ),
            "mean_p_at_80": round(
                float(
                    np.mean(
                        [
                            (g[name]["at_kept"]["0.80"] or {}).get("precision", 0.0)
                            for g in result["genres"].values()
                        ]
                    )
                ),
                4,
            ),
            "mean_ece": round(
                float(np.mean([g[name]["ece"] for g in result["genres"].values()])), 4
            ),
        }
        for name in ("linear", "pair", "mean", "logit_mean")
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
