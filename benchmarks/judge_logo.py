"""The linear judge chosen by genres it never saw: leave-one-genre-out validation, a learning
curve, and the yield at the threshold, on every judged set.

    .venv/bin/python benchmarks/judge_data.py --set dev      # (genres, genres2, test) once each
    .venv/bin/python benchmarks/judge_logo.py [--out benchmarks/data/judge_logo.json]

Genres: the dev set's WordNet examples are one ("wordnet"), each genre of the genre sets is one
(news, reviews, dialogue, instructions; legal, satire, literature, encyclopedic, manual, games,
science), and the test set is one ("test"). For each genre G, every model below is trained on all
the other genres except test (test is never trained on), calibrated by Platt scaling on its
out-of-fold scores over the candidates the filters and grammar pass, and read on G:
- on the population the judge decides in the default preset (the gate: what the filters and the
  grammar check pass): AUC, the precision at 80% and 65% of the fast preset's good triples there,
  and at the threshold (0.55, the shipped judge's) the triples kept, the good ones, the precision
  and the good kept as a share of fast's (the yield); the expected calibration error;
- the models: "d" (the log-probability difference alone, ranking only), "scalars" (the ten
  likelihood features), and "shipped" (the scalars and the layer-6 span state of H', 16
  components, C 0.1: the shipped judge's configuration).
The learning curve trains "shipped" on 25/50/75/100% of the other genres' sentences (a fixed
seed) and reports the mean over left-out genres. Prints one JSON object. Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import load_judgements  # noqa: E402
from judge_data import SETS  # noqa: E402
from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from train_judge import (  # noqa: E402 - one definition of the linear judge and its figures
    Config,
    at_threshold,
    auc,
    collapse,
    fit,
    linear_scores,
    load,
    mask,
    merge,
    out_of_fold,
    platt,
    population_keys,
    precision_at_kept,
    reliability,
    sigmoid,
)

THRESHOLD = 0.55
MODELS = {
    "scalars": Config(6, 16, 0.1, ()),
    "shipped": Config(6, 16, 0.1, ("span_modified",)),
}
SHARES = (0.25, 0.5, 0.75, 1.0)


def all_sets() -> dict:
    """Every judged set's features with a genre and a gate/fast mark on each row."""
    parts = []
    for name in SETS:
        data = load(name)
        if data is None:
            continue
        judged = load_judgements(SETS[name])
        pops = population_keys(name)
        data["genre"] = np.array(
            [
                {"dev": "wordnet", "test": "test"}.get(name) or judged[k].get("genre") or name
                for k in data["keys"]
            ]
        )
        data["gate"] = mask(data, pops["gate"])
        data["fast"] = mask(data, pops["fast"])
        data["set"] = np.array([name] * len(data["y"]))
        parts.append(data)
    return merge_all(parts)


def merge_all(parts: list[dict]) -> dict:
    common = set.intersection(*(set(p) for p in parts))
    return merge(*({k: p[k] for k in common} for p in parts))


def subset(data: dict, rows: np.ndarray) -> dict:
    return {k: v[rows] for k, v in data.items()}


def train_model(train: dict, cfg: Config):
    """(model, a, b): fitted on every row, calibrated on out-of-fold scores of the gate rows."""
    z = out_of_fold(train, cfg, 5, 0)
    gate = train["gate"]
    a, b = platt(z[gate], train["y"][gate])
    model = collapse(*fit(train, np.arange(len(train["y"])), cfg), cfg, train["scalars"].shape[1])
    return model, a, b


def read_on(held: dict, p: np.ndarray) -> dict:
    gate = held["gate"]
    y = held["y"][gate]
    fast_good = int(held["y"][held["fast"]].sum())
    cut = at_threshold(p[gate], y, THRESHOLD)
    return {
        "gate_candidates": int(gate.sum()),
        "auc": auc(p[gate], y),
        "at_kept": precision_at_kept(p[gate], y, fast_good),
        "at_threshold": cut | {"yield_vs_fast": round(cut["good"] / fast_good, 3)},
        "fast": {"accepted": int(held["fast"].sum()), "good": fast_good},
        "ece": reliability(p[gate], y)["ece"],
        "estimate_mean_p_accepted": round(float(p[gate][p[gate] >= THRESHOLD].mean()), 4)
        if (p[gate] >= THRESHOLD).any()
        else None,
    }


def learning_curve(train: dict, held: dict, cfg: Config, seed: int = 0) -> dict:
    sentences = np.unique(train["sentences"])
    order = np.random.default_rng(seed).permutation(len(sentences))
    out = {}
    for share in SHARES:
        keep = set(sentences[order[: int(round(share * len(sentences)))]])
        rows = np.array([s in keep for s in train["sentences"]])
        model, a, b = train_model(subset(train, rows), cfg)
        p = sigmoid(a * linear_scores(model, held, np.arange(len(held["y"])), cfg) + b)
        r = read_on(held, p)
        out[f"{share:.2f}"] = {"auc": r["auc"], "p_at_80": (r["at_kept"]["0.80"] or {}).get(
            "precision"
        )}  # fmt: skip
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--no-curve", action="store_true")
    ap.add_argument(
        "--train-sets",
        default=None,
        metavar="SETS",
        help="train once on these sets only (e.g. dev,genres) and read every genre of the others, "
        "instead of leaving one genre out at a time",
    )
    args = ap.parse_args(argv)
    data = all_sets()
    trained_on = set(args.train_sets.split(",")) if args.train_sets else None
    readable = ~np.isin(data["set"], sorted(trained_on or ()))  # every genre when none named
    genres = sorted(set(data["genre"][readable]))
    result = {"threshold": THRESHOLD, "rows": len(data["y"]), "genres": {}}
    if trained_on:
        result["trained_on"] = sorted(trained_on)
    for genre in genres:
        held_rows = data["genre"] == genre
        if trained_on:
            train = subset(data, np.isin(data["set"], sorted(trained_on)))
        else:
            train = subset(data, ~held_rows & (data["set"] != "test"))
        held = subset(data, held_rows)
        row = {"candidates": int(held_rows.sum()), "good": int(held["y"].sum())}
        d = held["scalars"][:, 0]
        row["d"] = {
            "auc": auc(d[held["gate"]], held["y"][held["gate"]]),
            "at_kept": precision_at_kept(
                d[held["gate"]], held["y"][held["gate"]], int(held["y"][held["fast"]].sum())
            ),
        }
        for name, cfg in MODELS.items():
            model, a, b = train_model(train, cfg)
            p = sigmoid(a * linear_scores(model, held, np.arange(len(held["y"])), cfg) + b)
            row[name] = read_on(held, p)
            good = held["y"][held["gate"]]
            accepted = p[held["gate"]] >= THRESHOLD
            row[name]["measured_precision_accepted"] = (
                round(float(good[accepted].mean()), 4) if accepted.any() else None
            )
        if not args.no_curve:
            row["curve_shipped"] = learning_curve(train, held, MODELS["shipped"])
        result["genres"][genre] = row
        print(json.dumps({genre: row}), file=sys.stderr, flush=True)
    result["summary"] = summary(result["genres"])
    print_result(result, args.out)


def summary(per_genre: dict) -> dict:
    """Means over left-out genres, and the worst genre, per model."""
    out = {}
    for name in ("d", *MODELS):
        vals = {
            g: (r[name]["at_kept"]["0.80"] or {}).get("precision")
            for g, r in per_genre.items()
            if r[name]["at_kept"]
        }
        vals = {g: v for g, v in vals.items() if v is not None}
        if not vals:
            continue
        worst = min(vals, key=vals.get)
        out[name] = {
            "mean_p_at_80": round(float(np.mean(list(vals.values()))), 4),
            "worst_genre": worst,
            "worst_p_at_80": vals[worst],
        }
        if name in MODELS:
            out[name]["mean_ece"] = round(
                float(np.mean([r[name]["ece"] for r in per_genre.values()])), 4
            )
            out[name]["max_ece"] = max(r[name]["ece"] for r in per_genre.values())
    return out


if __name__ == "__main__":
    main()
