"""Reading JSONL files of objects with errors that name the file and line, and telling a damaged
gzip file from a bad line in it."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def jsonl_objects(
    path: str | Path, error: Callable[[str], Exception]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of `path`. A line that is not valid JSON, or
    not a JSON object, raises `error("PATH:LINE: ...")` (the caller's own exception class)."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as e:
                raise error(f"{path}:{lineno}: not valid JSON: {e.msg} (column {e.colno})") from e
            if not isinstance(data, dict):
                raise error(f"{path}:{lineno}: expected a JSON object")
            yield lineno, data


GZIP_MAGIC = b"\x1f\x8b"
GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)  # what a broken gzip stream raises


def is_gzip_data(path: str | Path) -> bool:
    """Whether the file starts as gzip-compressed data does (whatever its name)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


def gzip_damage(path: str | Path) -> str | None:
    """Why the gzip file at `path` does not decompress whole (a CRC or length that does not
    match, a stream cut short), or None when it does, or when it is no gzip data at all. A
    damaged stream can decompress to wrong bytes long before the check at its end fails, so a
    reader that finds a bad line in a .gz file asks this before blaming the line."""
    if not is_gzip_data(path):
        return None
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except GZIP_ERRORS as e:
        return str(e) or type(e).__name__
    except OSError:
        return None
    return None


def damaged_gzip(detail: str, found: str | None = None) -> str:
    """The one line for a damaged gzip file; `found`: the problem its wrong bytes showed first."""
    seen = f"; what it decompresses to is not what was compressed ({found})" if found else ""
    return f"not a readable gzip file: damaged ({detail}){seen}; download or compress it again"
