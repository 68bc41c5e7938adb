"""A pair judge recipe read out of genre on every genre it trains on: the outputs of
train_pair_judge.py runs of one recipe that each left out other genres (`--leave-out`), put
together as one leave-genres-out table. Per genre: the fold that left it out and how that fold's
judge reads it on the candidates the default preset decides on (AUC, precision at 80% and 65% of
fast's good triples kept, expected calibration error); over all genres: the means, the worst
genre at 80% kept, how many genres are calibrated to 0.05, and issue 39's targets beside them.

    .venv/bin/python benchmarks/pair_judge_folds.py FOLD_A.json FOLD_B.json ... [--out FILE]

The runs must share the recipe (template, epochs, seed, rank, learning rates, training sets) and
no genre may be left out by two of them; a run that differs exits naming the field. Prints one
JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import gate_genres, runs_command  # noqa: E402 - one reading

# what may differ between the folds of one recipe
VARYING = ("rows", "calibration_rows")
#: issue 39's targets: mean precision at 80% of fast's good kept, ECE on each left-out genre
TARGET_P_AT_80 = 0.85
TARGET_ECE = 0.05


def folds_table(runs: dict[str, dict]) -> dict:
    """The leave-genres-out table of `runs` (path: output), checked to share one recipe."""
    first_path, first = next(iter(runs.items()))
    shared = {k: v for k, v in first["training"].items() if k not in VARYING}
    genres: dict[str, dict] = {}
    for path, run in runs.items():
        for k, v in shared.items():
            if run["training"].get(k) != v:
                sys.exit(
                    f"{path}: training.{k} is {run['training'].get(k)!r}, {first_path} has {v!r}"
                )
        for genre, figures in gate_genres(run).items():
            if genre in genres:
                sys.exit(f"{path}: genre {genre} is left out by {genres[genre]['fold']} too")
            genres[genre] = {"fold": path, **figures}
    if not genres:
        sys.exit("no run read a left-out genre on the default preset's candidates")
    summary = {
        f"mean_{n}": round(mean(g[n] for g in genres.values()), 4)
        for n in ("auc", "p_at_80", "p_at_65", "ece")
    }
    worst = min(genres, key=lambda g: genres[g]["p_at_80"])
    calibrated = sorted(g for g, f in genres.items() if f["ece"] <= TARGET_ECE)
    summary.update(
        genres=len(genres),
        worst_p_at_80=[genres[worst]["p_at_80"], worst],
        ece_within_target=[len(calibrated), calibrated],
        target_mean_p_at_80=TARGET_P_AT_80,
        target_met=summary["mean_p_at_80"] >= TARGET_P_AT_80 and len(calibrated) == len(genres),
    )
    return {
        "benchmark": "pair_judge_folds",
        "runs": list(runs),
        "training": shared,
        "summary": summary,
        "genres": dict(sorted(genres.items())),
    }


def main(argv=None) -> None:
    runs_command(argv, __doc__, folds_table)


if __name__ == "__main__":
    main()
