"""Make a stacked judge folder: a trained pair judge with a linear judge file beside it, whose
probabilities the pair-judge check averages (transnli.generator.pair_judge, field 'stack').

    .venv/bin/python benchmarks/build_judge_stack.py --pair PAIR_FOLDER \
        --validation benchmarks/data/judge_stack_trained_dev_genres.json \
        --write benchmarks/data/pair_judge_stack_gemma3_270m

The threshold is chosen on the training genres only, by the rule the linear judge's was: the
highest cut (to two decimals, rounded down) that keeps 80% of the fast preset's good triples among
the candidates the filters and grammar pass, here on the pair judge's calibration rows (training
sentences held out of its fine-tuning; the split is rebuilt from the folder's seed and checked
against its recorded size). There the linear judge's probability is out of sample as well: the
shipped configuration is refitted on the sets the linear judge file records (training.data) without
those sentences (benchmarks/judge_logo.py's `train_model`, on its cached features), since the judge
saw them and is over-confident on them. `--validation` (benchmarks/judge_stack.py's output) copies
the figures on the genres neither judge was trained on into the folder, under stack.validation.
`--calibration` (fit_stack_calibration.py's output) adds the map of the mean that the stack then
applies (stack.calibration; the threshold is chosen on the mapped probabilities) and the card's
validated precision estimate (stack.precision_estimate). `--calibration-scores` takes the
calibration rows' p from the file `train_pair_judge.py --calibration-scores` wrote, instead of
reading them again with the model (3,296 prompts for a judge trained on four sets). Prints one JSON
object. The folder is written through a temporary one renamed into place and never replaces one.

`--alone` makes a lone pair judge ready to ship instead (no linear judge beside it): the threshold
is chosen by the same rule on the pair judge's own probabilities, and `--scores` (score files of
genres it never saw: train_pair_judge.py --scores, read_pair_judge.py --scores) give, at that
threshold, its figures per genre and the card's validated estimate (pair_judge_estimate.py's
largest error over the genres with enough kept triples, or the --end-to-end runs' where larger),
all under the folder's 'release':

    P=benchmarks/data/pair_judge_compact
    RUNS=benchmarks/data/bench_quality_genres?_default_pair_compact*.json
    .venv/bin/python benchmarks/build_judge_stack.py --alone --pair ${P}_gemma3_270m \\
        --calibration-scores ${P}_trained_all_but_test_genres4_cal_scores.jsonl \\
        --scores ${P}_trained_all_but_test_genres4_scores.jsonl \\
        --scores ${P}_read_genres5_genres6_scores.jsonl \\
        $(printf -- '--end-to-end %s ' $RUNS) \\
        --write resources/models/pair_judge_gemma3_270m
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import default_run_errors  # noqa: E402
from pair_judge_estimate import estimate_figures  # noqa: E402
from train_judge import population_keys  # noqa: E402
from train_pair_judge import (  # noqa: E402
    folder_training_sets,
    judged_rows,
    read_score_files,
    read_scores,
    split_calibration,
)

LINEAR_FILE = "linear_judge.json"
KEEP_SHARE = 0.8


def calibration_rows(meta: dict) -> list[dict]:
    """The pair judge's calibration rows, rebuilt; exits when they do not match its record."""
    left_out = set(meta.get("validation") or ())
    sets = folder_training_sets(meta)
    rows = [r for r in judged_rows() if r["set"] in sets and r["genre"] not in left_out]
    _, held = split_calibration(rows, 0.2, meta["training"]["seed"])
    if len(held) != meta["training"]["calibration_rows"]:
        sys.exit(
            f"the calibration split gives {len(held)} rows, the folder records "
            f"{meta['training']['calibration_rows']}: the judged sets changed since it was trained"
        )
    return held


def saved_calibration_scores(path: Path, rows: list[dict]) -> list[float]:
    """The pair judge's p of each calibration row, from the file its training wrote; exits when
    the file holds other rows than the split rebuilds."""
    saved = read_scores(path)
    if set(saved) != {r["key"] for r in rows}:
        sys.exit(f"{path}: holds other rows than the pair judge's calibration split")
    return [saved[r["key"]] for r in rows]


def cut_keeping(p: np.ndarray, good: np.ndarray, reference_good: int) -> float:
    """The highest threshold (two decimals, rounded down) keeping KEEP_SHARE of reference_good."""
    order = np.sort(p[good == 1])[::-1]
    need = math.ceil(KEEP_SHARE * reference_good)
    if need > len(order):
        sys.exit(f"the calibration rows hold {len(order)} good candidates, {need} are needed")
    return math.floor(float(order[need - 1]) * 100) / 100


def linear_training_sets(linear: Path) -> list[str]:
    """The judged sets (judge_data.SETS names) a linear judge file records it was trained on."""
    from judge_data import SETS

    root = Path(__file__).resolve().parents[1]
    by_path = {str(path.relative_to(root)): name for name, path in SETS.items()}
    data = json.loads(linear.read_text(encoding="utf-8"))["training"]["data"]
    unknown = [d for d in data if d not in by_path]
    if unknown:
        sys.exit(f"{linear}: training.data names {unknown[0]}, which is not a judged set")
    return sorted(by_path[d] for d in data)


def linear_out_of_sample(rows: list[dict], training_sets: list[str]) -> np.ndarray:
    """The linear judge's p on `rows`, refitted on its own training sets without their sentences,
    so that neither the sentences held out of the pair judge nor sets the linear judge never saw
    shape the threshold."""
    from judge_logo import MODELS, all_sets, subset, train_model
    from train_judge import linear_scores, sigmoid

    data = all_sets()
    held = {r["hypothesis"] for r in rows}
    sentence = np.array([k.split("\x1f")[0] for k in data["keys"]])
    fit = np.isin(data["set"], training_sets) & ~np.isin(sentence, list(held))
    cfg = MODELS["shipped"]
    model, a, b = train_model(subset(data, fit), cfg)
    index = {k: i for i, k in enumerate(data["keys"])}
    at = np.array([index[r["key"]] for r in rows])
    return sigmoid(a * linear_scores(model, data, at, cfg) + b)


def validation_summary(path: Path, threshold: float) -> dict:
    """judge_stack.py's figures for the stack (and the linear judge beside it), per left-out genre
    and pooled at the folder's threshold (when judge_stack.py read that cut: --thresholds)."""
    doc = json.loads(path.read_text())
    at = f"at_{threshold}"
    return {
        "trained_on": doc["trained_on"],
        "genres": {
            genre: {
                "candidates": g["candidates"],
                "auc": g["linear+pair"]["auc"],
                "precision_at_80": (g["linear+pair"]["at_kept"]["0.80"] or {}).get("precision"),
                "ece": g["linear+pair"]["ece"],
                "at_threshold": g["linear+pair"].get(at),
                "linear_auc": g["linear"]["auc"],
                "linear_precision_at_80": (g["linear"]["at_kept"]["0.80"] or {}).get("precision"),
            }
            for genre, g in doc["genres"].items()
        },
        "summary": {k: doc["summary"][k] for k in ("linear", "pair", "linear+pair")},
        "pooled_at_threshold": doc["summary"]["linear+pair"].get(f"pooled_{at}"),
    }


def threshold_on_calibration_rows(rows: list[dict], p: np.ndarray) -> tuple[float, dict]:
    """The shipped rule's threshold on the calibration rows' probabilities, and what it keeps."""
    pops = {name: population_keys(name) for name in {r["set"] for r in rows}}
    gate = np.array([r["key"] in pops[r["set"]]["gate"] for r in rows])
    good = np.array([r["good"] for r in rows])
    fast_good = sum(1 for r in rows if r["good"] and r["key"] in pops[r["set"]]["fast"])
    threshold = cut_keeping(p[gate], good[gate], fast_good)
    kept = gate & (p >= threshold)
    return threshold, {
        "rows": len(rows),
        "gate_candidates": int(gate.sum()),
        "fast_good": fast_good,
        "kept": int(kept.sum()),
        "precision": round(float(good[kept].mean()), 4),
    }


def threshold_rule(whose: str) -> str:
    return (
        f"the highest cut keeping {KEEP_SHARE:.0%} of the fast preset's good triples among the "
        f"gate candidates of the pair judge's calibration rows, on {whose} probability"
    )


def pair_probabilities(args, meta: dict, rows: list[dict]) -> list[float]:
    """The pair judge's p of the calibration rows: from --calibration-scores, else read."""
    from transnli.common.lm.conversion import resolve_model_folder
    from transnli.common.lm.settings import LMSettings
    from transnli.generator.pair_judge import load_pair_judge

    if args.calibration_scores:
        return saved_calibration_scores(args.calibration_scores, rows)
    lm_folder, _ = resolve_model_folder(LMSettings(spec=meta["language_model"]))
    return load_pair_judge(args.pair, lm_folder).probabilities(
        [(r["hypothesis"], r["modified"]) for r in rows]
    )


def end_to_end_errors(
    files: list[Path], trained: set[str], min_judged: int
) -> dict[str, dict[str, float]]:
    """Per run and per genre with at least `min_judged` judged triples, the card estimate's error
    in end-to-end runs of the default preset with this pair judge (bench_quality.py --preset
    default --judged-only, saved with --save); exits on another run or a genre the judge was
    trained on."""
    out: dict[str, dict[str, float]] = {}
    for path in files:
        _, genres = default_run_errors(path, "pair-judge")
        for genre, g in genres.items():
            if genre in trained:
                sys.exit(f"{path}: the pair judge was trained on genre {genre}")
            if g["judged"] >= min_judged:
                out.setdefault(path.name, {})[genre] = g["error"]
    return out


def release_record(
    meta: dict, rows: list[dict], pair: list[float], scores: list[Path], end_to_end: list[Path]
) -> tuple[float, dict]:
    """The threshold chosen on the pair judge's own probability, and a lone folder's 'release':
    the rule, and at the threshold its figures on the genres the --scores files hold (genres it
    never saw; exits on one it was trained on) and the card's validated estimate, whose error
    also covers the --end-to-end runs' (the same candidates, read through the generator's own
    records)."""
    sets, left_out = folder_training_sets(meta), set(meta.get("validation") or ())
    trained = {r["genre"] for r in judged_rows() if r["set"] in sets} - left_out
    read = read_score_files(scores)
    threshold, threshold_rows = threshold_on_calibration_rows(rows, np.array(pair))
    figures = estimate_figures(read, threshold)
    summary = figures["summary"]
    seen = sorted(trained & set(figures["genres"]))
    if seen:
        sys.exit(f"--scores hold genres the pair judge was trained on: {', '.join(seen)}")
    counted = sorted(
        (
            (g, f["estimate_error"])
            for g, f in figures["genres"].items()
            if "estimate_error" in f and f["kept"] >= summary["min_kept"]
        ),
        key=lambda item: -abs(item[1]),
    )
    largest = ", ".join(f"{g} {e:+.3f}" for g, e in counted[:4])
    runs = end_to_end_errors(end_to_end, trained, summary["min_kept"])
    run_errors = [abs(e) for errors in runs.values() for e in errors.values()]
    error = max([summary["max_abs_error"]["error"], *run_errors])
    genres = {g for errors in runs.values() for g in errors}
    run_text = (
        f"; in {len(runs)} end-to-end runs of the default preset on {len(genres)} of these "
        f"genres ({', '.join(runs)}) the largest was {max(run_errors):.4f}"
        if run_errors
        else ""
    )
    return threshold, {
        "threshold_rule": threshold_rule("its own"),
        "threshold_rows": threshold_rows,
        "validation": {
            "scores": [path.name for path in scores],
            "genres": {
                g: {
                    "candidates": f["candidates"],
                    "auc": f["auc"],
                    "ece": f["ece"],
                    "at_threshold": {
                        "kept": f["kept"],
                        "good": f.get("kept_good", 0),
                        "precision": f.get("precision"),
                        "threshold": threshold,
                    },
                }
                for g, f in figures["genres"].items()
            },
            "summary": {k: summary[k] for k in ("genres", "mean_auc", "mean_ece")},
            "pooled_at_threshold": summary["pooled_at_threshold"],
        },
        "precision_estimate": {
            "method": "mean",
            "max_abs_error": error,
            "validation": (
                "the largest error of the mean p_good over what the judge keeps at its "
                f"threshold, on genres it never saw ({summary['counted']} of "
                f"{summary['genres']} genres: those with at least {summary['min_kept']} kept): "
                f"{largest}; within 0.03 on {summary['within_0.03']}{run_text}"
            ),
            "end_to_end": runs,
        },
    }


def stack_record(args, rows: list[dict], pair: list[float], partial: Path) -> tuple[float, dict]:
    """The threshold chosen on the stack's probability, and a stacked folder's 'stack': the
    linear judge file (copied into `partial`), the optional map of the mean and its validated
    estimate."""
    from transnli.common.digest import sha256_file
    from transnli.generator.judge import default_judge_path
    from transnli.generator.pair_judge import STACK_COMBINE, stack_probability

    linear = args.linear or default_judge_path()
    shutil.copyfile(linear, partial / LINEAR_FILE)
    stack = {"linear_judge": LINEAR_FILE, "combine": STACK_COMBINE}
    calibration = None
    if args.calibration:
        fitted = json.loads(args.calibration.read_text(encoding="utf-8"))
        calibration = fitted["calibration"]
        stack.update(
            {
                "calibration": calibration,
                "calibration_fit": {
                    "map": fitted["chosen"],
                    "fitted_on": fitted["fitted_on"],
                    "cross_validation": fitted["maps"][fitted["chosen"]]["cross_validation"][
                        "summary"
                    ],
                },
                "precision_estimate": fitted["precision_estimate"],
            }
        )
    linear_p = linear_out_of_sample(rows, linear_training_sets(linear))
    p = np.array(
        [stack_probability(float(q), x, calibration) for q, x in zip(linear_p, pair, strict=True)]
    )
    threshold, threshold_rows = threshold_on_calibration_rows(rows, p)
    stack.update(
        {
            "linear_judge_sha256": sha256_file(linear),
            "threshold_rule": threshold_rule("the stack's"),
            "threshold_rows": threshold_rows,
        }
    )
    if args.validation:
        stack["validation"] = validation_summary(args.validation, threshold)
    return threshold, stack


def main(argv=None) -> None:
    from transnli.generator.pair_judge import META_FILE, read_pair_judge_meta

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", type=Path, required=True, help="a trained pair judge folder")
    ap.add_argument("--linear", type=Path, default=None, help="default: the shipped judge")
    ap.add_argument("--validation", type=Path, default=None, help="judge_stack.py's output")
    ap.add_argument(
        "--calibration",
        type=Path,
        default=None,
        help="fit_stack_calibration.py's output: the map of the mean and the validated estimate",
    )
    ap.add_argument(
        "--calibration-scores",
        type=Path,
        default=None,
        help="the calibration rows' p as train_pair_judge.py --calibration-scores wrote them "
        "(instead of reading them again with the model)",
    )
    ap.add_argument(
        "--alone", action="store_true", help="no linear judge: the pair judge ships on its own"
    )
    ap.add_argument(
        "--scores",
        type=Path,
        action="append",
        default=[],
        help="with --alone: a score file of genres the pair judge never saw (repeatable)",
    )
    ap.add_argument(
        "--end-to-end",
        type=Path,
        action="append",
        default=[],
        help="with --alone: a bench_quality.py --save run of the default preset with this pair "
        "judge on genres it never saw (repeatable); the recorded error covers its errors too",
    )
    ap.add_argument("--write", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.write.exists():
        sys.exit(f"{args.write}: already exists; a judge folder is never replaced")
    if args.alone and (args.linear or args.validation or args.calibration or not args.scores):
        sys.exit("--alone takes --scores, and none of --linear, --validation, --calibration")
    if (args.scores or args.end_to_end) and not args.alone:
        sys.exit("--scores, --end-to-end: only with --alone (a stack's come from --validation)")
    meta = read_pair_judge_meta(args.pair)
    if "stack" in meta or "release" in meta:
        sys.exit(f"{args.pair}: already made ready to ship; give the folder training wrote")
    rows = calibration_rows(meta)
    pair = pair_probabilities(args, meta, rows)
    partial = args.write.with_name(args.write.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(args.pair, partial)
    if args.alone:
        meta["threshold"], meta["release"] = release_record(
            meta, rows, pair, args.scores, args.end_to_end
        )
        printed = meta["release"]
    else:
        meta["threshold"], meta["stack"] = stack_record(args, rows, pair, partial)
        printed = meta["stack"]
    (partial / META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    read_pair_judge_meta(partial)
    os.replace(partial, args.write)
    print(
        json.dumps(
            {"written": str(args.write), "threshold": meta["threshold"], **printed}, indent=1
        )
    )


if __name__ == "__main__":
    main()
