"""Does a calibration fitted on genres a judge never saw carry to another unseen genre? Refits the
pair judge's probability by one more Platt step (logistic regression on logit p) over the gate
candidates of the genres that folds of its recipe read out of genre, and reads what that does to
the ECE and to the card's estimate (the mean p of what the shipped cut keeps) genre by genre:

- nested over the folds: for each fold, the map is fitted on the other folds' out-of-genre
  scores and applied to this fold's genres;
- on a judge's own unseen genres (`--apply`): the map fitted on every fold given, applied to the
  score files of `--apply` (e.g. the shipped judge's scores of genres it never saw; give folds
  that do not read those genres).

    .venv/bin/python benchmarks/pair_judge_recalibration.py --threshold 0.56 \
        --fold F1_scores.jsonl --fold F2_scores.jsonl ... [--apply S.jsonl ...] [--out FILE]

A monotone map leaves every decision at the cut as it was (the cut moves with it); only the
probabilities, and so the ECE and the estimate, change. Genres with fewer than --min-kept kept
triples are left out of the summary. Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import print_result  # noqa: E402 - one way to print and save a result
from train_judge import gate_keys, reliability  # noqa: E402
from train_pair_judge import judged_rows, read_scores  # noqa: E402

EDGE = 1e-4  # the score files' p have four digits: 0 and 1 stand for "beyond 1e-4"


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EDGE, 1 - EDGE)
    return np.log(p / (1 - p))


def fit_map(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of the Platt step on logit p that best predicts y."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1e6).fit(logit(p)[:, None], y)
    return float(model.coef_[0][0]), float(model.intercept_[0])


def apply_map(p: np.ndarray, slope: float, intercept: float) -> np.ndarray:
    return 1 / (1 + np.exp(-(slope * logit(p) + intercept)))


def genre_effects(
    p: np.ndarray, y: np.ndarray, genres: list[str], mapped: np.ndarray, threshold: float
) -> dict:
    """Per genre: ECE and the estimate's error at `threshold`, before and after the map."""
    out = {}
    for genre in sorted(set(genres)):
        mine = np.array(genres) == genre
        kept = mine & (p >= threshold)
        measured = float(y[kept].mean()) if kept.any() else None
        out[genre] = {
            "candidates": int(mine.sum()),
            "kept": int(kept.sum()),
            "ece": [
                reliability(p[mine], y[mine])["ece"],
                reliability(mapped[mine], y[mine])["ece"],
            ],
            "estimate_error": None
            if measured is None
            else [
                round(float(p[kept].mean()) - measured, 4),
                round(float(mapped[kept].mean()) - measured, 4),
            ],
        }
    return out


def summary(genres: dict, min_kept: int) -> dict:
    """Before and after, over the genres with at least `min_kept` kept."""
    counted = [g for g in genres.values() if g["kept"] >= min_kept]
    if not counted:
        return {"counted": 0}
    out = {"counted": len(counted)}
    for i, when in enumerate(("before", "after")):
        ece = np.array([g["ece"][i] for g in counted])
        err = np.abs([g["estimate_error"][i] for g in counted])
        out[when] = {
            "ece_within_0.05": int((ece <= 0.05).sum()),
            "mean_ece": round(float(ece.mean()), 4),
            "estimate_within_0.03": int((err <= 0.03).sum()),
            "estimate_mean_abs_error": round(float(err.mean()), 4),
            "estimate_max_abs_error": round(float(err.max()), 4),
        }
    return out


def gate_rows(path: Path, judged: dict, gate: set[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """A score file's gate candidates: p, people's verdict, genre."""
    scores = read_scores(path)
    keys = [k for k in scores if k in gate and k in judged]
    if not keys:
        sys.exit(f"{path}: no judged gate candidate")
    return (
        np.array([scores[k] for k in keys]),
        np.array([judged[k]["good"] for k in keys]),
        [judged[k]["genre"] for k in keys],
    )


def pooled(parts: list[tuple]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Several score files' gate rows (`gate_rows`) as one: p, verdicts, genres."""
    return (
        np.concatenate([part[0] for part in parts]),
        np.concatenate([part[1] for part in parts]),
        [genre for part in parts for genre in part[2]],
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fold", type=Path, action="append", required=True)
    ap.add_argument("--apply", type=Path, action="append", default=[])
    ap.add_argument("--threshold", type=float, required=True)
    ap.add_argument("--min-kept", type=int, default=50)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if len(args.fold) < 2:
        ap.error("--fold: give at least two, so that each can be read by a map fitted on others")
    judged = {r["key"]: r for r in judged_rows()}
    gate = gate_keys({r["set"] for r in judged.values()})
    folds = {str(path): gate_rows(path, judged, gate) for path in args.fold}
    nested = {}
    for name, (p, y, genres) in folds.items():
        others, other_y, _ = pooled([f for other, f in folds.items() if other != name])
        slope, intercept = fit_map(others, other_y)
        nested.update(genre_effects(p, y, genres, apply_map(p, slope, intercept), args.threshold))
    result = {
        "benchmark": "pair_judge_recalibration",
        "folds": list(folds),
        "threshold": args.threshold,
        "nested": {"summary": summary(nested, args.min_kept), "genres": nested},
    }
    if args.apply:
        slope, intercept = fit_map(*pooled(list(folds.values()))[:2])
        p, y, genres = pooled([gate_rows(a, judged, gate) for a in args.apply])
        applied = genre_effects(p, y, genres, apply_map(p, slope, intercept), args.threshold)
        result["applied"] = {
            "scores": [str(a) for a in args.apply],
            "map": {"slope": round(slope, 4), "intercept": round(intercept, 4)},
            "summary": summary(applied, args.min_kept),
            "genres": applied,
        }
    print_result(result, args.out)


if __name__ == "__main__":
    main()
