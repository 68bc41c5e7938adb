"""`transnli alarm`: the no-knowledge alarm for any judges, as a pipeline guard.

Inputs (one kind per call):
- a counts file: CSV with a `judge` column and one column per label (one row per judge), or JSON
  {"judge": {"label": count, ...}, ...}; any labels, at least two;
- predictions.jsonl or samples.jsonl files written by `transnli evaluate` (one row per model and
  triple): the items are the distinct pairs of one kind (--pairs) per dataset, exactly as in
  `transnli evaluate`'s summary.json and report.md, so both give the same theta* (the sentences
  come from samples.jsonl; a predictions.jsonl without its samples.jsonl beside it falls back to
  the triples as items, and says so);
- labelled-pairs files, one per judge ({"premise", "hypothesis", "label"} JSONL, the format of
  --model precomputed:FILE): the items are the pairs every file labels.

With question-aligned inputs (predictions, labelled pairs) the pairs' joint label counts (M = 2,
beyond the paper) also bound theta*; the alarm uses the lower of the two (--m1-only: M = 1 only).

Exit status: 0 no alarm, 1 the alarm fires (a threshold above the proven bound for some group of
items), 2 bad input or usage.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from transnli.generator.jsonl import jsonl_objects

from . import alarms as A
from .errors import EvaluatorError
from .labels import LABELS, normalize_label
from .schedule import KINDS, pairs_of
from .triples import Triple


class AlarmInputProblem(EvaluatorError):
    """Bad input to `transnli alarm` (its exit status is 2, so that 1 always means "the alarm
    fires")."""


# --------------------------------------------------------------------------- readers
def _fail(path: Path, msg: str, line: int | None = None) -> AlarmInputProblem:
    return AlarmInputProblem(f"{path}{f':{line}' if line else ''}: {msg}")


def _count(value: Any, path: Path, where: str, line: int | None = None) -> int:
    if isinstance(value, str):
        value = value.strip()
        if value.isdigit():
            return int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise _fail(path, f"{where}: {value!r} is not a non-negative whole number", line)


def read_counts_csv(path: Path) -> tuple[list[str], dict[str, tuple[int, ...]]]:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header or header[0].strip().lower() != "judge":
            raise _fail(path, "the first column must be 'judge', then one column per label", 1)
        labels = [h.strip() for h in header[1:]]
        if len(labels) < 2 or any(not h for h in labels) or len(set(labels)) < len(labels):
            raise _fail(path, "need at least two distinct, named label columns after 'judge'", 1)
        judges: dict[str, tuple[int, ...]] = {}
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise _fail(path, f"{len(row)} fields, the header has {len(header)}", line)
            name = row[0].strip()
            if not name or name in judges:
                raise _fail(
                    path, f"field 'judge': {'empty' if not name else f'{name!r} given twice'}", line
                )
            judges[name] = tuple(
                _count(v, path, f"field {lab!r}", line)
                for lab, v in zip(labels, row[1:], strict=True)
            )
    return labels, judges


def read_counts_json(path: Path) -> tuple[list[str], dict[str, tuple[int, ...]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise _fail(path, f"not JSON ({e.msg})", e.lineno) from e
    if not isinstance(data, dict) or not data:
        raise _fail(path, 'expected an object {"judge": {"label": count, ...}, ...}')
    labels: list[str] | None = None
    judges: dict[str, tuple[int, ...]] = {}
    for name, counts in data.items():
        if not isinstance(counts, dict):
            raise _fail(path, f"judge {name!r}: expected an object of label counts")
        if labels is None:
            labels = list(counts)
            if len(labels) < 2:
                raise _fail(path, f"judge {name!r}: need counts for at least two labels")
        elif set(counts) != set(labels):
            raise _fail(
                path,
                f"judge {name!r} has labels {sorted(counts)}, the first judge has {sorted(labels)}",
            )
        judges[name] = tuple(
            _count(counts[lab], path, f"judge {name!r}, label {lab!r}") for lab in labels
        )
    return labels, judges


def _label(value: Any, path: Path, line: int, field: str) -> str | None:
    if value is None:
        return None
    label = normalize_label(value)
    if label is None:
        raise _fail(path, f"field {field!r}: unknown label {value!r}", line)
    return label


SAMPLES_BESIDE = "samples.jsonl"  # written with predictions.jsonl: the same rows plus sentences
SENTENCES = ("premise", "hypothesis", "modified_hypothesis")
ITEMS_PAIRS = "distinct pairs"  # what `transnli evaluate` counts: the one definition of theta*
ITEMS_TRIPLES = "triples"  # only when no file gives the sentences
TRIPLES_NOTE = (
    f"no {SAMPLES_BESIDE} beside the predictions: the items are triples, not the distinct pairs "
    "report.md counts, so theta* may differ from it"
)


def _pair_texts(row: dict[str, Any], kind: str) -> tuple[str, str] | None:
    """The sentences of one kind of pair of a samples row (None: the row has no sentences)."""
    if not all(isinstance(row.get(f), str) for f in SENTENCES):
        return None
    triple = Triple(
        id="",
        dataset="",
        premise=row["premise"],
        hypothesis=row["hypothesis"],
        modified=row["modified_hypothesis"],
    )
    return pairs_of(triple)[KINDS.index(kind)]


def _sentences_beside(path: Path, kind: str) -> dict[tuple, tuple[str, str]] | None:
    """{(model, dataset, id, k-th row of that id): the pair} from the samples.jsonl that
    `transnli evaluate` wrote beside a predictions.jsonl (the same rows, in the same order, plus
    the sentences); None when there is none, or a row of it lacks its sentences."""
    beside = path.with_name(SAMPLES_BESIDE)
    if path.name == SAMPLES_BESIDE or not beside.is_file():
        return None
    out: dict[tuple, tuple[str, str]] = {}
    seen: dict[tuple, int] = {}
    for _, row in jsonl_objects(beside, AlarmInputProblem):
        pair = _pair_texts(row, kind)
        if pair is None or not {"model", "dataset", "id"} <= set(row):
            return None
        base = (str(row["model"]), str(row["dataset"]), str(row["id"]))
        seen[base] = seen.get(base, 0) + 1
        out[(*base, seen[base])] = pair
    return out


def read_predictions(
    paths: Sequence[Path], kind: str
) -> tuple[dict[str, dict[str, dict[tuple, str | None]]], str]:
    """({dataset: {model: {item: label}}}, what the items are) from predictions.jsonl or
    samples.jsonl files. The items are the distinct pairs of `kind` per dataset, as in `transnli
    evaluate` (a (P,H) pair shared by several triples is one item; its sentences come from the
    rows of samples.jsonl, or from the samples.jsonl beside a predictions.jsonl); only when some
    row's sentences are nowhere to be found, the triples (dataset, id, k-th row of that id)."""
    by_pair: dict[str, dict[str, dict[tuple, str | None]]] = {}
    by_triple: dict[str, dict[str, dict[tuple, str | None]]] = {}
    pairs_known = True
    model_file: dict[str, Path] = {}
    for path in paths:
        beside = _sentences_beside(path, kind)
        seen: dict[tuple, int] = {}
        for n, row in jsonl_objects(path, AlarmInputProblem):
            for field in ("model", "dataset", "id", "labels"):
                if field not in row:
                    raise _fail(
                        path, f"field {field!r} is missing (not a predictions.jsonl row)", n
                    )
            if not isinstance(row["labels"], dict) or kind not in row["labels"]:
                raise _fail(path, f"field 'labels' has no {kind!r}", n)
            model, dataset = str(row["model"]), str(row["dataset"])
            if model_file.setdefault(model, path) != path:
                raise _fail(
                    path, f"model {model!r} is also in {model_file[model]}; give each model once", n
                )
            label = _label(row["labels"][kind], path, n, f"labels.{kind}")
            # the k-th row of an id within one file is the same triple for every model (two runs
            # of evaluate over the same triples files match up)
            base = (model, dataset, str(row["id"]))
            seen[base] = seen.get(base, 0) + 1
            by_triple.setdefault(dataset, {}).setdefault(model, {})[(*base[1:], seen[base])] = label
            pair = _pair_texts(row, kind) or (beside or {}).get((*base, seen[base]))
            pairs_known = pairs_known and pair is not None
            if pairs_known:
                # a pair is labelled once per model (the label cache): the first label given
                labels = by_pair.setdefault(dataset, {}).setdefault(model, {})
                if labels.get(pair) is None:
                    labels[pair] = label
    return (by_pair, ITEMS_PAIRS) if pairs_known else (by_triple, ITEMS_TRIPLES)


def read_labelled_pairs(paths: Sequence[Path]) -> dict[str, dict[tuple, str | None]]:
    """{judge (file name): {(premise, hypothesis): label}}."""
    out: dict[str, dict[tuple, str | None]] = {}
    for path in paths:
        labels: dict[tuple, str | None] = {}
        for n, row in jsonl_objects(path, AlarmInputProblem):
            for field in ("premise", "hypothesis", "label"):
                if field not in row:
                    raise _fail(path, f"field {field!r} is missing", n)
            pair = (row["premise"], row["hypothesis"])
            label = _label(row["label"], path, n, "label")
            if pair in labels and labels[pair] != label:
                raise _fail(path, f"pair {pair!r} is labelled twice, differently", n)
            labels[pair] = label
        name = str(path)
        if name in out:
            raise AlarmInputProblem(f"{path} is given twice")
        out[name] = labels
    return out


def _kind_of(path: Path) -> str:
    if not path.is_file():
        raise AlarmInputProblem(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "counts-csv"
    if suffix == ".json":
        return "counts-json"
    try:
        for n, row in jsonl_objects(path, AlarmInputProblem):
            if "model" in row:
                return "predictions"
            if "premise" in row:
                return "pairs"
            raise _fail(
                path,
                "neither a predictions.jsonl row (field 'model') nor a labelled pair "
                "(field 'premise')",
                n,
            )
    except UnicodeDecodeError as e:
        raise _fail(path, f"not UTF-8 text ({e.reason})") from e
    raise _fail(path, "the file is empty")


# --------------------------------------------------------------------------- groups of items
def _group(
    name: str,
    labels: Sequence[str],
    judges: dict[str, tuple[int, ...]],
    note: str = "",
    items: str = "items",
) -> dict:
    if len(judges) < 2:
        raise AlarmInputProblem(f"{name}: need at least two judges, got {len(judges)}")
    try:
        A.check_judges(list(judges.values()))
    except A.AlarmInputError as e:
        raise AlarmInputProblem(f"{name}: {e}") from e
    return {
        "group": name,
        "labels": list(labels),
        "judges": judges,
        "note": note,
        "aligned": None,
        "items_are": items,
    }


def _from_items(
    name: str, per_judge: dict[str, dict[tuple, str | None]], items: str = "items"
) -> dict:
    """Counts over the items every judge labelled (unlabelled items are left out, and said)."""
    union = set().union(*(set(v) for v in per_judge.values()))
    common = [
        i
        for i in next(iter(per_judge.values()))
        if all(per_judge[j].get(i) is not None for j in per_judge)
    ]
    if not common:
        raise AlarmInputProblem(f"{name}: no item has a label from every judge")
    judges = {
        j: tuple(sum(1 for i in common if labs[i] == lab) for lab in LABELS)
        for j, labs in per_judge.items()
    }
    left = len(union) - len(common)
    group = _group(
        name,
        LABELS,
        judges,
        f"{left} {items} without a label from every judge left out" if left else "",
        items,
    )
    # question-aligned labels: what the M = 2 alarm needs
    index = {lab: n for n, lab in enumerate(LABELS)}
    group["aligned"] = [[index[labs[i]] for i in common] for labs in per_judge.values()]
    return group


def load_groups(paths: Sequence[Path], kind: str, dataset: str | None) -> list[dict]:
    kinds = {_kind_of(p) for p in paths}
    if len(kinds) > 1:
        raise AlarmInputProblem(
            "give one kind of input: counts (CSV/JSON), predictions.jsonl files, "
            "or labelled-pairs files"
        )
    what = kinds.pop()
    try:
        if what in ("counts-csv", "counts-json"):
            if len(paths) != 1:
                raise AlarmInputProblem("give one counts file (it lists every judge)")
            labels, judges = (read_counts_csv if what == "counts-csv" else read_counts_json)(
                paths[0]
            )
            return [_group(str(paths[0]), labels, judges)]
        if what == "pairs":
            if len(paths) < 2:
                raise AlarmInputProblem("give one labelled-pairs file per judge (at least two)")
            return [_from_items("labelled pairs", read_labelled_pairs(paths), "pairs")]
        data, items = read_predictions(paths, kind)
    except UnicodeDecodeError as e:
        raise AlarmInputProblem(f"an input file is not UTF-8 text ({e.reason})") from e
    if dataset is not None:
        if dataset not in data:
            raise AlarmInputProblem(
                f"no dataset {dataset!r} in the predictions (have: {', '.join(data)})"
            )
        data = {dataset: data[dataset]}
    groups = [
        _from_items(f"dataset {d}, pairs {kind}", models, items) for d, models in data.items()
    ]
    if items == ITEMS_TRIPLES:
        for g in groups:
            g["note"] = "; ".join(filter(None, [TRIPLES_NOTE, g["note"]]))
    return groups


# --------------------------------------------------------------------------- results
def _pct(x: Fraction) -> str:
    return f"{100 * float(x):.2f}%"


def parse_threshold(value: str | None) -> Fraction | None:
    """--threshold: an accuracy as 0.8, 4/5 or 80%; ValueError when it is none."""
    if value is None:
        return None
    text = value.strip()
    try:
        t = Fraction(text[:-1]) / 100 if text.endswith("%") else Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{value!r} is not a number such as 0.8 or 80%") from None
    if not 0 <= t <= 1:
        raise ValueError(f"{value!r} is not an accuracy between 0 and 1 (0% and 100%)")
    return t


def evaluate_group(group: dict, threshold: Fraction | None, m2: bool = True) -> dict:
    alarm = A.theta_star(list(group["judges"].values()))
    pair = None
    if m2 and group["aligned"] is not None:
        res = A.m2_alarm(group["aligned"], len(group["labels"]))
        names = list(group["judges"])
        pair = (res["theta"], names[res["pair"][0]], names[res["pair"][1]], res["method"])
    proven = alarm.theta if pair is None else min(alarm.theta, pair[0])
    fires = threshold is not None and Fraction(threshold) > proven
    return {**group, "alarm": alarm, "pair": pair, "proven": proven, "fires": fires}


def describe(result: dict, threshold: Fraction | None) -> list[str]:
    alarm, labels = result["alarm"], result["labels"]
    key = ", ".join(f"{lab}={q}" for lab, q in zip(labels, alarm.key, strict=True))
    lines = [
        f"{result['group']}: {len(result['judges'])} judges, {alarm.Q} {result['items_are']}"
        + (f" ({result['note']})" if result["note"] else "")
    ]
    for name, counts in result["judges"].items():
        lines.append(
            f"  {name}: " + ", ".join(f"{lab}={c}" for lab, c in zip(labels, counts, strict=True))
        )
    # named as in report.md's alarm table, which gives the same two numbers for the same run
    lines.append(
        f"  theta* (M = 1) = {_pct(alarm.theta)} ({alarm.theta}), reached at answer key {key}"
    )
    if result["pair"] is not None:
        theta, a, b, method = result["pair"]
        lines.append(
            f"  theta* (M = 2) = {_pct(result['proven'])} ({result['proven']}): the lower of "
            f"theta* (M = 1) and the pair counts' bound {_pct(theta)} ({theta}; beyond the paper, "
            f"{method}, lowest pair {a} / {b})"
        )
    proven = result["proven"]
    if proven == 1 and not result["fires"]:
        lines.append(
            "  nothing is proven: these counts are consistent with every judge being perfect"
        )
    elif threshold is None:
        lines.append(
            f"  proven: whatever the true labels, some judge has accuracy <= {_pct(proven)} "
            "on some label"
        )
    elif result["fires"]:
        lines.append(
            f"  ALARM: threshold {_pct(threshold)} > theta*: proven, without gold labels, that at "
            f"least one judge is below {_pct(threshold)} on at least one label"
        )
    else:
        lines.append(
            f"  no alarm: {_pct(threshold)} <= {_pct(proven)}; these counts do not prove any judge "
            "below it"
        )
    return lines


def to_json(result: dict) -> dict:
    alarm = result["alarm"]
    return {
        "group": result["group"],
        "note": result["note"],
        "labels": result["labels"],
        "counts": {
            j: dict(zip(result["labels"], c, strict=True)) for j, c in result["judges"].items()
        },
        "items": alarm.Q,
        "items_are": result["items_are"],
        "theta_star": float(alarm.theta),
        "theta_star_exact": str(alarm.theta),
        "answer_key_at_theta": dict(zip(result["labels"], alarm.key, strict=True)),
        "continuous_bound": float(alarm.continuous_bound),
        "fires": result["fires"],
        "proven_bound": float(result["proven"]),
        "proven_bound_exact": str(result["proven"]),
        "m2_pair": None
        if result["pair"] is None
        else {
            "theta_star": float(result["pair"][0]),
            "theta_star_exact": str(result["pair"][0]),
            "judges": list(result["pair"][1:3]),
            "method": result["pair"][3],
        },
    }
