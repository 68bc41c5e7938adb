"""Fit and validate the map a stacked pair-judge folder applies to the mean of its two
probabilities (transnli.generator.pair_judge.stack_probability), on genres its judges never saw,
and validate the card's precision estimate with it.

    .venv/bin/python benchmarks/judge_stack.py --train-sets dev,genres,genres2 \
        --except-genres literature,satire,legal,news,dialogue --scores pair=HALF_A.jsonl \
        --rows ROWS_A.jsonl          # and the same for the other half (ROWS_B.jsonl)
    .venv/bin/python benchmarks/judge_stack.py --train-sets dev,genres --scores pair=SHIPPED.jsonl \
        --rows ROWS_TEST.jsonl       # the shipped judges on the test set
    .venv/bin/python benchmarks/fit_stack_calibration.py --rows ROWS_A.jsonl --rows ROWS_B.jsonl \
        --test ROWS_TEST.jsonl --hold-out test --write CAL.json

Why a map: the mean of two calibrated probabilities is pulled towards 0.5 wherever the two judges
disagree, so the stack understates how sure it is and the card's estimate (the mean p_good of the
accepted triples) comes out low. The map is p = sigmoid(a logit(mean) + b), fitted by maximum
likelihood with each genre weighing the same; four are read: none (a = 1, b = 0), a shift (b
alone), a slope (a alone) and the full Platt fit. The one chosen is the rule the linear judge's
estimate was chosen by: the smallest largest error of the card's estimate on a genre left out.

Each --rows file holds the candidates of the genres one pair of judges (a pair judge and a linear
judge trained without them) left out. Cross-validation: the map is fitted on the other files' rows
and read on this file's genres, so every figure is on genres that neither the judges nor the map
saw. Genres named by --hold-out are never fitted on nor read there (the test set). The map
written is fitted on every file's rows but those; --test reads each map with the shipped judges
on the held-out genre, and that error counts in the estimate's recorded largest error.

Reported per genre: candidates, ECE of the plain mean and of the mapped stack (10 bins), the ECE a
perfectly calibrated judge would show on as many candidates with the same probabilities (the
sampling floor: 200 draws, seed 0), and at the threshold (on the plain mean's scale; the map keeps
the order, so a folder's mapped threshold keeps the same candidates) the measured precision
against the mean probability over the kept, plain and mapped: the card's estimate and its error.
`user_review`: what `transnli judge fit` gains in each genre, its kept triples standing for a
user's review (refitted on half, read on the other half). Prints one JSON object; --write also
saves it (never over an existing file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from train_judge import perfectly_calibrated_eces, reliability  # noqa: E402

FLOOR_DRAWS = 200


def read_rows(path: Path, judge: str) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    missing = [i + 1 for i, r in enumerate(rows) if judge not in r or "linear" not in r]
    if missing:
        sys.exit(f"{path}:{missing[0]}: no '{judge}' or 'linear' probability")
    return rows


def plain_mean(rows: list[dict], judge: str) -> np.ndarray:
    return np.array([(r["linear"] + r[judge]) / 2 for r in rows])


#: the maps read, from none to the full Platt fit; which parameters each one fits
MAPS = {"none": (), "shift": ("b",), "slope": ("a",), "full": ("a", "b")}


def fit_map(rows: list[dict], judge: str, kind: str) -> dict[str, float]:
    """p = sigmoid(a logit(mean) + b) with the parameters MAPS[kind] names fitted by maximum
    likelihood (the others at a = 1, b = 0), each genre weighing the same."""
    from scipy.optimize import minimize
    from transnli.generator.pair_judge import stack_log_odds

    free = MAPS[kind]
    genres = [r["genre"] for r in rows]
    counts = {g: genres.count(g) for g in set(genres)}
    weights = np.array([len(rows) / (len(counts) * counts[g]) for g in genres])
    x = np.array([stack_log_odds(r["linear"], r[judge]) for r in rows])
    y = np.array([r["good"] for r in rows])

    def parameters(theta) -> tuple[float, float]:
        return (theta[0] if "a" in free else 1.0), (theta[1] if "b" in free else 0.0)

    def loss(theta) -> float:
        a, b = parameters(theta)
        z = a * x + b
        return float(np.sum(weights * (np.logaddexp(0.0, z) - y * z)))

    a, b = parameters(minimize(loss, np.array([1.0, 0.0]), method="BFGS").x if free else (1, 0))
    return {"a": round(float(a), 4), "b": round(float(b), 4)}


def mapped(rows: list[dict], judge: str, calibration: dict[str, float]) -> np.ndarray:
    from transnli.generator.pair_judge import stack_probability

    return np.array([stack_probability(r["linear"], r[judge], calibration) for r in rows])


def ece_floor(p: np.ndarray, seed: int = 0) -> float:
    """The mean ECE of labels drawn from `p` itself: what a perfectly calibrated judge shows."""
    return round(float(np.mean(perfectly_calibrated_eces(p, FLOOR_DRAWS, seed))), 4)


def genre_reading(rows: list[dict], judge: str, calibration, threshold: float) -> dict:
    y = np.array([r["good"] for r in rows])
    plain, fitted = plain_mean(rows, judge), mapped(rows, judge, calibration)
    kept = plain >= threshold
    measured = float(y[kept].mean()) if kept.any() else None

    def error(p):
        return None if measured is None else round(float(p[kept].mean()) - measured, 4)

    return {
        "candidates": len(rows),
        "good_share": round(float(y.mean()), 4),
        "ece_mean": reliability(plain, y)["ece"],
        "ece_mapped": reliability(fitted, y)["ece"],
        "ece_floor": ece_floor(fitted),
        "kept": int(kept.sum()),
        "measured_precision": None if measured is None else round(measured, 4),
        "estimate_error_mean": error(plain),
        "estimate_error_mapped": error(fitted),
    }


def by_genre(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["genre"], []).append(r)
    return dict(sorted(out.items()))


def summary(genres: dict[str, dict]) -> dict:
    def values(key):
        return [g[key] for g in genres.values() if g[key] is not None]

    return {
        "genres": len(genres),
        "mean_ece_mean": round(float(np.mean(values("ece_mean"))), 4),
        "mean_ece_mapped": round(float(np.mean(values("ece_mapped"))), 4),
        "mean_ece_floor": round(float(np.mean(values("ece_floor"))), 4),
        "max_abs_error_mean": max(abs(v) for v in values("estimate_error_mean")),
        "max_abs_error_mapped": max(abs(v) for v in values("estimate_error_mapped")),
        "mean_abs_error_mapped": round(
            float(np.mean([abs(v) for v in values("estimate_error_mapped")])), 4
        ),
    }


def user_reviews(files: list[list[dict]], args, chosen: dict) -> dict:
    """`transnli judge fit` on a stacked folder, measured: in each genre, what the stack keeps,
    judged by people, stands for a user's review of a run (bench_precision_estimate.py's
    `user_review`: refitted on a random half, read on the other, 50 halvings), starting from the
    chosen map as the genre would get it (cross-validated; the final map with the shipped judges
    on --test)."""
    from bench_precision_estimate import user_review

    def reading(rows: list[dict], calibration: dict) -> dict:
        plain = plain_mean(rows, args.judge)
        kept = plain >= args.threshold
        y = np.array([r["good"] for r in rows])[kept]
        return user_review(mapped(rows, args.judge, calibration)[kept], y)

    out = {}
    for rows in files:
        for genre, part in by_genre(rows).items():
            if genre in chosen["cross_validation"]["genres"]:
                calibration = chosen["cross_validation"]["genres"][genre]["calibration"]
                out[genre] = reading(part, calibration)
    if args.test:
        for genre, part in by_genre(read_rows(args.test, args.judge)).items():
            out[f"{genre} (shipped judges)"] = reading(part, chosen["calibration"])
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=Path, action="append", required=True, help="repeatable")
    ap.add_argument("--test", type=Path, default=None, help="the shipped judges' rows")
    ap.add_argument("--hold-out", default="test", help="genres never fitted on (comma-separated)")
    ap.add_argument("--judge", default="pair", help="the named judge stacked with the linear one")
    ap.add_argument("--threshold", type=float, default=0.53, help="on the plain mean's scale")
    ap.add_argument("--write", type=Path, default=None)
    args = ap.parse_args(argv)
    if len(args.rows) < 2:
        ap.error("--rows twice at least: the map is read on genres it was not fitted on")
    if args.write and args.write.exists():
        sys.exit(f"{args.write}: already exists; not replaced")
    held = {g for g in args.hold_out.split(",") if g.strip()}
    files = [read_rows(p, args.judge) for p in args.rows]
    fitting = [[r for r in rows if r["genre"] not in held] for rows in files]
    everything = [r for part in fitting for r in part]

    maps = {}
    for kind in MAPS:
        cross: dict[str, dict] = {}
        for i, part in enumerate(fitting):
            others = [r for j, rows in enumerate(fitting) if j != i for r in rows]
            calibration = fit_map(others, args.judge, kind)
            for genre, rows in by_genre(part).items():
                if genre in cross:
                    sys.exit(f"{args.rows[i]}: genre {genre} is in an earlier --rows file too")
                cross[genre] = {
                    "calibration": calibration,
                    **genre_reading(rows, args.judge, calibration, args.threshold),
                }
        maps[kind] = {
            "calibration": fit_map(everything, args.judge, kind),
            "cross_validation": {"summary": summary(cross), "genres": cross},
        }
    # the rule the linear judge's estimate was chosen by: the smallest largest error on a genre
    # left out, then the smallest mean error
    chosen = min(
        MAPS,
        key=lambda k: (
            maps[k]["cross_validation"]["summary"]["max_abs_error_mapped"],
            maps[k]["cross_validation"]["summary"]["mean_abs_error_mapped"],
        ),
    )
    calibration = maps[chosen]["calibration"]
    result = {
        "chosen": chosen,
        "calibration": calibration,
        "fitted_on": {
            "rows": [p.name for p in args.rows],
            "candidates": len(everything),
            "genres": sorted({r["genre"] for r in everything}),
            "held_out": sorted(held),
        },
        "threshold_on_mean": args.threshold,
        "maps": maps,
    }
    errors = {
        g: c["estimate_error_mapped"] for g, c in maps[chosen]["cross_validation"]["genres"].items()
    }
    if args.test:
        for fitted in maps.values():
            fitted["test"] = {
                genre: genre_reading(part, args.judge, fitted["calibration"], args.threshold)
                for genre, part in by_genre(read_rows(args.test, args.judge)).items()
            }
        errors.update(
            {
                f"{g} (shipped judges)": t["estimate_error_mapped"]
                for g, t in maps[chosen]["test"].items()
            }
        )
    result["user_review"] = user_reviews(files, args, maps[chosen])
    worst = sorted(((abs(v), g, v) for g, v in errors.items() if v is not None), reverse=True)
    result["precision_estimate"] = {
        "method": "mean",
        "max_abs_error": round(worst[0][0], 4),
        "validation": (
            f"the largest error of the mean p_good (map '{chosen}', chosen among "
            f"{', '.join(MAPS)} by the smallest largest error) over what the stack keeps, on "
            f"genres neither its judges nor the map were fitted on ({len(errors) - bool(args.test)}"
            f" genres by cross-validation over {len(files)} groups"
            + (f", and the shipped judges on {', '.join(sorted(held))}" if args.test else "")
            + "): "
            + ", ".join(f"{g} {v:+.3f}" for _, g, v in worst[:4])
            + f"; mean absolute error {np.mean([a for a, _, _ in worst]):.3f}"
        ),
    }
    print_result(result, args.write)


if __name__ == "__main__":
    main()
