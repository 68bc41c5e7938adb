"""Triples from any of the files transnli writes: JSONL, Parquet, or a saved Hugging Face dataset.

`read_any(path)` picks the reader by the path: a folder is a `datasets` folder written by
`save_to_disk` (a DatasetDict's `triples` split, or its only split), a `.parquet` file is Parquet,
anything else is JSONL. Rows of a table are validated like JSONL lines, and errors name the file,
the row and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transnli.generator.record import RecordError, TripleRecord, parse_triple_dict, read_triples
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
        yield from read_triples(path)
        return
    batches = _parquet_batches(Path(path)) if kind == "parquet" else _hf_batches(Path(path))
    row = 0
    for batch in batches:
        for data in batch:
            row += 1
            yield _record(data, path, row)


def _record(data: dict[str, Any], path: str | Path, row: int) -> TripleRecord:
    try:
        data = denormalise(data)
    except SchemaError as e:  # a gold label that is no class index
        raise RecordError(path, row, "gold_label", str(e), "row") from e
    except ValueError as e:  # a check's `extra` that is not JSON
        raise RecordError(path, row, "checks", f"an 'extra' that is not JSON ({e})", "row") from e
    return parse_triple_dict(data, path, row, unit="row")


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
