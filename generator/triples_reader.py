"""Triples from any of the files transnli writes: JSONL, Parquet, or a saved Hugging Face dataset.

`read_any(path)` picks the reader by the path: a folder is a `datasets` folder written by
`save_to_disk` (a DatasetDict's `triples` split, or its only split), a `.parquet` file is Parquet,
anything else is JSONL (gzip-compressed when it ends in `.gz`). Every line or row is checked as
strictly as the generator's readers check their inputs: each field of its type (`TripleRecord`'s
annotations decide), no lone surrogate (a `\\ud800` escape without its pair, which no output file
could hold), UTF-8 text, a readable gzip stream. Any problem is one error naming the file, the line
(or row) and the field.
"""

from __future__ import annotations

import gzip
import json
import types
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from transnli.generator.jsonl import GZIP_ERRORS, damaged_gzip, gzip_damage
from transnli.generator.record import RecordError, TripleRecord, parse_triple_dict
from transnli.generator.schema import SchemaError, denormalise

BATCH = 4096
PREFERRED_SPLITS = ("triples", "test")  # what `export --to hf` and the Hub folder call the triples


class TableError(ValueError):
    """A triples table that cannot be read at all (not a Parquet file, no such split, ...)."""


def triples_kind(path: str | Path) -> str:
    """ "hf", "parquet" or "jsonl" for a triples input path."""
    p = Path(path)
    if p.is_dir():
        return "hf"
    if p.suffix.lower() == ".parquet":
        return "parquet"
    return "jsonl"


def read_any(path: str | Path) -> Iterator[TripleRecord]:
    """Stream the records of a triples input of any kind, in row order."""
    kind = triples_kind(path)
    if kind == "jsonl":
        try:
            for line, data in _json_lines(Path(path)):
                yield _record(data, path, line, unit="line")
        except RecordError as e:
            damage = gzip_damage(path) if Path(path).suffix.lower() == ".gz" else None
            if damage is None:
                raise
            found = (
                None
                if "gzip" in e.problem
                else (f"field '{e.field}': " if e.field else "") + e.problem
            )
            raise RecordError(path, e.line, None, damaged_gzip(damage, found)) from None
        return
    batches = _parquet_batches(Path(path)) if kind == "parquet" else _hf_batches(Path(path))
    row = 0
    for batch in batches:
        for data in batch:
            row += 1
            yield _record(data, path, row)


def _record(data: dict[str, Any], path: str | Path, row: int, unit: str = "row") -> TripleRecord:
    if unit == "row":  # a table's columns: class indices and JSON text back to the record's form
        try:
            data = denormalise(data)
        except SchemaError as e:  # a gold label that is no class index
            raise RecordError(path, row, "gold_label", str(e), unit) from e
        except ValueError as e:  # a check's `extra` that is not JSON
            raise RecordError(
                path, row, "checks", f"an 'extra' that is not JSON ({e})", unit
            ) from e
    return parse_triple_dict(checked_fields(data, path, row, unit), path, row, unit=unit)


@cache
def field_types() -> dict[str, tuple[tuple[type, ...], bool]]:
    """Per TripleRecord field: the types its value may have, and whether null is allowed (read off
    the dataclass's annotations, so a new field is checked without a list kept in step)."""
    out = {}
    for name, hint in typing.get_type_hints(TripleRecord).items():
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        options = typing.get_args(hint) if union else (hint,)
        kinds = tuple(typing.get_origin(o) or o for o in options if o is not type(None))
        out[name] = (kinds, type(None) in options)
    return out


@cache
def _allowed_pairs() -> frozenset[tuple[str, type]]:
    """(field, type) for every type a field's value may have, null included where allowed."""
    return frozenset(
        (name, kind)
        for name, (kinds, nullable) in field_types().items()
        for kind in (*kinds, *((type(None),) if nullable else ()))
    )


_KIND_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "an object"}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return f"a number ({value})"
    return _KIND_NAMES.get(type(value), type(value).__name__)


def checked_fields(data: dict[str, Any], path: str | Path, line: int, unit: str) -> dict[str, Any]:
    """`data` with each known field checked against its type; a null where the record allows
    none means "not given" (the field's default, as for an absent key). Unknown keys are left to
    the record, which ignores them."""
    allowed_pairs = _allowed_pairs()  # exact types: true/false is no integer here
    if allowed_pairs.issuperset(zip(data, map(type, data.values()), strict=True)):
        return data  # the common case, checked in C: one set lookup a field
    kinds = field_types()
    absent = []
    for name, value in data.items():
        spec = kinds.get(name)
        if spec is None:
            continue
        allowed, nullable = spec
        if value is None:
            if not nullable:
                absent.append(name)
            continue
        if type(value) not in allowed:  # exact: true/false is no integer here
            wanted = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in allowed)
            raise RecordError(path, line, name, f"expected {wanted}, got {_kind(value)}", unit)
    if absent:
        data = {k: v for k, v in data.items() if k not in absent}
    return data


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line of a JSONL file, `.gz` decompressed; a line
    that is not UTF-8, not JSON or not an object, a lone surrogate, or a gzip stream that breaks
    off is a RecordError naming the line."""
    gz = path.suffix.lower() == ".gz"
    lineno = 0
    try:
        with gzip.open(path, "rb") if gz else open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                data = _json_line(raw, path, lineno, gz)
                if data is not None:
                    yield lineno, data
    except GZIP_ERRORS as e:
        raise RecordError(
            path, lineno + 1, None, f"not a readable gzip file ({e}); compress it again or unzip it"
        ) from None


def _json_line(raw: bytes, path: Path, lineno: int, gz: bool) -> dict[str, Any] | None:
    if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a byte-order mark
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if lineno == 1 and raw.startswith(b"\x1f\x8b") and not gz:
            problem = "gzip-compressed data; name the file .gz (e.g. triples.jsonl.gz) or unzip it"
        else:
            problem = (
                f"not UTF-8 (byte 0x{raw[e.start]:02x} at byte {e.start + 1} of the line); "
                "save the file as UTF-8"
            )
        raise RecordError(path, lineno, None, problem) from None
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError(
            path, lineno, None, f"not valid JSON: {e.msg} (column {e.colno})"
        ) from None
    if not isinstance(data, dict):
        raise RecordError(path, lineno, None, f"expected a JSON object, got {_kind(data)}")
    if "\\u" in text:  # only an escape can make a lone surrogate: valid UTF-8 holds none
        _no_lone_surrogate(data, path, lineno)
    return data


def _no_lone_surrogate(data: dict[str, Any], path: Path, lineno: int) -> None:
    for name, value in data.items():
        for text in _strings(value):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:
                code = f"\\u{ord(text[e.start]):04x}"
                raise RecordError(
                    path,
                    lineno,
                    name,
                    f"a lone surrogate {code} at character {e.start + 1} is not text; "
                    "fix the escape in the file",
                ) from None


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _parquet_batches(path: Path) -> Iterator[list[dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise TableError(f"{path} is not a readable Parquet file ({e})") from e
    _require_columns(path, pf.schema_arrow.names)
    for batch in pf.iter_batches(batch_size=BATCH):
        yield batch.to_pylist()


def _hf_batches(path: Path) -> Iterator[list[dict[str, Any]]]:
    import datasets

    try:
        loaded = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError, OSError) as e:
        raise TableError(
            f"{path} is a folder but not a saved Hugging Face dataset (the output of "
            f"save_to_disk, e.g. `transnli export --to hf`): {e}"
        ) from e
    if isinstance(loaded, datasets.DatasetDict):
        splits = list(loaded)
        name = next(
            (s for s in PREFERRED_SPLITS if s in loaded), splits[0] if len(splits) == 1 else None
        )
        if name is None:
            raise TableError(
                f"{path} holds the splits {', '.join(splits)}; none is called "
                f"{' or '.join(PREFERRED_SPLITS)}, so which to evaluate is unclear"
            )
        loaded = loaded[name]
    _require_columns(path, loaded.column_names)
    table = loaded.with_format("arrow")
    for start in range(0, len(loaded), BATCH):
        yield table[start : start + BATCH].to_pylist()


def _require_columns(path: Path, names: list[str]) -> None:
    missing = [c for c in ("premise", "hypothesis", "modified_hypothesis") if c not in names]
    if missing:
        raise TableError(
            f"{path}: column(s) {', '.join(missing)} missing (it has {', '.join(names) or 'none'})"
        )
