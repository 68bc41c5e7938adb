"""Reading JSONL files of objects with errors that name the file and line."""

from __future__ import annotations

import json
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
