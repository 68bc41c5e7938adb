"""Readers: NLI pairs from local files or Hugging Face datasets, as a stream of `NLIPair`.

Supported inputs (`FORMATS`):

- ``jsonl`` / ``csv`` / ``tsv``: generic files with columns ``premise``, ``hypothesis`` and
  optional ``label`` (or ``gold_label``) and ``id``;
- ``snli`` / ``mnli``: the native files of SNLI 1.0 and MultiNLI 1.0, JSONL or the ``.txt`` TSV
  (``sentence1``, ``sentence2``, ``gold_label``, ``pairID``; gold ``-`` means no label);
- ``anli``: ANLI v1.0 JSONL (``context``, ``hypothesis``, label ``e``/``n``/``c``, ``uid``);
  the round is taken from an ``R1``/``R2``/``R3`` folder, so ``R1/test.jsonl`` is split ``test_r1``;
- ``wanli``: WANLI JSONL (``premise``, ``hypothesis``, ``gold``, ``id``);
- ``hf``: a Hugging Face dataset by name, ``hf:NAME:SPLIT`` or ``hf:NAME:CONFIG:SPLIT``
  (``hf:snli:validation``, ``hf:nyu-mll/multi_nli:validation_matched``,
  ``hf:facebook/anli:test_r1``, ``hf:alisawuffles/WANLI:test``).

The format is detected from the extension and the keys of the first record; ``format`` overrides.
Labels are normalised to ``entailment`` / ``neutral`` / ``contradiction`` / ``None``. Integer
labels are accepted only from Hugging Face datasets (their ClassLabel names when the dataset has
them, else the hub convention 0 entailment, 1 neutral, 2 contradiction, -1 no label), because
integer orders differ between sources. Files are read lazily, one record at a time.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from transnli.generator.record import LABELS

FORMATS = ("jsonl", "csv", "tsv", "snli", "mnli", "anli", "wanli", "hf")

ENTAILMENT, NEUTRAL, CONTRADICTION = LABELS


@dataclass(frozen=True)
class NLIPair:
    source_id: str  # the dataset's own id (pairID, uid, id), or "<file stem>:<line>" when absent
    premise: str
    hypothesis: str
    gold_label: str | None  # "entailment" | "neutral" | "contradiction" | None
    dataset: str  # "snli", "mnli", "anli", "wanli", or the file's stem for generic files
    split: str  # "train", "dev", "test_r1", ... or "" when unknown
    line: int  # 1-based line (JSONL) or row (CSV/TSV, header is 1); 0 for hub datasets


class InputError(ValueError):
    """A problem with an input: the message names the source, the line and the field when known."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, problem: str):
        where = str(path) + (f":{line}" if line else "") + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.field, self.problem = str(path), line, field, problem


@dataclass(frozen=True)
class _Schema:
    """Where each part of a pair lives in a record: candidate keys, the first present wins."""

    premise: tuple[str, ...]
    hypothesis: tuple[str, ...]
    label: tuple[str, ...]
    id: tuple[str, ...]


_NATIVE = _Schema(("sentence1",), ("sentence2",), ("gold_label",), ("pairID",))
_SCHEMAS: dict[str, _Schema] = {
    "generic": _Schema(("premise",), ("hypothesis",), ("label", "gold_label"), ("id",)),
    "snli": _NATIVE,
    "mnli": _NATIVE,
    "anli": _Schema(("context",), ("hypothesis",), ("label",), ("uid",)),
    "wanli": _Schema(("premise",), ("hypothesis",), ("gold",), ("id",)),
    # Hub datasets mostly use premise/hypothesis/label; accept the native names too.
    "hf": _Schema(
        ("premise", "sentence1", "context"),
        ("hypothesis", "sentence2"),
        ("label", "gold", "gold_label"),
        ("uid", "id", "pairID", "idx"),
    ),
}

# File extension (after any .gz) -> container syntax.
_CONTAINERS = {
    ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
    ".csv": "csv", ".tsv": "tsv", ".txt": "tsv",
}  # fmt: skip

# Hub names -> dataset name used in records (lower-case keys).
_HF_DATASETS = {
    "snli": "snli", "stanfordnlp/snli": "snli",
    "multi_nli": "mnli", "nyu-mll/multi_nli": "mnli",
    "anli": "anli", "facebook/anli": "anli",
    "alisawuffles/wanli": "wanli",
}  # fmt: skip

_LABEL_WORDS = {
    "e": ENTAILMENT, "entailment": ENTAILMENT,
    "n": NEUTRAL, "neutral": NEUTRAL,
    "c": CONTRADICTION, "contradiction": CONTRADICTION,
    "-": None, "": None,
}  # fmt: skip
_HF_INT_LABELS = {0: ENTAILMENT, 1: NEUTRAL, 2: CONTRADICTION, -1: None}

_SPLIT_WORDS = {"train", "dev", "test", "validation", "valid", "val"}


def normalize_label(value: Any, *, int_names: Mapping[int, str | None] | None = None) -> str | None:
    """`value` as "entailment" / "neutral" / "contradiction" / None; ValueError when unknown.

    Integers are accepted only when `int_names` says what they mean (Hugging Face inputs).
    """
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in _LABEL_WORDS:
        return _LABEL_WORDS[value.strip().lower()]
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if is_int and int_names is not None and value in int_names:
        return normalize_label(int_names[value])
    expected = "e/n/c, entailment/neutral/contradiction, '-' or empty"
    if is_int and int_names is None:
        expected += "; integer labels are read only from hf: datasets, files need label names"
    raise ValueError(f"unknown label {value!r} (expected {expected})")


def detect_format(path: str | Path) -> str:
    """The format of `path` (one of `FORMATS`), from its extension and its first record's keys."""
    if str(path).startswith("hf:"):
        return "hf"
    path = Path(path)
    container = _container(path)
    keys = _first_keys(path, container)
    if {"sentence1", "sentence2"} <= keys:
        name = path.name.lower()
        return "mnli" if "genre" in keys or "multinli" in name or "mnli" in name else "snli"
    if {"context", "hypothesis"} <= keys:
        return "anli"
    if {"premise", "hypothesis", "gold"} <= keys:
        return "wanli"
    if {"premise", "hypothesis"} <= keys or not keys:
        return container
    raise InputError(
        path, None, None,
        f"cannot tell the format from the keys {sorted(keys)}; expected premise/hypothesis "
        f"(or the native keys of SNLI, MNLI, ANLI, WANLI), or pass a format ({', '.join(FORMATS)})",
    )  # fmt: skip


def read_pairs(
    source: str | Path,
    format: str | None = None,
    skip_bad: bool = False,
    bad_counter: Counter | None = None,
) -> Iterator[NLIPair]:
    """Stream the NLI pairs of `source`: a file path, or ``hf:NAME[:CONFIG]:SPLIT``.

    The source is checked and its format resolved at the call (a missing file or an unknown
    format fails here; a hub dataset is loaded here); records are then parsed one at a time as
    the iterator is consumed. A malformed record raises `InputError`, or with `skip_bad` is
    skipped and counted in ``bad_counter["malformed"]``.
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    text = str(source)
    if format == "hf" or text.startswith("hf:"):
        if format not in (None, "hf"):
            raise InputError(text, None, None, f"a hub source is read as 'hf', not {format!r}")
        return _read_hub(text if text.startswith("hf:") else f"hf:{text}", skip_bad, bad_counter)
    path = Path(source)
    if not path.is_file():
        problem = "is not a file" if path.exists() else "no such file"
        raise InputError(path, None, None, problem)
    format = format or detect_format(path)
    if format in ("jsonl", "csv", "tsv"):
        container, schema, dataset = format, "generic", _stem(path)
    else:
        container, schema, dataset = _container(path), format, format
    split = _split_from_path(path, with_round=(format == "anli"))
    return _read_file(path, container, schema, dataset, split, skip_bad, bad_counter)


def pairs_from_hf_rows(
    rows: Iterable[Mapping[str, Any]],
    dataset: str,
    split: str = "",
    *,
    source: str | None = None,
    skip_bad: bool = False,
    bad_counter: Counter | None = None,
) -> Iterator[NLIPair]:
    """NLI pairs from Hugging Face-style row dicts (a `datasets.Dataset`, or any iterable).

    Integer labels are read through the dataset's ``ClassLabel`` names when `rows` has them,
    else by the hub convention of SNLI/MNLI/ANLI: 0 entailment, 1 neutral, 2 contradiction,
    -1 no label. `dataset` is the name written into records (a hub name such as
    ``facebook/anli`` is shortened to ``anli``); ids default to ``<dataset>:<split>:<row index>``.
    """
    name = _HF_DATASETS.get(dataset.lower(), dataset.rsplit("/", 1)[-1].lower())
    source = source or f"hf:{dataset}:{split}"
    int_names: Mapping[int, str | None] = _HF_INT_LABELS
    features = getattr(rows, "features", None) or {}
    for key in _SCHEMAS["hf"].label:
        names = getattr(features.get(key), "names", None)
        if names:
            int_names = {-1: None, **dict(enumerate(names))}
            break

    def convert(index: int, row: Mapping[str, Any]) -> NLIPair:
        return _to_pair(
            row, _SCHEMAS["hf"], where=f"{source}[{index}]", line=0,
            fallback_id=f"{name}:{split}:{index}", dataset=name, split=split, int_names=int_names,
        )  # fmt: skip

    yield from _guarded(convert, enumerate(rows), skip_bad, bad_counter)


# --- internals -------------------------------------------------------------------------------


def _read_hub(source: str, skip_bad: bool, bad_counter: Counter | None) -> Iterator[NLIPair]:
    parts = source[len("hf:") :].split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise InputError(source, None, None, "expected hf:NAME:SPLIT or hf:NAME:CONFIG:SPLIT")
    name, config, split = parts[0], (parts[1] if len(parts) == 3 else None), parts[-1]
    try:
        import datasets

        rows = datasets.load_dataset(name, config, split=split)
    except Exception as exc:  # any failure (offline, unknown name, bad split): same advice
        raise InputError(
            source, None, None,
            f"could not load {name!r} split {split!r} from the Hugging Face hub "
            f"({type(exc).__name__}: {exc}). Without hub access, download the dataset's files "
            f"(e.g. SNLI/MultiNLI .jsonl, ANLI R1/test.jsonl, WANLI test.jsonl) and pass the file "
            f"path instead",
        ) from exc  # fmt: skip
    return pairs_from_hf_rows(
        rows, name, split, source=source, skip_bad=skip_bad, bad_counter=bad_counter
    )


def _read_file(
    path: Path,
    container: str,
    schema_name: str,
    dataset: str,
    split: str,
    skip_bad: bool,
    bad_counter: Counter | None,
) -> Iterator[NLIPair]:
    schema = _SCHEMAS[schema_name]
    # SNLI/MultiNLI .txt (and GLUE's .tsv) do not quote fields; generic TSV/CSV may.
    quoting = csv.QUOTE_NONE if schema_name in ("snli", "mnli") else csv.QUOTE_MINIMAL

    def convert(line: int, record: dict[str, Any] | InputError) -> NLIPair:
        if isinstance(record, InputError):
            raise record
        return _to_pair(
            record, schema, where=path, line=line,
            fallback_id=f"{_stem(path)}:{line}", dataset=dataset, split=split,
        )  # fmt: skip

    with _open(path) as f:
        records = (
            _json_records(f, path)
            if container == "jsonl"
            else _table_records(f, path, container, schema, quoting)
        )
        yield from _guarded(convert, records, skip_bad, bad_counter)


def _guarded(
    convert: Callable[..., NLIPair],
    items: Iterable[tuple[Any, Any]],
    skip_bad: bool,
    bad_counter: Counter | None,
) -> Iterator[NLIPair]:
    """``convert(*item)`` for each item; an `InputError` is raised, or skipped and counted."""
    for item in items:
        try:
            pair = convert(*item)
        except InputError:
            if not skip_bad:
                raise
            if bad_counter is not None:
                bad_counter["malformed"] += 1
            continue
        yield pair


def _to_pair(
    record: Mapping[str, Any],
    schema: _Schema,
    *,
    where: str | Path,
    line: int,
    fallback_id: str,
    dataset: str,
    split: str,
    int_names: Mapping[int, str | None] | None = None,
) -> NLIPair:
    def first(keys: tuple[str, ...]) -> tuple[str, Any]:
        for key in keys:
            if key in record:
                return key, record[key]
        return keys[0], None

    texts = []
    for keys in (schema.premise, schema.hypothesis):
        key, value = first(keys)
        if not isinstance(value, str):
            raise InputError(where, line, key, "missing or not a string")
        texts.append(value)
    key, value = first(schema.label)
    try:
        gold = normalize_label(value, int_names=int_names)
    except ValueError as exc:
        raise InputError(where, line, key, str(exc)) from None
    _, ident = first(schema.id)
    source_id = fallback_id if ident is None or ident == "" else str(ident)
    return NLIPair(source_id, texts[0], texts[1], gold, dataset, split, line)


def _json_records(f: Iterable[str], path: Path) -> Iterator[tuple[int, Any]]:
    for line, text in enumerate(f, 1):
        if not text.strip():
            continue
        problem = None
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            problem = f"invalid JSON: {exc.msg} (column {exc.colno})"
        else:
            if not isinstance(record, dict):
                problem = "not a JSON object"
        yield line, InputError(path, line, None, problem) if problem else record


def _table_records(
    f: Iterable[str], path: Path, container: str, schema: _Schema, quoting: int
) -> Iterator[tuple[int, Any]]:
    reader = csv.reader(f, delimiter="\t" if container == "tsv" else ",", quoting=quoting)
    header = next(reader, None)
    if header is None:
        return
    for keys in (schema.premise, schema.hypothesis):
        if not set(keys) & set(header):
            raise InputError(path, 1, keys[0], f"no such column in the header {header}")
    for line, row in enumerate(reader, 2):
        if not row:
            continue
        if len(row) > len(header):
            problem = f"{len(row)} columns, but the header has {len(header)}"
            yield line, InputError(path, line, None, problem)
            continue
        yield line, dict(zip(header, row, strict=False))  # a short row lacks its last columns


def _open(path: Path):
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _stem(path: Path) -> str:
    name = path.name[: -len(".gz")] if path.name.lower().endswith(".gz") else path.name
    return Path(name).stem


def _container(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    container = _CONTAINERS.get(Path(name).suffix)
    if container:
        return container
    with _open(path) as f:  # no known extension: sniff the first non-blank line
        first = next((text for text in f if text.strip()), "")
    if first.lstrip().startswith("{"):
        return "jsonl"
    if "\t" in first or "," in first:
        return "tsv" if "\t" in first else "csv"
    raise InputError(path, None, None, f"cannot tell the format; pass one of {', '.join(FORMATS)}")


def _first_keys(path: Path, container: str, max_lines: int = 1000) -> set[str]:
    """Keys of the first readable record (JSONL) or the header (CSV/TSV); empty when none."""
    with _open(path) as f:
        if container != "jsonl":
            delimiter = "\t" if container == "tsv" else ","
            return set(next(csv.reader(f, delimiter=delimiter), []))
        for text in islice(f, max_lines):
            try:
                record = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                return set(record)
    return set()


def _split_from_path(path: Path, with_round: bool) -> str:
    """``snli_1.0_dev`` -> dev, ``multinli_1.0_dev_matched`` -> dev_matched, ``R1/test`` -> test_r1."""
    words = re.split(r"[^a-z0-9]+", _stem(path).lower())
    split = ""
    for i, word in enumerate(words):
        if word in _SPLIT_WORDS:
            follow = words[i + 1] if i + 1 < len(words) else ""
            split = word + (f"_{follow}" if follow in ("matched", "mismatched") else "")
            break
    if with_round and split:
        rounds = [p.lower() for p in (*path.parent.parts, *words) if re.fullmatch(r"[rR][1-3]", p)]
        if rounds:
            split += f"_{rounds[-1]}"
    return split
