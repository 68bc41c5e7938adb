"""How the evaluator's numbers become text and files: percentages, rates and scores with their
Wilson intervals, markdown tables for report.md, and the writers of its CSV, JSON and JSONL files.

Every writer is deterministic (fixed float format, "\\n" line ends, no NaN), so the same summary
gives byte-identical files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import EvaluatorError

DASH = "–"


def pct(x: float | None, digits: int = 1) -> str:
    return DASH if x is None else f"{100 * x:.{digits}f}%"


def rate_with_ci(cell: dict[str, Any]) -> str:
    """ "12.5% [5.1, 27.0] (3/24)"; "– (0/0)" when no case."""
    if cell.get("rate") is None:
        return f"{DASH} (0/0)"
    lo, hi = cell["ci95"]
    return (
        f"{pct(cell['rate'])} [{100 * lo:.1f}, {100 * hi:.1f}] "
        f"({cell['violations']}/{cell['cases']})"
    )


def noise_cells(cell: dict[str, Any]) -> tuple[str, str]:
    """A rule cell's confident-triple and p_good-weighted rates as text: ("8.0% [3.1, 19.0]
    (4/50)", "9.1% [4.0, 19.2] (n_eff 45.3)"); dashes where the cell has none."""
    confident, weighted = cell.get("confident"), cell.get("weighted")
    if confident is None or weighted is None:
        return DASH, DASH
    if weighted.get("rate") is None:
        return rate_with_ci(confident), f"{DASH} (0 cases)"
    lo, hi = weighted["ci95"]
    return (
        rate_with_ci(confident),
        f"{pct(weighted['rate'])} [{100 * lo:.1f}, {100 * hi:.1f}] "
        f"(n_eff {weighted['effective_cases']:.1f})",
    )


def count_rate(rate: float | None, k: int, n: int) -> str:
    return f"{pct(rate)} ({k}/{n})"


def markdown_table(df) -> str:
    """A DataFrame as a markdown table, cells as they are (no number parsing)."""
    return df.to_markdown(index=False, disable_numparse=True)


def write_csv(df, path: Path) -> None:
    df.to_csv(path, index=False, lineterminator="\n", float_format="%.6f")


def json_text(path: Path, data: Any, **kw: Any) -> str:
    """JSON text for a file at `path`; NaN and infinity are refused (they are not JSON, and mean a
    broken model)."""
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, **kw)
    except ValueError as e:
        raise EvaluatorError(
            f"{path}: refusing to write a value that is not a finite number ({e})"
        ) from e


def write_json(path: Path, data: Any) -> None:
    path.write_text(json_text(path, data, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json_text(path, row) + "\n")
