"""Judges that read the pair beside the linear judge, and unfitted stacks of them, on genres none of
them was trained on.

    .venv/bin/python benchmarks/train_pair_judge.py --leave-out genres2,test --score gate \
        --scores PAIR.jsonl --out PAIR.json
    .venv/bin/python benchmarks/train_cross_judge.py --leave-out genres2,test --score gate \
        --scores CROSS.jsonl --out CROSS.json
    .venv/bin/python benchmarks/judge_stack.py --train-sets dev,genres \
        --scores pair=PAIR.jsonl --scores cross=CROSS.jsonl [--out benchmarks/data/judge_stack.json]
    .venv/bin/python benchmarks/judge_stack.py --train-sets dev,genres,genres2 \
        --except-genres news,legal --scores cross=CROSS.jsonl  # judges that left out two genres
    .venv/bin/python benchmarks/judge_stack.py --merge A.json B.json  # runs that left out others
    .venv/bin/python benchmarks/judge_stack.py ... --rows ROWS.jsonl  # each candidate's numbers
    .venv/bin/python benchmarks/judge_stack.py ... --stack-calibration CAL.json  # a fitted stack

The linear judge (the shipped configuration, judge_logo.py's "shipped") is trained on the sets the
other judges were (`--train-sets`) and calibrated the same way; every judge is read on the
left-out candidates that all the score files hold (the gate population of each left-out genre).
Reported per genre: AUC, precision at 80% and 65% of the fast preset's good triples, precision at
the threshold, ECE, for "linear", each named judge, and stacks that need no fitting (so nothing is
tuned on a left-out genre): "linear+NAME" (the mean of the two calibrated probabilities) and, with
two or more named judges, "all" (the mean of every judge's). `errors` pools the genres: for each
judge, the bad candidates it still keeps at the cut that keeps 80% of fast's good triples in each
genre, by the error type people gave them. With --stack-calibration (fit_stack_calibration.py's
output) the "linear+NAME" stacks are mapped as a stacked folder with that calibration maps them;
--rows writes every left-out candidate's probabilities, which fit_stack_calibration.py reads.
Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import load_judgements  # noqa: E402
from judge_data import SETS  # noqa: E402
from judge_logo import MODELS, THRESHOLD, all_sets, subset, train_model  # noqa: E402
from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from train_judge import (  # noqa: E402
    at_threshold,
    auc,
    linear_scores,
    precision_at_kept,
    reliability,
    sigmoid,
)
from train_pair_judge import read_scores  # noqa: E402 - one reader of judges' score files


def read(p: np.ndarray, y: np.ndarray, fast_good: int, thresholds=()) -> dict:
    return {
        "auc": auc(p, y),
        "at_kept": precision_at_kept(p, y, fast_good),
        "at_threshold": at_threshold(p, y, THRESHOLD),
        **{f"at_{t}": at_threshold(p, y, t) for t in thresholds},
        "ece": reliability(p, y)["ece"],
    }


def pooled_at(genres: dict, name: str, key: str) -> dict:
    """One cut over every genre: triples kept, good, precision, and good as a share of fast's."""
    kept = sum(g[name][key]["kept"] for g in genres.values())
    good = sum(g[name][key]["good"] for g in genres.values())
    fast_good = sum(g["fast_good"] for g in genres.values())
    return {
        "kept": kept,
        "good": good,
        "precision": round(good / kept, 4) if kept else None,
        "yield": round(good / fast_good, 4),
    }


def named_scores(specs: list[str]) -> dict[str, dict[str, float]]:
    """NAME=FILE pairs -> {name: {key: p}}; a malformed one exits with its text."""
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path or name in ("linear", "all"):
            sys.exit(f"--scores {spec}: expected NAME=FILE, NAME not 'linear' or 'all'")
        out[name] = read_scores(path)
    return out


def error_types() -> dict[str, str]:
    """Each judged candidate's error type (bad ones; 'unlabelled' where none was given)."""
    types = {}
    for path in SETS.values():
        if Path(path).is_file():
            for key, j in load_judgements(path).items():
                if not j["good"]:
                    types[key] = j.get("error_type") or "unlabelled"
    return types


def stacks(
    linear: np.ndarray, judged: dict[str, np.ndarray], calibration: dict | None = None
) -> dict[str, np.ndarray]:
    """Each judge, and the mean of the linear judge's probability with each named one's (mapped
    by `calibration`, fit_stack_calibration.py's, when given: as a stacked folder does)."""
    from transnli.generator.pair_judge import stack_probability

    models = {"linear": linear, **judged}
    for name, p in judged.items():
        models[f"linear+{name}"] = (
            (linear + p) / 2
            if calibration is None
            else np.array(
                [
                    stack_probability(float(q), float(x), calibration)
                    for q, x in zip(linear, p, strict=True)
                ]
            )
        )
    if len(judged) > 1:
        models["all"] = np.mean([linear, *judged.values()], axis=0)
    return models


def summary(genres: dict, names, thresholds=()) -> dict:
    def mean(values):
        return round(float(np.mean(list(values))), 4)

    return {
        name: {
            **{
                f"pooled_at_{key}": pooled_at(genres, name, f"at_{key}")
                for key in ("threshold", *thresholds)
            },
            "mean_auc": mean(g[name]["auc"] for g in genres.values()),
            "mean_p_at_80": mean(
                (g[name]["at_kept"]["0.80"] or {}).get("precision", 0.0) for g in genres.values()
            ),
            "mean_ece": mean(g[name]["ece"] for g in genres.values()),
            "worst_p_at_80": min(
                ((g[name]["at_kept"]["0.80"] or {}).get("precision", 0.0), genre)
                for genre, g in genres.items()
            ),
        }
        for name in names
    }


def judge_names(genres: dict) -> list[str]:
    """The judges and stacks a run read, in its order: each genre's keys after its three counts
    (candidates, good, fast_good)."""
    return list(next(iter(genres.values())))[3:]


def merged(paths: list[Path]) -> dict:
    """Several runs of this script, each reading genres its judges left out, as one: their genres
    side by side, the summary and the error counts over all of them."""
    runs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]
    genres: dict = {}
    for path, run in zip(paths, runs, strict=True):
        twice = sorted(set(genres) & set(run["genres"]))
        if twice:
            sys.exit(f"--merge {path}: genres {', '.join(twice)} are read by an earlier file too")
        genres.update(run["genres"])
    names = judge_names(genres)
    bad_kept: dict[str, Counter] = {}
    for run in runs:
        for name, counts in run["errors"]["kept_at_80"].items():
            bad_kept.setdefault(name, Counter()).update(counts)
    return {
        "merged": [
            {"file": str(p), **{k: r.get(k) for k in ("trained_on", "except_genres", "judges")}}
            for p, r in zip(paths, runs, strict=True)
        ],
        "threshold": runs[0]["threshold"],
        "thresholds": runs[0]["thresholds"],
        "genres": genres,
        "summary": summary(genres, names, runs[0]["thresholds"]),
        "errors": {
            "bad_in_gate": dict(
                sorted(sum((Counter(r["errors"]["bad_in_gate"]) for r in runs), Counter()).items())
            ),
            "kept_at_80": {name: dict(sorted(c.items())) for name, c in bad_kept.items()},
        },
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scores", action="append", help="NAME=FILE (repeatable)")
    ap.add_argument("--train-sets")
    ap.add_argument(
        "--thresholds",
        default="",
        help="more cuts to read every judge at, comma-separated (besides the linear judge's)",
    )
    ap.add_argument(
        "--except-genres",
        default="",
        help="genres of the training sets the linear judge is not trained on (comma-separated): "
        "the ones the named judges left out",
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        help="instead of reading judges: outputs of earlier runs whose judges left out different "
        "genres, summarised as one",
    )
    ap.add_argument(
        "--stack-calibration",
        type=Path,
        default=None,
        help="fit_stack_calibration.py's output: map each linear+NAME mean by its calibration",
    )
    ap.add_argument(
        "--rows",
        type=Path,
        default=None,
        help="also write each left-out candidate's probabilities here (JSON lines), for "
        "fit_stack_calibration.py",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.merge:
        print_result(merged(args.merge), args.out)
        return
    if not args.scores or not args.train_sets:
        ap.error("--scores and --train-sets are required (or --merge)")
    scores = named_scores(args.scores)
    thresholds = [float(t) for t in args.thresholds.split(",") if t.strip()]
    common = set.intersection(*(set(s) for s in scores.values()))
    data = all_sets()
    cfg = MODELS["shipped"]
    excepted = [g for g in args.except_genres.split(",") if g.strip()]
    training = np.isin(data["set"], args.train_sets.split(",")) & ~np.isin(data["genre"], excepted)
    model, a, b = train_model(subset(data, training), cfg)
    types = error_types()
    calibration = (
        json.loads(args.stack_calibration.read_text(encoding="utf-8"))["calibration"]
        if args.stack_calibration
        else None
    )
    per_row = []
    result = {
        "threshold": THRESHOLD,
        "thresholds": thresholds,
        "trained_on": args.train_sets.split(","),
        "except_genres": excepted,
        "judges": sorted(scores),
        "stack_calibration": calibration,
        "genres": {},
    }
    bad_kept: dict[str, Counter] = {}
    bad_all: Counter = Counter()
    left_out = sorted({g for g, k in zip(data["genre"], data["keys"], strict=True) if k in common})
    for genre in left_out:
        held = subset(data, data["genre"] == genre)
        rows = np.array([k in common for k in held["keys"]]) & held["gate"]
        keys = held["keys"][rows]
        fast_good = int(held["y"][held["fast"]].sum())
        y = held["y"][rows]
        linear = sigmoid(a * linear_scores(model, held, np.flatnonzero(rows), cfg) + b)
        judged = {n: np.array([s[k] for k in keys]) for n, s in scores.items()}
        models = stacks(linear, judged, calibration)
        per_row += [
            {
                "genre": genre,
                "key": str(k),
                "good": int(good),
                "fast_good": fast_good,
                "linear": round(float(q), 4),
                **{n: float(p[i]) for n, p in judged.items()},
            }
            for i, (k, good, q) in enumerate(zip(keys, y, linear, strict=True))
        ]
        figures = {name: read(p, y, fast_good, thresholds) for name, p in models.items()}
        result["genres"][genre] = {
            "candidates": int(rows.sum()),
            "good": int(y.sum()),
            "fast_good": fast_good,
            **figures,
        }
        bad_all.update(types[k] for k, good in zip(keys, y, strict=True) if not good)
        for name, p in models.items():
            cut = (figures[name]["at_kept"]["0.80"] or {}).get("threshold", np.inf)
            kept = Counter(
                types[k] for k, good, x in zip(keys, y, p, strict=True) if not good and x >= cut
            )
            bad_kept.setdefault(name, Counter()).update(kept)
    names = judge_names(result["genres"])
    result["summary"] = summary(result["genres"], names, thresholds)
    result["errors"] = {
        "bad_in_gate": dict(sorted(bad_all.items())),
        "kept_at_80": {name: dict(sorted(c.items())) for name, c in bad_kept.items()},
    }
    if args.rows:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in per_row)
        args.rows.write_text(text, encoding="utf-8")
    print_result(result, args.out)


if __name__ == "__main__":
    main()
