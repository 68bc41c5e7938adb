"""A pair judge's learning curve, from the outputs of train_pair_judge.py runs that differ only in
`--fraction`: per point, the rows it was fine-tuned on, its training time, and how it reads each
left-out genre on the candidates the default preset decides on (AUC, precision at 80% and 65% of
fast's good triples kept, expected calibration error), with their means over the genres.

    .venv/bin/python benchmarks/pair_judge_curve.py RUN_25.json RUN_50.json RUN_100.json \
        [--out FILE]

The runs must share everything but the fraction (template, epochs, seed, rank, left-out genres);
a run that differs exits naming the field. Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import mean

# what may differ between the points of one curve
VARYING = ("rows", "calibration_rows", "fraction")


def genre_figures(gate: dict) -> dict:
    """One left-out genre's figures on the default preset's population."""
    at = gate["precision_at_kept_of_fast_good"]
    return {
        "candidates": gate["candidates"],
        "auc": gate["auc"],
        "p_at_80": at["0.80"]["precision"],
        "p_at_65": at["0.65"]["precision"],
        "ece": gate["calibration"]["ece"],
    }


def gate_genres(run: dict) -> dict[str, dict]:
    """A train_pair_judge.py (or read_pair_judge.py) output's `genre_figures` by left-out genre,
    for the genres it read on the default preset's population, in genre order."""
    return {
        genre: genre_figures(figures["gate"])
        for genre, figures in sorted(run["held_out"].items())
        if isinstance(figures.get("gate"), dict)
    }


def curve_point(run: dict) -> dict:
    """One train_pair_judge.py output as a point of the curve."""
    genres = gate_genres(run)
    point = {
        "fraction": run["training"]["fraction"],
        "rows": run["training"]["rows"],
        "training_seconds": run["training_seconds"],
    }
    for name in ("auc", "p_at_80", "p_at_65", "ece"):
        point[f"mean_{name}"] = round(mean(g[name] for g in genres.values()), 4)
    worst = min(genres, key=lambda g: genres[g]["p_at_80"])
    point["worst_p_at_80"] = [genres[worst]["p_at_80"], worst]
    point["genres"] = genres
    return point


def learning_curve(runs: dict[str, dict]) -> dict:
    """The curve of `runs` (path: output), checked to differ only in the training share."""
    first_path, first = next(iter(runs.items()))
    shared = {k: v for k, v in first["training"].items() if k not in VARYING}
    for path, run in runs.items():
        for k, v in shared.items():
            if run["training"].get(k) != v:
                sys.exit(
                    f"{path}: training.{k} is {run['training'].get(k)!r}, {first_path} has {v!r}"
                )
        if sorted(run["held_out"]) != sorted(first["held_out"]):
            sys.exit(f"{path}: left out other genres than {first_path}")
    points = sorted((curve_point(run) for run in runs.values()), key=lambda p: p["fraction"])
    return {
        "benchmark": "pair_judge_curve",
        "runs": list(runs),
        "training": shared,
        "left_out": sorted(first["held_out"]),
        "points": points,
    }


def main(argv=None) -> None:
    runs_command(argv, __doc__, learning_curve)


def runs_command(argv, doc: str, summarise) -> None:
    """The command line of a benchmark over train_pair_judge.py outputs: RUN... [--out FILE];
    prints (and writes) `summarise` of the runs as JSON."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="train_pair_judge.py outputs (--out)")
    ap.add_argument("--out", type=Path, help="Also write the JSON here.")
    args = ap.parse_args(argv)
    print_result(summarise(read_runs(args.runs)), args.out)


def read_runs(paths: list[Path]) -> dict[str, dict]:
    """train_pair_judge.py outputs by path; exits naming one that is not."""
    runs = {}
    for path in paths:
        try:
            runs[str(path)] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            sys.exit(f"{path}: not a train_pair_judge.py output: {exc}")
    return runs


def print_result(result: dict, out: Path | None) -> None:
    text = json.dumps(result, indent=1)
    if out:
        out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
