"""The output folder of an evaluation: what an evaluation writes there, whether a run may write
into a folder that already holds files, and clearing an earlier evaluation's outputs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import EvaluatorError

# What an evaluation writes into its folder (and what --overwrite replaces; nothing else is
# touched).
OUTPUT_NAMES = (
    "predictions.jsonl",
    "samples.jsonl",
    "summary.json",
    "report.md",
    "tables",
    "plots",
    "families.jsonl",
    "run_info.json",
    "comparison.json",
)
# Settings that do not change a label: rerunning with another value is the same evaluation.
_NOT_IDENTITY = ("batch_size", "device", "batch_tokens", "compile")


def run_identity(
    files_info: Sequence[dict[str, Any]], specs: Sequence[str], config: dict[str, Any]
):
    """What makes two evaluations the same one: the triples files (path and content), the model
    specs and the settings that can change a label."""
    return (
        [(f["path"], f["sha256"]) for f in files_info],
        list(specs),
        {k: v for k, v in config.items() if k not in _NOT_IDENTITY},
    )


def _previous_identity(out: Path):
    try:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        prov = summary["provenance"]
        specs = [f"{m['name']}={m['spec']}" for m in prov["models"]]
        return run_identity(prov["triples_files"], specs, prov["config"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def claim_out_dir(out: Path, identity, overwrite: bool) -> bool:
    """Refuse an --out that holds something other than this evaluation (unless `overwrite`).
    Returns True when it holds another evaluation's outputs (to be replaced)."""
    if not out.exists():
        return False
    if not out.is_dir():
        raise EvaluatorError(f"--out {out} is a file, not a folder")
    if not any(out.iterdir()):
        return False
    previous = _previous_identity(out)
    if previous == identity:
        return False
    if not overwrite:
        what = "the outputs of another evaluation" if previous is not None else "files of its own"
        raise EvaluatorError(
            f"{out} already holds {what}; choose another --out, or pass --overwrite to "
            f"replace them ({', '.join(OUTPUT_NAMES)}; nothing else is touched)"
        )
    return True


def clear_outputs(out: Path) -> list[str]:
    """Remove what an earlier evaluation wrote into `out` (so no stale plot or table survives);
    returns the names removed."""
    import shutil

    removed = []
    for name in OUTPUT_NAMES:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(name + ("/" if name in ("tables", "plots") else ""))
    return removed
