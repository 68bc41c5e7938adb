"""What a second careful reader measures: the candidates two annotators judged blind (each set's
agreement file), among those the judge decides on in the default preset, with one reader's
verdict read as a judge against the other's. It bounds what any judge's precision can show
against labels of this noise, and sets a judge beside a reader at the reader's own recall.

    .venv/bin/python benchmarks/annotator_ceiling.py [--sets test,genres5,genres6] \
        [--scores JUDGE.jsonl,...] [--out FILE]

For each set, and pooled: the items, raw agreement and Cohen's kappa on *good*; each reader as a
judge of the other (precision: the share of what it calls good that the other calls good; over
the two directions its mean is also the mean recall); and with --scores (train_pair_judge.py
--scores files), the judge's precision on the same items when it keeps the same share of the
reference reader's good as the other reader did, and at 80% and 65% of it (the issue's points),
per set and pooled over the sets it scored. Prints one JSON object. Not a test: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import DATA, key  # noqa: E402
from judge_data import SETS  # noqa: E402
from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from train_judge import population_keys  # noqa: E402
from train_pair_judge import read_score_files  # noqa: E402

ROUND = 4


def agreement_items(name: str) -> list[dict]:
    """The set's doubly-judged candidates the judge decides on: key, first and second verdict.

    Agreement files come in three shapes: both verdicts on one line (`first`, `second`); one line
    per annotator and item; or only the second reader's line, the first being the set's own row.
    The first two annotators' verdicts on an item are the pair read here."""
    path = DATA / f"quality_{name}_agreement.jsonl"
    if not path.is_file():
        return []
    rows = {}
    with SETS[name].open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                rows[row["item"]] = row
    verdicts: dict[str, list[tuple[str, bool]]] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("item") not in rows:
                sys.exit(f"{path}:{n}: item {row.get('item')} is not in {SETS[name]}")
            judged = [row["first"], row["second"]] if "first" in row else [row]
            for v in judged:
                verdicts.setdefault(row["item"], []).append((v.get("annotator"), bool(v["good"])))
    gate = population_keys(name)["gate"]
    items = []
    for item, said in verdicts.items():
        own = rows[item]
        if len(said) == 1 and own.get("annotator") != said[0][0]:
            said = [(own.get("annotator"), bool(own["good"])), *said]
        readers = []  # the first verdict of each reader; unnamed readers count as different
        for annotator, good in said:
            if annotator is None or annotator not in [a for a, _ in readers]:
                readers.append((annotator, good))
        k = key(own["hypothesis"], own["modified_hypothesis"])
        if len(readers) >= 2 and k in gate:
            items.append({"key": k, "first": readers[0][1], "second": readers[1][1]})
    return items


def reader_as_judge(judge: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(precision, recall) of one reader's good verdicts against another's."""
    kept = judge.sum()
    return (
        float((judge & reference).sum() / kept) if kept else float("nan"),
        float((judge & reference).sum() / reference.sum()) if reference.sum() else float("nan"),
    )


def precision_at_recall(p: np.ndarray, reference: np.ndarray, recall: float) -> float:
    """The judge's precision against `reference` when it keeps the highest-scored candidates
    until it holds `recall` of the reference's good (ties at the cut kept whole)."""
    need = int(np.ceil(recall * reference.sum()))
    order = np.argsort(-p, kind="stable")
    held = np.cumsum(reference[order])
    cut = int(np.searchsorted(held, need)) + 1
    cut += int(np.sum(p[order][cut:] == p[order][cut - 1]))
    return float(reference[order][:cut].mean())


def figures(items: list[dict], scores: dict[str, float] | None) -> dict:
    from sklearn.metrics import cohen_kappa_score

    first = np.array([i["first"] for i in items])
    second = np.array([i["second"] for i in items])
    directions = [(second, first), (first, second)]
    readings = [reader_as_judge(j, r) for j, r in directions]
    out = {
        "items": len(items),
        "good_share": round(float((first.mean() + second.mean()) / 2), ROUND),
        "raw_agreement": round(float((first == second).mean()), ROUND),
        "kappa": round(float(cohen_kappa_score(first, second)), ROUND),
        # one reader's precision against the other is the other's recall against the first, so
        # over the two directions the mean precision and the mean recall are one figure
        "reader_precision_and_recall": round(float(np.mean([p for p, _ in readings])), ROUND),
    }
    if scores is not None and all(i["key"] in scores for i in items):
        p = np.array([scores[i["key"]] for i in items])
        at = {"reader": [r for _, r in readings], "0.80": [0.8, 0.8], "0.65": [0.65, 0.65]}
        out["judge_precision_at_recall"] = {
            name: round(
                float(
                    np.mean(
                        [
                            precision_at_recall(p, reference, recall)
                            for (_, reference), recall in zip(directions, recalls, strict=True)
                        ]
                    )
                ),
                ROUND,
            )
            for name, recalls in at.items()
        }
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(SETS), help="judged sets, comma-separated")
    ap.add_argument("--scores", default=None, help="a judge's score files, comma-separated")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    scores = read_score_files(Path(s) for s in args.scores.split(",")) if args.scores else None
    by_set = {}
    for name in filter(None, args.sets.split(",")):
        if name not in SETS:
            sys.exit(f"--sets {name}: not a judged set ({', '.join(SETS)})")
        items = agreement_items(name)
        if items:
            by_set[name] = items
    result = {
        "benchmark": "annotator_ceiling",
        "scores": args.scores,
        "sets": {name: figures(items, scores) for name, items in by_set.items()},
        "pooled": figures([i for items in by_set.values() for i in items], None),
    }
    if scores is not None:
        scored = [n for n, items in by_set.items() if all(i["key"] in scores for i in items)]
        result["pooled_scored"] = {
            "sets": scored,
            **figures([i for n in scored for i in by_set[n]], scores),
        }
    print_result(result, args.out)


if __name__ == "__main__":
    main()
