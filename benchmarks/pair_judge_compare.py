"""Pair judges side by side on the genres none of them was trained on: the outputs of
train_pair_judge.py or read_pair_judge.py (one judge may be read in several files), per judge the
means over the shared left-out genres (AUC, precision at 80% and 65% of fast's good triples kept,
expected calibration error) and its worst genre at 80% kept, and against the first judge named
(the baseline), on how many of those genres each figure is better.

    .venv/bin/python benchmarks/pair_judge_compare.py \
        --judge shipped=READ_TEST.json,READ_GENRES5_6.json --judge senses=RUN.json [--out FILE]

Only genres every judge read are compared (the others are named, per judge); a judge that read a
genre twice exits naming both files. Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import gate_genres, print_result, read_runs  # noqa: E402 - one reading

FIGURES = ("auc", "p_at_80", "p_at_65", "ece")
#: the figures where less is better
LOWER_IS_BETTER = frozenset({"ece"})


def judge_genres(runs: dict[str, dict]) -> dict[str, dict]:
    """One judge's figures by left-out genre, from every file that read it."""
    genres: dict[str, dict] = {}
    where: dict[str, str] = {}
    for path, run in runs.items():
        for genre, figures in gate_genres(run).items():
            if genre in genres:
                sys.exit(f"{path}: genre {genre} is read by {where[genre]} too")
            genres[genre], where[genre] = figures, path
    return genres


def better(name: str, figure: float, baseline: float) -> bool:
    return figure < baseline if name in LOWER_IS_BETTER else figure > baseline


def comparison(judges: dict[str, dict[str, dict]]) -> dict:
    """`judges` (name: figures by genre), the first the baseline, compared on their shared
    genres."""
    shared = sorted(set.intersection(*(set(g) for g in judges.values())))
    if not shared:
        sys.exit("the judges share no left-out genre read on the default preset's candidates")
    base_name, base = next(iter(judges.items()))
    table = {}
    for name, genres in judges.items():
        row = {f"mean_{n}": round(mean(genres[g][n] for g in shared), 4) for n in FIGURES}
        worst = min(shared, key=lambda g: genres[g]["p_at_80"])
        row["worst_p_at_80"] = [genres[worst]["p_at_80"], worst]
        if name != base_name:
            row["better_than_baseline_on"] = {
                n: sum(better(n, genres[g][n], base[g][n]) for g in shared) for n in FIGURES
            }
        row["not_compared"] = sorted(set(genres) - set(shared))
        row["genres"] = {g: genres[g] for g in shared}
        table[name] = row
    return {
        "benchmark": "pair_judge_compare",
        "baseline": base_name,
        "genres": shared,
        "judges": table,
    }


def parse_judge(text: str) -> tuple[str, list[Path]]:
    name, sep, files = text.partition("=")
    if not sep or not name or not files:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=FILE[,FILE...]")
    return name, [Path(f) for f in files.split(",")]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--judge",
        action="append",
        type=parse_judge,
        required=True,
        help="NAME=FILE[,FILE...]: a judge and the outputs that read it; the first is the baseline",
    )
    ap.add_argument("--out", type=Path, help="Also write the JSON here.")
    args = ap.parse_args(argv)
    names = [name for name, _ in args.judge]
    if len(set(names)) != len(names) or len(names) < 2:
        ap.error("name two judges or more, each once")
    judges = {name: judge_genres(read_runs(files)) for name, files in args.judge}
    print_result(comparison(judges), args.out)


if __name__ == "__main__":
    main()
