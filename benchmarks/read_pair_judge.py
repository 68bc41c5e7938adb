"""Read a saved pair judge folder on judged genres it never saw: each candidate's calibrated p,
written for judge_stack.py, and the figures train_pair_judge.py reports for a left-out genre.

    .venv/bin/python benchmarks/read_pair_judge.py \
        --folder benchmarks/data/pair_judge_stack_gemma3_270m --genres genres4 --score gate \
        --scores PAIR.jsonl [--out PAIR.json] [--lm gemma3-270m] [--device cuda]
    .venv/bin/python benchmarks/judge_stack.py --train-sets dev,genres --scores pair=PAIR.jsonl \
        --stack-calibration benchmarks/data/stack_calibration_fit.json

`--genres` takes genres or judged sets (judge_data.SETS names), comma-separated, as
train_pair_judge.py's `--leave-out` does; the script refuses a genre of the sets the folder was
trained on (its record, or the sets its data digest names) that it did not leave out (the genres
its `validation` record names), as one it may have been trained on. The folder's own calibration
gives p (the pair judge alone, not a stack); the figures use the folder's threshold. `--lm` reads
it on another copy of its base model (a folder trained on a GPU records the folder rebuilt there
by gpu_pack.py). Prints one
JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from train_pair_judge import (  # noqa: E402 - one way to pick and report left-out rows
    folder_training_sets,
    held_out_figures,
    leave_out_rows,
    write_scores,
)


def trained_on(meta: dict, held: list[dict]) -> list[str]:
    """The genres of `held` the folder's judge may have been trained on: those of its training
    sets that it did not leave out (the genres of its `validation` record)."""
    left_out = set(meta.get("validation") or ())
    sets = folder_training_sets(meta)
    return sorted({r["genre"] for r in held if r["set"] in sets and r["genre"] not in left_out})


def main(argv=None) -> None:
    from transnli.common.lm.conversion import resolve_model_folder
    from transnli.common.lm.settings import LMSettings
    from transnli.generator.pair_judge import load_pair_judge, read_pair_judge_meta

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a pair judge folder")
    ap.add_argument("--genres", required=True, help="genres or judged sets, comma-separated")
    ap.add_argument("--score", choices=("all", "gate"), default="gate")
    ap.add_argument("--scores", type=Path, required=True, help="JSONL: key, genre, good, p")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON result here too")
    ap.add_argument(
        "--lm",
        default=None,
        help="the base model's spec or folder (default: the one the folder records)",
    )
    ap.add_argument("--device", default="cpu", help="torch device: cpu, cuda, ...")
    args = ap.parse_args(argv)
    meta = read_pair_judge_meta(args.folder)
    _, held, genres = leave_out_rows(args.genres, args.score)
    seen = trained_on(meta, held)
    if seen:
        sys.exit(f"{args.folder} was trained on {', '.join(seen)}: read it on other genres")
    lm_folder, _ = resolve_model_folder(LMSettings(spec=args.lm or meta["language_model"]))
    judge = load_pair_judge(args.folder, lm_folder, args.device)
    p = np.array(judge.probabilities([(r["hypothesis"], r["modified"]) for r in held]))
    write_scores(args.scores, held, p)
    result = {
        "benchmark": "read_pair_judge",
        "folder": str(args.folder),
        "genres": sorted(genres),
        "scored": args.score,
        "device": args.device,
        "threshold": judge.threshold,
        "held_out": held_out_figures(p, held, genres, judge.threshold),
    }
    print_result(result, args.out)


if __name__ == "__main__":
    main()
