"""`transnli show EVAL_DIR`: browse the triples a model got wrong, from samples.jsonl.

Reads the evaluation's summary.json for the models and datasets it holds (so a typo is an error
that lists the valid names, not an empty answer), then streams samples.jsonl (a large run is
never held in memory) and prints the matching rows as readable text or as JSONL.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transnli.generator.jsonl import jsonl_objects

from .errors import EvaluatorError
from .labels import SHORT
from .plots import short_name
from .rules import RULES_BY_KEY
from .samples import SAMPLES_NAME, all_rule_keys, violates
from .schedule import KIND_TITLES, KINDS

EXTRA_DEFINITIONS = {
    "substitution": "mutual E => M(P,H')=M(P,H) (beyond the paper)",
    "contradiction_symmetry": "M(H,H')=C => M(H',H)=C (beyond the paper)",
}


class ShowError(EvaluatorError):
    """A problem with the folder or a filter; one line, no traceback."""


@dataclass(frozen=True)
class Query:
    rule: str | None = None  # a key of all_rule_keys(), None: any of the paper's rules
    model: str | None = None  # a model as summary.json names it
    dataset: str | None = None
    held: bool = False  # the cases where the rule held instead of the violations


def _choose(kind: str, given: str, valid: Sequence[str], aliases: dict[str, list[str]]) -> str:
    """`given` as one of `valid`: exact, else case-insensitive, else by alias (a short name)."""
    if given in valid:
        return given
    folded = [v for v in valid if v.lower() == given.lower()]
    matches = folded or aliases.get(given.lower(), [])
    if len(matches) == 1:
        return matches[0]
    listing = ", ".join(valid) if valid else "none"
    if len(matches) > 1:
        raise ShowError(f"{kind} {given!r} is ambiguous: it names {', '.join(matches)}")
    raise ShowError(f"unknown {kind} {given!r}; valid: {listing}")


def resolve_query(
    summary: dict[str, Any],
    rule: str | None,
    model: str | None,
    dataset: str | None,
    held: bool = False,
) -> Query:
    """Check the filters against the evaluation; errors list what is valid."""
    if rule is not None:
        rule = _choose(
            "rule", rule, all_rule_keys(), {r.name.lower(): [r.key] for r in RULES_BY_KEY.values()}
        )
    models = [m["model"] for m in summary.get("models", [])]
    if model is not None:
        aliases: dict[str, list[str]] = {}
        for spec in models:
            aliases.setdefault(short_name(spec).lower(), []).append(spec)
            if ":" in spec:  # "hf:/x/model" also answers to "/x/model"
                aliases.setdefault(spec.split(":", 1)[1].lower(), []).append(spec)
        model = _choose("model", model, models, aliases)
    if dataset is not None:
        dataset = _choose("dataset", dataset, list(summary.get("datasets", [])), {})
    return Query(rule, model, dataset, held)


def read_summary(eval_dir: Path) -> dict[str, Any]:
    path = eval_dir / "summary.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShowError(
            f"{eval_dir} holds no summary.json: is it the --out folder of `transnli evaluate`?"
        ) from None
    except (OSError, ValueError) as e:
        raise ShowError(f"{path}: cannot be read ({e})") from e
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise ShowError(f"{path}: not a transnli summary (no models list)")
    return data


def iter_samples(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of samples.jsonl; a broken line is an error naming file and line."""
    if not path.is_file():
        raise ShowError(
            f"{path} does not exist; evaluations made before samples.jsonl existed lack "
            "it: rerun `transnli evaluate` (its labels come from the cache)"
        )
    for n, row in jsonl_objects(path, ShowError):
        if not {"model", "dataset", "labels", "rule"} <= set(row):
            raise ShowError(f"{path}:{n}: not a samples row (needs model, dataset, labels, rule)")
        yield row


def select(rows: Iterable[dict[str, Any]], query: Query) -> Iterator[dict[str, Any]]:
    """The rows that violate (or, with held, satisfy) the query's rule under its filters."""
    for row in rows:
        if query.model is not None and row["model"] != query.model:
            continue
        if query.dataset is not None and row["dataset"] != query.dataset:
            continue
        outcome = violates(row, query.rule)
        if outcome is None or outcome == query.held:
            continue
        yield row


def _label(row: dict[str, Any], kind: str) -> str:
    label = row["labels"].get(kind)
    if label is None:
        return "-"
    probs = (row.get("probs") or {}).get(kind)
    return (
        f"{SHORT.get(label, label)} {probs[label]:.2f}"
        if probs and label in probs
        else SHORT.get(label, label)
    )


def _rule_line(row: dict[str, Any], rule: str | None, held: bool) -> str:
    key = rule if rule is not None else row["rule"]
    verdict = "holds" if held else "violated"
    if key in RULES_BY_KEY:
        r = RULES_BY_KEY[key]
        return f"{r.key} {r.name} {verdict}: {r.description}"
    return f"{key} {verdict}: {EXTRA_DEFINITIONS[key]}"


def format_text(row: dict[str, Any], rule: str | None = None, held: bool = False) -> str:
    """One row as a readable block: a header, the three sentences, the four labels."""
    gold = row.get("gold_label")
    lines = [
        f"{row['id']}  [{row['dataset']}]  {row['model']}",
        f"  {_rule_line(row, rule, held)}",
        f"  P : {row.get('premise', '')}",
        f"  H : {row.get('hypothesis', '')}",
        f"  H': {row.get('modified_hypothesis', '')}",
        "  "
        + "   ".join(f"{KIND_TITLES[k]} {_label(row, k)}" for k in KINDS)
        + (f"   gold(P,H) {SHORT.get(gold, gold)}" if gold else ""),
    ]
    return "\n".join(lines)


def show_samples(eval_dir: Path, query: Query, limit: int, fmt: str, out=None) -> tuple[int, int]:
    """Print up to `limit` matching rows (0: all); returns (shown, matching)."""
    out = out or sys.stdout
    shown = total = 0
    for row in select(iter_samples(eval_dir / SAMPLES_NAME), query):
        total += 1
        if limit and shown >= limit:
            continue  # keep counting: the footer says how many there are
        if fmt == "jsonl":
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            out.write(("\n" if shown else "") + format_text(row, query.rule, query.held) + "\n")
        shown += 1
    return shown, total
