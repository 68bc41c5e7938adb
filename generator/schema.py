"""The declared schema of exported triples: one `datasets.Features` for Parquet and HF exports.

A triples.jsonl line carries only the checks that ran and only the details each backend gives, so a
schema inferred from the data changes from run to run (`checks.grammar.added` is `list<null>` when
no candidate added an error, keys appear only where a filter ran) and two runs' files cannot be
loaded together. Here the schema is declared once, and every record is normalised to it:

- every top-level field and every check name is always present; a check that did not run is null;
- every check has the same fields (the union of what the backends report), null where its backend
  does not report that field; keys no field names go, as JSON, to the check's `extra`;
- `gold_label` is a ClassLabel over LABELS; a missing gold label is -1 (the `datasets` convention
  for "no label", which `ClassLabel.int2str` refuses, so it can never be read as a class);
- `candidates` is a list of {antonym: string, score: float64, rule: string}; an LLM answer and a
  negation have a null score, and only a negation names its `rule` (add_not, modal, ...).
"""

from __future__ import annotations

import json
from typing import Any

from transnli.generator.filters import filter_names
from transnli.generator.jsonl import jsonl_objects
from transnli.generator.lm_choice import CHOICE, PER_SENTENCE
from transnli.generator.record import LABELS

NO_LABEL = -1

# Check names a record can carry: the LLM answer check, the candidate filters (in their running
# order, from the filter registry), the language model's choice among a word's antonyms, the checks
# (generator/checks) and the per-sentence limit (transnli.generator.lm_choice).
CHECK_NAMES = (
    "llm_answer",
    *filter_names(),
    CHOICE,
    "grammar",
    "acceptability",
    PER_SENTENCE,
)


def _check_features(string, i64, f64, boolean) -> dict:
    """The fields of one `checks.<name>` entry: every backend's evidence, null where it gives
    none."""
    return {
        "backend": string,
        "passed": boolean,
        "reason": string,  # filters give one when they reject
        # grammar (harper, languagetool)
        "errors_original": i64,
        "errors_candidate": i64,
        "added": [string],
        # acceptability: cola
        "score": f64,
        "threshold": f64,
        # acceptability: judge (its probability that H' is good; also on max_per_sentence)
        "p_good": f64,
        # acceptability: link-grammar
        "null_count": i64,
        "null_count_original": i64,
        "null_count_above": i64,
        # acceptability: llm
        "natural": boolean,
        "meaning_changed": boolean,
        "reply": string,
        "outcome": string,
        # llm_answer (the verdict on an LLM's replacement)
        "verdict": string,
        "old_word": string,
        "new_word": string,
        "similarity": f64,
        "changes": [{"op": string, "position": i64, "original": string, "answer": string}],
        "negations_added": [string],
        "article": [string],
        # filters: sense_fit, argument_structure
        "sense": string,
        "antonym_sense_prior": f64,
        "frames": [i64],  # WordNet verb frame numbers
        # anything else a backend reported, as a JSON object (null when nothing)
        "extra": string,
    }


def _features():
    """Built on first use: importing `datasets` is slow (docs/speed.md), which `generate` need not
    pay."""
    from datasets import ClassLabel, Features, Value

    string, i64, f64, boolean = Value("string"), Value("int64"), Value("float64"), Value("bool")
    check = _check_features(string, i64, f64, boolean)
    llm = {
        "backend": string,
        "model": string,
        "prompt_id": string,
        "reply": string,
        "answer": string,
        "verdict": string,
        "tokens": {"prompt": i64, "completion": i64},
        "wordnet": {
            "status": string,
            "antonym": string,
            "modified_hypothesis": string,
            "same": boolean,
        },
        "error": string,
    }
    return Features(
        {
            "id": string,
            "source_id": string,
            "dataset": string,
            "split": string,
            "premise": string,
            "hypothesis": string,
            "modified_hypothesis": string,
            "gold_label": ClassLabel(names=list(LABELS)),
            "target": string,
            "word": string,
            "word_index": i64,
            "char_start": i64,
            "char_end": i64,
            "pos": string,
            "tag": string,
            "antonym": string,
            # rule: the negation rule that made H¬ (transnli.generator.negation); null otherwise
            "candidates": [{"antonym": string, "score": f64, "rule": string}],
            "pipeline": string,
            "checks": {name: check for name in CHECK_NAMES},
            "rejected_by": string,
            "reason": string,
            "llm": llm,
        }
    )


_CACHE: dict[str, Any] = {}


def triple_features():
    """The `datasets.Features` of an exported triples (or rejected) table."""
    if "features" not in _CACHE:
        _CACHE["features"] = _features()
    return _CACHE["features"]


class SchemaError(ValueError):
    """A record that does not fit the declared schema; the message names the record and field."""


# What one record's field must be, for the plain (non-nested) fields.
_STRINGS = (
    "id",
    "source_id",
    "dataset",
    "split",
    "premise",
    "hypothesis",
    "modified_hypothesis",
    "target",
    "word",
    "pos",
    "tag",
    "antonym",
    "pipeline",
)
_INTS = ("word_index", "char_start", "char_end")
_INT_DEFAULT = -1


def gold_to_int(gold: Any) -> int:
    if gold is None:
        return NO_LABEL
    if gold not in LABELS:
        raise SchemaError(f"gold_label {gold!r} is not one of {', '.join(LABELS)} or null")
    return LABELS.index(gold)


def gold_from_int(value: Any) -> str | None:
    """The label name of a ClassLabel value; None for -1 (no gold label)."""
    if value is None or value == NO_LABEL:
        return None
    if isinstance(value, str):  # a table written by hand, with names
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(LABELS):
        raise SchemaError(f"{value!r} is not a class index 0-{len(LABELS) - 1} or -1 (no label)")
    return LABELS[value]


def _fit(value: Any, feature: Any, where: str) -> Any:
    """`value` shaped to `feature` (a Value, a dict of features or a List); raises SchemaError."""
    if value is None:
        return None
    if isinstance(feature, dict):
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an object, got {type(value).__name__}")
        # Only the keys present are visited (a check reports a few of its many fields).
        out = dict.fromkeys(feature)
        rest = {}
        for k, v in value.items():
            f = feature.get(k)
            if f is None or k == "extra":
                rest[k] = v
            elif v is not None:
                out[k] = _fit(v, f, f"{where}.{k}")
        if rest:
            if "extra" not in feature:
                raise SchemaError(f"{where}: unknown key(s) {', '.join(sorted(rest))}")
            out["extra"] = json.dumps(rest, ensure_ascii=False, sort_keys=True)
        return out
    if isinstance(feature, list) or hasattr(feature, "feature"):  # [x], or datasets' List(x)
        inner = feature[0] if isinstance(feature, list) else feature.feature
        if not isinstance(value, list | tuple):
            raise SchemaError(f"{where}: expected a list, got {type(value).__name__}")
        return [_fit(v, inner, f"{where}[{i}]") for i, v in enumerate(value)]
    kind = feature.dtype  # a datasets.Value
    if kind == "string":
        if not isinstance(value, str):
            raise SchemaError(f"{where}: expected a string, got {value!r}")
    elif kind == "bool":
        if not isinstance(value, bool):
            raise SchemaError(f"{where}: expected true or false, got {value!r}")
    elif kind == "int64":
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaError(f"{where}: expected an integer, got {value!r}")
    elif kind == "float64":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SchemaError(f"{where}: expected a number, got {value!r}")
        value = float(value)
    return value


def normalise(record: dict[str, Any]) -> dict[str, Any]:
    """One triples.jsonl record (a dict) as a row of the declared schema: every field present, in
    schema order, with its declared type. Raises SchemaError naming the field that does not fit."""
    feats = triple_features()
    row: dict[str, Any] = {}
    for name in feats:
        value = record.get(name)
        if name in _STRINGS:
            row[name] = "" if value is None else _fit(value, feats[name], name)
        elif name in _INTS:
            row[name] = _INT_DEFAULT if value is None else _fit(value, feats[name], name)
        elif name == "gold_label":
            row[name] = gold_to_int(value)
        elif name == "candidates":
            row[name] = _fit(value or [], feats[name], name)
        elif name == "checks":
            checks = value or {}
            if not isinstance(checks, dict):
                raise SchemaError(f"checks: expected an object, got {type(checks).__name__}")
            unknown = sorted(set(checks) - set(CHECK_NAMES))
            if unknown:
                raise SchemaError(
                    f"checks: unknown check(s) {', '.join(unknown)}; this transnli knows "
                    f"{', '.join(CHECK_NAMES)}"
                )
            row[name] = {c: _fit(checks.get(c), feats[name][c], f"checks.{c}") for c in CHECK_NAMES}
        else:  # rejected_by, reason, llm: null when absent
            row[name] = _fit(value, feats[name], name)
    return row


def _strip(value: Any) -> Any:
    """A check's entry without the null fields the schema added, with `extra` merged back."""
    out = {k: v for k, v in value.items() if v is not None and k != "extra"}
    if value.get("extra"):
        out.update(json.loads(value["extra"]))
    return out


# Candidate keys only some pipelines write (a null one was added by the schema, not the record).
_CANDIDATE_OPTIONAL = ("rule",)


def _candidate(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {k: v for k, v in value.items() if v is not None or k not in _CANDIDATE_OPTIONAL}


def denormalise(row: dict[str, Any]) -> dict[str, Any]:
    """A table row back as a triples.jsonl record (a dict): gold label by name, only the checks
    that ran, each with only the fields its backend gave, candidates without the keys their
    pipeline does not write. Columns the schema does not name are kept as they are; validation is
    the record reader's (transnli.generator.record)."""
    out = dict(row)
    if "gold_label" in out:
        out["gold_label"] = gold_from_int(out["gold_label"])
    if isinstance(out.get("candidates"), list):
        out["candidates"] = [_candidate(c) for c in out["candidates"]]
    checks = out.get("checks")
    if isinstance(checks, dict):
        out["checks"] = {name: _strip(c) for name, c in checks.items() if isinstance(c, dict)}
    return out


def arrow_table(rows: list[dict[str, Any]]):
    """Normalised rows as a pyarrow Table of the declared schema (with the `datasets` features in
    its metadata, so `load_dataset("parquet")` gives the ClassLabel back)."""
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=triple_features().arrow_schema)


def read_records(path) -> list[dict[str, Any]]:
    """The records of a triples JSONL file as dicts, normalised; errors name file, line and
    field."""
    rows = []
    for lineno, data in jsonl_objects(path, SchemaError):
        try:
            rows.append(normalise(data))
        except SchemaError as e:
            raise SchemaError(f"{path}:{lineno}: field {e}") from e
    return rows


# The fields of an exported table, for the dataset card and docs/publishing.md: (name, type,
# meaning).
FIELD_DOCS = (
    ("id", "string", "stable id of the triple (hash of its source pair, word and replacement)"),
    ("source_id", "string", "id of the NLI pair it was made from"),
    ("dataset", "string", "source dataset (e.g. snli, mnli)"),
    ("split", "string", "split of the source dataset"),
    ("premise", "string", "P, the premise of the source pair"),
    ("hypothesis", "string", "H, the hypothesis of the source pair"),
    ("modified_hypothesis", "string", "H', H with one word replaced by an antonym"),
    (
        "gold_label",
        "ClassLabel",
        "gold label of (P, H): 0 entailment, 1 neutral, 2 contradiction, -1 none",
    ),
    ("target", "string", "which sentence was modified (hypothesis)"),
    ("word", "string", "the replaced word"),
    ("word_index", "int64", "its token index in H (-1 when unknown)"),
    ("char_start", "int64", "its first character in H (-1 when unknown)"),
    ("char_end", "int64", "one past its last character in H (-1 when unknown)"),
    ("pos", "string", "its universal POS tag"),
    ("tag", "string", "its fine-grained (Penn) tag"),
    ("antonym", "string", "the antonym put in its place"),
    (
        "candidates",
        "list of {antonym, score, rule}",
        "every antonym considered, best first, with its similarity score (null for an LLM "
        "answer or a negation); rule: the negation rule that made H' (negation pipeline only)",
    ),
    ("pipeline", "string", "wordnet, llm or negation"),
    (
        "checks",
        "struct",
        "one entry per check and filter (null when it did not run): backend, passed, "
        "reason and the backend's evidence; see the schema for every field",
    ),
    ("rejected_by", "string", "the check or filter that rejected it (rejected split only)"),
    ("reason", "string", "why it was rejected (rejected split only)"),
    ("llm", "struct", "the LLM's reply and verdict (llm pipeline only)"),
)
