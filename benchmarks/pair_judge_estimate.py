"""How far a pair judge's own card estimate (the mean p of what it keeps) strays from people's
verdicts, genre by genre, on genres it never saw: read from the score files that
train_pair_judge.py --scores and read_pair_judge.py --scores write (one line a gate candidate),
each candidate's genre and verdict from the judged sets.

    .venv/bin/python benchmarks/pair_judge_estimate.py --threshold 0.5 \
        --scores benchmarks/data/pair_judge_compact_trained_all_but_test_genres4_scores.jsonl \
        --scores benchmarks/data/pair_judge_compact_read_genres5_genres6_scores.jsonl

Per genre: gate candidates, good, AUC, ECE (10 bins) with its sampling floor (the mean ECE of
labels drawn from the judge's own p, 200 draws, and how often that is within 0.05), and at the
threshold: kept, good, precision (Wilson 95%), the estimate (mean p over the kept) and its error
(estimate - precision). Summary: mean AUC, mean ECE, how many genres have ECE within 0.05 against
how many a perfectly calibrated judge would on average, the kept and good pooled over the genres,
and the largest absolute error over the genres with at least --min-kept kept triples (smaller ones
measure their own sampling more than the estimator): what a folder's
precision_estimate.max_abs_error would have to record; and the sampling floor over those genres
(`sampling_floor`): how many of them an estimate
equal to each genre's true precision would bring within 0.03 of its measured share.

With `--calibration-scores` (one per `--scores`, in the same order: the file train_pair_judge.py
--calibration-scores wrote for the judge that scored it), each genre also gets the label-shift
correction the issue proposes (EM prior re-estimation, Saerens et al. 2002): the training prior is
the good share of that judge's calibration rows among the gate candidates (the population its
scores are read on), the genre's prior is re-estimated over its gate candidates, and the kept
posteriors are moved to it (`em_estimate`, `em_error`; the summary's `methods`).

With `--user-review`, each genre also gets what `transnli judge fit` gains there for a lone pair
judge folder (its calibration refitted on a user's reviewed triples): the genre's kept triples,
judged by people, stand for a user's review, refitted on a random half and read on the other
(bench_precision_estimate.py's `user_review`, 50 halvings); the summary's `user_review` counts
over the genres with at least --min-kept kept. Prints one JSON object. Not a test: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import print_result  # noqa: E402 - one way to print and save a result
from train_judge import (  # noqa: E402 - every judge's figures
    at_threshold,
    auc,
    gate_keys,
    perfectly_calibrated_eces,
    reliability,
)
from train_pair_judge import judged_rows, read_scores  # noqa: E402 - the score files' reader
from transnli.generator.precision import (  # noqa: E402 - the card's own correction
    em_prior,
    shift_posteriors,
    wilson_interval,
)

ECE_TARGET = 0.05  # issue 39's and 40's: ECE at or under this on every genre never trained on


def genre_figures(
    p: np.ndarray, y: np.ndarray, threshold: float, training_prior: float | None = None
) -> dict:
    """One genre's figures at `threshold`; with the scoring judge's `training_prior`, the EM
    label-shift estimate beside the plain mean."""
    kept = p >= threshold
    cut = at_threshold(p, y, threshold)
    floor = perfectly_calibrated_eces(p)
    out = {
        "candidates": len(p),
        "good": int(y.sum()),
        "auc": auc(p, y),
        "ece": reliability(p, y)["ece"],
        "ece_floor": round(float(floor.mean()), 4),
        f"ece_chance_within_{ECE_TARGET}": round(float((floor <= ECE_TARGET).mean()), 3),
        "kept": cut["kept"],
    }
    if cut["kept"]:
        estimate = float(p[kept].mean())
        out.update(
            kept_good=cut["good"],
            precision=cut["precision"],
            interval=[round(x, 4) for x in wilson_interval(cut["good"], cut["kept"])],
            estimate=round(estimate, 4),
            estimate_error=round(estimate - cut["good"] / cut["kept"], 4),
        )
        if training_prior is not None:
            prior = em_prior(p, training_prior)
            shifted = float(shift_posteriors(p[kept], training_prior, prior).mean())
            out.update(
                em_prior=round(prior, 4),
                em_estimate=round(shifted, 4),
                em_error=round(shifted - cut["good"] / cut["kept"], 4),
            )
    return out


def user_review_summary(genres: dict[str, dict]) -> dict:
    """What `judge fit` gains over `genres` (those whose halves the command accepts): the
    estimate's mean absolute error and the ECE on the held-out halves, before and after the refit,
    and the error under each rule for refitting only some of the time."""
    read = {g: f["user_review"] for g, f in genres.items() if f["user_review"]["splits"]}
    if not read:
        return {"genres": 0}

    def side(name: str) -> dict:
        errors = [r["mean_abs_estimate_error"][name] for r in read.values()]
        eces = [r[name]["ece"] for r in read.values()]
        return {
            "mean_abs_estimate_error": round(float(np.mean(errors)), 4),
            "within_0.03": sum(e <= 0.03 for e in errors),
            "mean_ece": round(float(np.mean(eces)), 4),
            f"ece_within_{ECE_TARGET}": sum(e <= ECE_TARGET for e in eces),
        }

    return {
        "genres": len(read),
        "not_read": sorted(g for g in genres if g not in read),
        "before": side("before"),
        "after": side("after"),
        "error_smaller_after": sum(
            r["mean_abs_estimate_error"]["after"] < r["mean_abs_estimate_error"]["before"]
            for r in read.values()
        ),
        "refit_only_when": {
            rule: round(float(np.mean([r["refit_only_when"][rule] for r in read.values()])), 4)
            for rule in next(iter(read.values()))["refit_only_when"]
        },
    }


def error_summary(genres: dict[str, dict], field: str) -> dict:
    """How an estimate's `field` errors fall over `genres`: within 0.03, mean and largest."""
    errors = {g: abs(f[field]) for g, f in genres.items()}
    worst = max(errors, key=errors.get)
    return {
        "within_0.03": sum(e <= 0.03 for e in errors.values()),
        "mean_abs_error": round(float(np.mean(list(errors.values()))), 4),
        "max_abs_error": {"genre": worst, "error": genres[worst][field]},
    }


def calibration_priors(pairs: list[tuple[dict[str, float], Path]]) -> dict[str, float]:
    """Each scored candidate's training prior: the good share among the gate candidates of the
    calibration rows of the judge that scored it (`pairs`: its scores, its calibration file)."""
    judged = {r["key"]: r for r in judged_rows()}
    priors = {}
    for scores, calibration in pairs:
        rows = [judged[k] for k in read_scores(calibration) if k in judged]
        gate = gate_keys({r["set"] for r in rows})
        good = [r["good"] for r in rows if r["key"] in gate]
        if not good:
            sys.exit(f"--calibration-scores {calibration}: no gate candidate among its rows")
        priors.update(dict.fromkeys(scores, float(np.mean(good))))
    return priors


def sampling_floor(genres: dict[str, dict], tolerance: float = 0.03) -> dict:
    """What sampling alone allows: were each genre's estimate its true precision, the share of
    its `kept` triples people find good would still stray binomially. The expected number of
    genres within `tolerance`, the chance that all are, and how many errors lie beyond the 95%
    sampling spread (those the estimator itself must answer for)."""
    from scipy.stats import binom

    within, beyond = [], 0
    for f in genres.values():
        n, q = f["kept"], f["estimate"]
        lo, hi = int(np.ceil(n * (q - tolerance) - 1e-9)), int(np.floor(n * (q + tolerance) + 1e-9))
        within.append(float(binom.cdf(hi, n, q) - binom.cdf(lo - 1, n, q)))
        beyond += abs(f["estimate_error"]) > 1.96 * np.sqrt(q * (1 - q) / n)
    return {
        "tolerance": tolerance,
        f"expected_within_{tolerance}": round(sum(within), 2),
        f"chance_all_within_{tolerance}": float(f"{np.prod(within):.3g}"),
        "errors_beyond_95_sampling_spread": int(beyond),
    }


def estimate_figures(
    scores: dict[str, float],
    threshold: float,
    min_kept: int = 50,
    priors: dict[str, float] | None = None,
    user_review: bool = False,
) -> dict:
    """Per genre of the scored candidates, and summed up: what the judge's card estimate at
    `threshold` would have said, against people's verdicts (and the EM correction's, given each
    candidate's training prior in `priors`; and what a user's review gains, with
    `user_review`); exits on a key no judged set has."""
    if user_review:
        from bench_precision_estimate import user_review as review_halves

    judged = {r["key"]: r for r in judged_rows()}
    unknown = next((k for k in scores if k not in judged), None)
    if unknown is not None:
        sys.exit(f"--scores: {unknown!r} is no judged candidate of benchmarks/data's sets")
    rows = {k: (judged[k]["genre"], judged[k]["good"], p) for k, p in scores.items()}
    genres = {}
    for name in sorted({g for g, _, _ in rows.values()}):
        keys = [k for k, (g, _, _) in rows.items() if g == name]
        y, p = (np.array([rows[k][i] for k in keys]) for i in (1, 2))
        prior = None
        if priors is not None:
            found = {priors[k] for k in keys}
            if len(found) != 1:
                sys.exit(f"genre {name}: scored by judges of different training priors {found}")
            prior = found.pop()
        genres[name] = genre_figures(p, y, threshold, prior)
        if user_review:
            kept = p >= threshold
            genres[name]["user_review"] = review_halves(p[kept], y[kept])
    counted = {
        g: abs(f["estimate_error"])
        for g, f in genres.items()
        if f["kept"] >= min_kept and "estimate_error" in f
    }
    worst = max(counted, key=counted.get) if counted else None
    kept = sum(f["kept"] for f in genres.values())
    kept_good = sum(f.get("kept_good", 0) for f in genres.values())
    compared = {g: genres[g] for g in counted}
    shift = {}
    if priors is not None and compared:
        shift = {"mean": error_summary(compared, "estimate_error")}
        shift["em"] = error_summary(compared, "em_error")
    return {
        "summary": {
            "genres": len(genres),
            "mean_auc": round(float(np.mean([f["auc"] for f in genres.values()])), 4),
            "mean_ece": round(float(np.mean([f["ece"] for f in genres.values()])), 4),
            f"ece_within_{ECE_TARGET}": int(sum(f["ece"] <= ECE_TARGET for f in genres.values())),
            # were the judge perfectly calibrated on each genre, ECE would still stray by sampling
            f"expected_ece_within_{ECE_TARGET}_if_calibrated": round(
                sum(f[f"ece_chance_within_{ECE_TARGET}"] for f in genres.values()), 1
            ),
            "pooled_at_threshold": {
                "kept": kept,
                "good": kept_good,
                "precision": round(kept_good / kept, 4) if kept else None,
            },
            "min_kept": min_kept,
            "within_0.03": sum(e <= 0.03 for e in counted.values()),
            "counted": len(counted),
            "max_abs_error": {"genre": worst, "error": counted.get(worst)},
            "sampling_floor": sampling_floor({g: genres[g] for g in counted}),
            **({"methods": shift} if shift else {}),
            **({"user_review": user_review_summary(compared)} if user_review else {}),
        },
        "genres": genres,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scores", type=Path, action="append", required=True)
    ap.add_argument(
        "--calibration-scores",
        type=Path,
        action="append",
        default=None,
        help="the calibration scores of the judge behind each --scores, in the same order",
    )
    ap.add_argument("--threshold", type=float, required=True)
    ap.add_argument("--min-kept", type=int, default=50)
    ap.add_argument(
        "--user-review",
        action="store_true",
        help="also what `transnli judge fit` gains in each genre (its kept triples as a review)",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.calibration_scores and len(args.calibration_scores) != len(args.scores):
        ap.error("--calibration-scores: give one for each --scores, in the same order")
    read = [read_scores(path) for path in args.scores]
    scores = {k: p for one in read for k, p in one.items()}
    priors = None
    if args.calibration_scores:
        priors = calibration_priors(list(zip(read, args.calibration_scores, strict=True)))
    print_result(
        {
            "benchmark": "pair_judge_estimate",
            "scores": [str(p) for p in args.scores],
            "calibration_scores": [str(p) for p in args.calibration_scores or []],
            "threshold": args.threshold,
            **estimate_figures(scores, args.threshold, args.min_kept, priors, args.user_review),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
