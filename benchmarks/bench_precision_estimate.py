"""Leave-one-genre-out validation of the card's estimated precision (transnli.generator.precision):
for each genre of the judged sets left out in turn, the judge is trained and calibrated on the
others only, then asked to estimate the precision of what it accepts in the left-out genre; the
estimate is compared with the precision people measured there.

    .venv/bin/python benchmarks/judge_data.py --set dev      # and --set genres, --set test, once
    .venv/bin/python benchmarks/bench_precision_estimate.py [--write-judge] \
        > benchmarks/data/precision_estimate_logo.json

Genres: dev (WordNet example sentences), each genre of benchmarks/data/quality_genres.jsonl (news,
reviews, instructions, dialogue) and the test set (academic prose and man pages) as its own.
For a left-out genre G: the judge's head (train_judge.py's configuration) is fitted on every judged
candidate of the other genres of dev + genres (the test set is never trained on, so for G = test
that is all of them); its Platt calibration on out-of-fold scores (5 folds grouped by sentence) of
the other genres' gate candidates (what the filters and grammar check pass: what the judge decides
in the default preset), whose good share is the training prior. On G's judged gate candidates:
accepted = p >= the shipped threshold; measured = their good share (with its Wilson interval);
each method's estimate from the probabilities alone:
- mean: the mean p over the accepted (what the card said before);
- em: EM re-estimation of the prior over all of G's gate candidates (Saerens et al. 2002), the
  accepted's posteriors moved to it;
- bbse: black-box shift estimation (Lipton et al. 2018) with the hard classifier at the threshold:
  prior = (accepted share - FPR) / (TPR - FPR), TPR and FPR from the training genres' out-of-fold
  scores, precision = prior TPR / accepted share;
- bbse_posterior: the accepted's posteriors moved to BBSE's prior.
ECE: expected calibration error (10 bins) of the raw and of the EM-corrected probabilities over
G's gate candidates. The method with the smallest largest error is the one the card uses;
--write-judge records it, the largest error and the training prior in the shipped judge file.
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
from judge_data import CACHE, SETS  # noqa: E402
from train_judge import (  # noqa: E402
    OUT,
    Config,
    collapse,
    fit,
    linear_scores,
    load,
    mask,
    merge,
    out_of_fold,
    platt,
    population_keys,
    sigmoid,
)
from transnli.generator.precision import (  # noqa: E402
    METHODS,
    calibration_error,
    em_prior,
    shift_posteriors,
    wilson_interval,
)

CONFIG = Config(6, 16, 0.1, ("span_modified",))  # the shipped judge's (its training.model)
FOLDS = 5


def genre_of(data: dict, name: str) -> np.ndarray:
    """Each row's genre: the genre field of the genre set, else the set's own name."""
    if name != "genres":
        return np.array([name] * len(data["y"]))
    judged = load_judgements(SETS[name])
    return np.array([judged[k].get("genre") or "genres" for k in data["keys"]])


def load_all(sets: tuple[str, ...] = ("dev", "genres", "test")) -> dict:
    parts = []
    for name in sets:
        data = load(name)
        if data is None:
            sys.exit(f"no features for {name}: run benchmarks/judge_data.py --set {name}")
        pops = population_keys(name)
        data["set"] = np.array([name] * len(data["y"]))
        data["genre"] = genre_of(data, name)
        data["gate"] = mask(data, pops["gate"])
        parts.append(data)
    return merge(*parts)


def subset(data: dict, rows: np.ndarray) -> dict:
    return {k: v[rows] for k, v in data.items()}


def train_on(data: dict, rows: np.ndarray, threshold: float) -> dict:
    """The judge fitted on `rows`, calibrated on their out-of-fold gate scores, with what the
    estimators need from the training genres."""
    train = subset(data, rows)
    z_oof = out_of_fold(train, CONFIG, FOLDS, seed=0)
    gate = train["gate"]
    a, b = platt(z_oof[gate], train["y"][gate])
    p = sigmoid(a * z_oof[gate] + b)
    y = train["y"][gate]
    kept = p >= threshold
    model = collapse(*fit(train, np.arange(len(train["y"])), CONFIG), CONFIG, 10)
    return {
        "model": model,
        "a": a,
        "b": b,
        "prior": float(y.mean()),
        "tpr": float(kept[y == 1].mean()),
        "fpr": float(kept[y == 0].mean()),
        "ece_train": calibration_error(p, y),
    }


def estimates(p: np.ndarray, y: np.ndarray, judge: dict, threshold: float) -> dict:
    """Each method's estimate of the accepted's precision against the measured one."""
    accepted = p >= threshold
    share = float(accepted.mean())
    t = judge["prior"]
    em = em_prior(p, t)
    tpr, fpr = judge["tpr"], judge["fpr"]
    bbse = float(np.clip((share - fpr) / (tpr - fpr), 1e-3, 1 - 1e-3))
    est = {
        "mean": float(p[accepted].mean()),
        "em": float(shift_posteriors(p[accepted], t, em).mean()),
        "bbse": float(min(1.0, bbse * tpr / share)),
        "bbse_posterior": float(shift_posteriors(p[accepted], t, bbse).mean()),
    }
    good = int(y[accepted].sum())
    measured = good / int(accepted.sum())
    lo, hi = wilson_interval(good, int(accepted.sum()))
    return {
        "gate_candidates": len(p),
        "accepted": int(accepted.sum()),
        "measured": round(measured, 4),
        "measured_interval": [round(lo, 4), round(hi, 4)],
        "good_share_of_gate": round(float(y.mean()), 4),
        "training_prior": round(t, 4),
        "em_prior": round(em, 4),
        "bbse_prior": round(bbse, 4),
        "estimate": {k: round(v, 4) for k, v in est.items()},
        "error": {k: round(v - measured, 4) for k, v in est.items()},
        "ece_raw": round(calibration_error(p, y), 4),
        "ece_em": round(calibration_error(shift_posteriors(p, t, em), y), 4),
        "ece_bbse": round(calibration_error(shift_posteriors(p, t, bbse), y), 4),
    }


def summary(per_genre: dict) -> dict:
    methods = next(iter(per_genre.values()))["error"]
    out = {}
    for m in methods:
        errors = np.array([g["error"][m] for g in per_genre.values()])
        out[m] = {
            "max_abs_error": round(float(np.abs(errors).max()), 4),
            "mean_abs_error": round(float(np.abs(errors).mean()), 4),
            "rmse": round(float(np.sqrt((errors**2).mean())), 4),
            "within_0.03": int((np.abs(errors) <= 0.03).sum()),
        }
    for ece in ("ece_raw", "ece_em", "ece_bbse"):
        out[ece] = {
            "max": round(max(g[ece] for g in per_genre.values()), 4),
            "within_0.05": int(sum(g[ece] <= 0.05 for g in per_genre.values())),
        }
    return out


def training_population() -> dict:
    """From the judgements and the pipeline's populations alone (no language model): the good
    share of the training genres' gate candidates (the shipped calibration's base rate) and the
    number of good and bad ones, for the shipped judge's out-of-fold TPR and FPR."""
    good = bad = 0
    for name in ("dev", "genres"):
        judged = load_judgements(SETS[name])
        gate = population_keys(name)["gate"]
        verdicts = [bool(judged[k]["good"]) for k in gate if k in judged]
        good += sum(verdicts)
        bad += len(verdicts) - sum(verdicts)
    return {"good": good, "bad": bad, "prior": good / (good + bad)}


def shipped_on(name: str, shipped: dict) -> dict:
    """The shipped judge (trained on dev + genres, never on `name`) on the set `name`'s features
    (a judge_data.py file, or a sample of it): each method's estimate against the measured
    precision. TPR and FPR at the threshold are the shipped file's out-of-fold figures."""
    from transnli.generator.judge import Judge

    judge = Judge.from_dict(shipped, str(OUT))
    parts = []
    for stem in name.split(","):  # several files: samples of one set, read apart
        with np.load(CACHE / f"{stem}_L{judge.layer}.npz") as f:
            parts.append(
                {k: f[k] for k in ("keys", "y", "scalars", f"L{judge.layer}_span_modified")}
            )
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if len(set(data["keys"])) != len(data["keys"]):
        sys.exit(f"{name}: the files overlap")
    z = ((data["scalars"] - judge.scalar_mean) / judge.scalar_scale) @ judge.scalar_coef
    z = z + judge.intercept
    for block, coef in judge.vector_coef.items():
        z = z + data[f"L{judge.layer}_{block}"].astype(np.float64) @ coef
    p = np.round(judge.calibrate(z), 4)
    pop = training_population()
    cv = shipped["validation"]["cv_at_threshold"]
    stats = {
        "prior": pop["prior"],
        "tpr": cv["good"] / pop["good"],
        "fpr": (cv["kept"] - cv["good"]) / pop["bad"],
    }
    out = estimates(p, data["y"], stats, judge.threshold)
    accepted = p >= judge.threshold
    set_name = name.split(",")[0].split("-sample")[0]
    judged = load_judgements(SETS[set_name])
    genres = np.array([judged[k].get("genre") or set_name for k in data["keys"]])
    out["by_genre"] = {
        g: estimates(p[genres == g], data["y"][genres == g], stats, judge.threshold)
        for g in sorted(set(genres))
        if len(set(genres)) > 1
    }
    return {
        "set": name,
        "candidates": len(p),
        "training": pop | stats,
        **out,
        "user_review": user_review(p[accepted], data["y"][accepted]),
    }


def user_review(p: np.ndarray, good: np.ndarray, splits: int = 50) -> dict:
    """`transnli judge fit` measured: the accepted triples of a genre the judge never saw, as a
    user's review; the calibration refitted (review.refit.platt) on a random half of them, the
    figures read on the other half, before and after; averaged over `splits` seeded halvings
    (one halving of ~150 items is too noisy to read)."""
    from transnli.review.refit import figures, platt

    q = np.clip(p, 1e-4, 1 - 1e-4)
    s = np.log(q / (1 - q))
    rows = {"before": [], "after": []}
    for seed in range(splits):
        order = np.random.default_rng(seed).permutation(len(p))
        fit_rows, held = order[: len(p) // 2], order[len(p) // 2 :]
        alpha, beta = platt(s[fit_rows], good[fit_rows])
        new = 1 / (1 + np.exp(-(alpha * s[held] + beta)))
        rows["before"].append(figures(p[held], good[held]))
        rows["after"].append(figures(new, good[held]))

    def mean(side: str, key: str, f=lambda x: x) -> float:
        return round(float(np.mean([f(r[key]) for r in rows[side]])), 4)

    keys = ("log_loss", "brier", "ece", "estimate_error")
    return {
        "splits": splits,
        "fitted_on": len(p) // 2,
        "measured_on": len(p) - len(p) // 2,
        **{side: {k: mean(side, k) for k in keys} for side in rows},
        "mean_abs_estimate_error": {side: mean(side, "estimate_error", abs) for side in rows},
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-judge", action="store_true", help=f"Record the choice in {OUT}.")
    ap.add_argument(
        "--sets",
        default="dev,genres,test",
        help="Judged sets whose features to use (judge_data.py files); test is never trained on.",
    )
    ap.add_argument(
        "--shipped-on",
        default=None,
        help="Only the shipped judge on these judge_data.py file stems, comma-separated (e.g. "
        "test, or samples of it): no leave-one-genre-out, no retraining.",
    )
    args = ap.parse_args(argv)
    shipped = json.loads(OUT.read_text(encoding="utf-8"))
    threshold = float(shipped["threshold"])
    if args.shipped_on:
        print(json.dumps(shipped_on(args.shipped_on, shipped), indent=1))
        return
    data = load_all(tuple(args.sets.split(",")))
    trainable = data["set"] != "test"
    per_genre = {}
    for genre in sorted(set(data["genre"]), key=lambda g: (g == "test", g != "dev", g)):
        held = data["genre"] == genre
        judge = train_on(data, np.where(trainable & ~held)[0], threshold)
        rows = np.where(held & data["gate"])[0]
        z = linear_scores(judge["model"], data, rows, CONFIG)
        p = sigmoid(judge["a"] * z + judge["b"])
        per_genre[genre] = estimates(p, data["y"][rows], judge, threshold)
        print(f"{genre}: {json.dumps(per_genre[genre]['error'])}", file=sys.stderr, flush=True)
    table = summary(per_genre)
    candidates = [m for m in METHODS if m in table]  # what the card can compute
    chosen = min(candidates, key=lambda m: table[m]["max_abs_error"])
    pooled = trainable & data["gate"]
    result = {
        "protocol": "leave one genre out; the judge (head and Platt calibration) refitted on the "
        "other genres of dev + genres; estimates over the left-out genre's judged gate candidates",
        "threshold": threshold,
        "config": CONFIG.as_dict(),
        "genres": per_genre,
        "summary": table,
        "chosen": {
            "method": chosen,
            "max_abs_error": table[chosen]["max_abs_error"],
            "training_prior": round(float(data["y"][pooled].mean()), 4),
        },
    }
    if args.write_judge:
        shipped["training_prior"] = result["chosen"]["training_prior"]
        shipped["precision_estimate"] = {
            "method": chosen,
            "max_abs_error": table[chosen]["max_abs_error"],
            "validation": "leave-one-genre-out on dev, news, reviews, instructions, dialogue "
            "and test (benchmarks/bench_precision_estimate.py)",
            "genres": {g: r["error"][chosen] for g, r in per_genre.items()},
        }
        OUT.write_text(json.dumps(shipped, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        result["written"] = str(OUT.relative_to(OUT.parents[2]))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
