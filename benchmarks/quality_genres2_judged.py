"""Gather the judgements of genre set 2 (or a later set: `--set genres3`) into the project's
judged-set format, with their agreement.

    .venv/bin/python benchmarks/quality_genres2_judged.py --judged DIR [--adjudicated FILE] \
        [--set genres2]

With `--set NAME` every file named below is benchmarks/data/quality_NAME... instead of
quality_genres2...; a later set's candidates are written by quality_genres2_candidates.py with
`--sentences benchmarks/data/quality_NAME_sentences.jsonl --out
benchmarks/data/quality_NAME_candidates.jsonl`.

Reads the candidates (benchmarks/data/quality_genres2_candidates.jsonl, written by
quality_genres2_candidates.py) and every annotator's answers in DIR (`ANNOTATOR_bNN.jsonl` for
the batches, `ANNOTATOR_overlap.jsonl` for the blind second judgement of the agreement sample), one
JSON object a line: item, coherent, meaning_changed, good, error_type, reason, annotator
(docs/judging.md).

Writes
- benchmarks/data/quality_genres2.jsonl: every judged candidate, its provenance and one judgement
  (the batch annotator's; where the agreement sample's two judgements disagree on *good*, the
  adjudicated one when --adjudicated gives it), in the layout of quality_genres.jsonl;
- benchmarks/data/quality_genres2_agreement.jsonl: both judgements of every item judged twice, and
  the adjudicated verdict where there was one;
and prints one JSON object: counts per genre and annotator, and the agreement (raw and Cohen's
kappa on good, coherent and meaning changed). A malformed line stops the script naming the file
and line. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def set_files(name: str) -> tuple[Path, Path, Path]:
    """A genre set's candidates, judged and agreement files in benchmarks/data (`--set`)."""
    return (
        DATA / f"quality_{name}_candidates.jsonl",
        DATA / f"quality_{name}.jsonl",
        DATA / f"quality_{name}_agreement.jsonl",
    )


ERROR_TYPES = (
    "invalid_substitution",
    "grammar",
    "polysemy",
    "fixed_phrase",
    "auxiliary",
    "coreference",
    "no_change",
    "other",
)
CANDIDATE_FIELDS = (
    "item",
    "source_id",
    "genre",
    "source",
    "hypothesis",
    "word",
    "word_index",
    "pos",
    "antonym",
    "modified_hypothesis",
    "antonym_mode",
)
JUDGEMENT_FIELDS = ("coherent", "meaning_changed", "good", "error_type", "reason", "annotator")


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                sys.exit(f"{path}:{n}: not valid JSON ({exc.msg})")
    return rows


def checked(j: dict, where: str) -> dict:
    """A judgement with its fields checked against the guideline."""
    for name in ("coherent", "meaning_changed", "good"):
        if not isinstance(j.get(name), bool):
            sys.exit(f"{where}: field '{name}' must be true or false")
    if j["good"] != (j["coherent"] and j["meaning_changed"]):
        sys.exit(f"{where}: field 'good' must be coherent and meaning_changed")
    if j["good"] != (j.get("error_type") in ("", None)):
        sys.exit(f"{where}: field 'error_type' must be empty exactly when the item is good")
    if not j["good"] and j["error_type"] not in ERROR_TYPES:
        sys.exit(f"{where}: field 'error_type' {j['error_type']!r} is not one of the guideline's")
    return {k: j.get(k) or ("" if k == "error_type" else j.get(k)) for k in JUDGEMENT_FIELDS}


def read_judged(folder: Path, items: set[str]) -> tuple[dict, dict]:
    """(batch judgements by item, blind second judgements by item)."""
    first, second = {}, {}
    for path in sorted(folder.glob("*.jsonl")):
        target = second if path.stem.endswith("_overlap") else first
        for n, j in enumerate(read_jsonl(path), 1):
            where = f"{path}:{n}"
            if j.get("item") not in items:
                sys.exit(f"{where}: field 'item' {j.get('item')!r} is not a candidate of the set")
            target.setdefault(j["item"], checked(j, where))  # a repeated line: the first stands
    return first, second


def kappa(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's kappa of two annotators' verdicts; None where it is undefined (no items, or both
    gave one verdict throughout, so chance agreement is certain)."""
    from sklearn.metrics import cohen_kappa_score

    if not a or len(set(a) | set(b)) < 2:
        return None
    return round(float(cohen_kappa_score(a, b)), 3)


def agreement(first: dict, second: dict) -> dict:
    both = sorted(set(first) & set(second))
    out = {"items": len(both)}
    for name in ("good", "coherent", "meaning_changed"):
        a, b = [first[i][name] for i in both], [second[i][name] for i in both]
        raw = sum(x == y for x, y in zip(a, b, strict=True)) / len(both) if both else None
        out[name] = {"raw": round(raw, 3) if raw is not None else None, "kappa": kappa(a, b)}
    out["disagreements_on_good"] = sum(first[i]["good"] != second[i]["good"] for i in both)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--judged", type=Path, required=True, help="the annotators' answer files")
    ap.add_argument("--adjudicated", type=Path, default=None, help="verdicts on disagreements")
    ap.add_argument("--disagreements", type=Path, default=None, help="write them here, unjudged")
    ap.add_argument(
        "--set",
        default="genres2",
        help="the genre set: its files are benchmarks/data/quality_SET{_candidates,,_agreement}"
        ".jsonl (default genres2; a later set's candidates come from "
        "quality_genres2_candidates.py --sentences ... --out ...)",
    )
    args = ap.parse_args(argv)
    candidates_file, out_file, agreement_file = set_files(args.set)
    candidates = {c["item"]: c for c in read_jsonl(candidates_file)}
    first, second = read_judged(args.judged, set(candidates))
    adjudicated = {}
    if args.adjudicated:
        for n, j in enumerate(read_jsonl(args.adjudicated), 1):
            adjudicated[j["item"]] = checked(j, f"{args.adjudicated}:{n}")
    both = sorted(set(first) & set(second))
    disputed = [i for i in both if first[i]["good"] != second[i]["good"]]
    if args.disagreements:
        with open(args.disagreements, "w", encoding="utf-8") as fh:
            for i in disputed:
                c = candidates[i]
                fh.write(json.dumps({k: c.get(k) for k in CANDIDATE_FIELDS}) + "\n")
    final = {**second, **first}  # an item judged only blind still counts once
    final.update({i: adjudicated[i] for i in disputed if i in adjudicated})
    rows = [
        {**{k: candidates[i].get(k) for k in CANDIDATE_FIELDS}, **final[i]}
        for i in sorted(final, key=lambda i: (candidates[i]["source_id"], i))
    ]
    with open(out_file, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    with open(agreement_file, "w", encoding="utf-8") as fh:
        for i in both:
            row = {"item": i, "first": first[i], "second": second[i]}
            if i in adjudicated and i in disputed:
                row["adjudicated"] = adjudicated[i]
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    result = {
        "judged": len(rows),
        "good": sum(r["good"] for r in rows),
        "per_genre": dict(sorted(Counter(r["genre"] for r in rows).items())),
        "good_per_genre": dict(sorted(Counter(r["genre"] for r in rows if r["good"]).items())),
        "per_annotator": dict(sorted(Counter(r["annotator"] for r in rows).items())),
        "error_types": dict(Counter(r["error_type"] for r in rows if not r["good"]).most_common()),
        "agreement": agreement(first, second),
        "disagreements_adjudicated": sum(i in adjudicated for i in disputed),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
