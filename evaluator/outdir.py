"""The output folder of an evaluation: what an evaluation writes there, whether a run may write
into a folder that already holds files, and how a run's outputs reach it whole.

The folder's contract (docs/outputs.md, "The evaluation folder: lock, atomic writes, resuming"):
- `evaluate.lock` is held (an exclusive flock, the holder's PID inside) by the one run writing
  the folder; a second run into it is refused at once. The kernel drops it when the run dies; a
  run that ends removes the file.
- A run writes every output under `.partial-outputs/`, with its final name. Only when all are
  written (and fsynced) does it rename that folder to `.partial-ready/` -- the point where the
  new outputs count as finished -- and move them into place: the old summary.json out first,
  summary.json in last (an atomic rename), so a folder with a summary.json is never a mix of two
  runs. A run that fails or is killed before that point leaves the earlier outputs untouched.
- The next run that takes the lock finishes a move that a killed run left half done, and removes
  whatever a failed run left under `.partial-*`, so nothing a crash leaves makes it refuse.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from transnli.common.folder import FolderLock, disk_error, fsync_dir, fsync_tree

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
SUMMARY = "summary.json"
LOCK = "evaluate.lock"
STAGING = ".partial-outputs"  # the outputs being written
READY = ".partial-ready"  # the outputs written whole, being moved into place
MANIFEST = ".outputs.json"  # in READY: the names it holds, so a resumed move knows what is new
# partial files that versions before the staging folder left beside the outputs
LEGACY_PARTIALS = (".partial-samples.jsonl", ".partial-predictions.jsonl")


class EvaluationBusy(EvaluatorError):
    """Another process holds the evaluation folder's lock."""


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
    if not any(p.name != LOCK for p in out.iterdir()):
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


def unfinished_move(out: Path) -> str | None:
    """What says that a run was stopped while it moved its outputs into `out` (the staged
    outputs' folder, as a name to show), or None: then the outputs in `out`, if any, are one
    evaluation's, whole. Until the next run into `out` finishes that move, files there may be the
    earlier evaluation's ones that the stopped run replaces."""
    return f"{READY}/" if (out / READY / MANIFEST).is_file() else None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _shown(name: str) -> str:
    return name + ("/" if name in ("tables", "plots") else "")


class EvaluationFolder:
    """One evaluation's --out while a run writes it (see the module's docstring): `open()` takes
    the lock and tidies what an earlier run left; the outputs are written under `staging`;
    `commit()` puts them in place; `close()` drops what was not committed and the lock."""

    def __init__(self, out: Path):
        self.out = out
        self.staging = out / STAGING
        self._lock = FolderLock(out, LOCK, EvaluationBusy, remove=True)
        self._made = False

    @contextmanager
    def writing(self, path: Path | None = None) -> Iterator[None]:
        """A write refused by the disk as one line naming the path (the final one, not the
        staging copy) and the fix."""
        try:
            yield
        except OSError as e:
            if e.filename:
                e.filename = self._final_name(Path(e.filename))
            raise EvaluatorError(disk_error(e, path or self.out)) from e

    def _final_name(self, path: Path) -> str:
        for temporary in (self.staging, self.out / READY):
            with suppress(ValueError):
                return str(self.out / path.relative_to(temporary))
        return str(path)

    def open(self) -> None:
        """Create the folder if need be, take its lock (EvaluationBusy when another run holds
        it), finish a killed run's move and remove its partial files."""
        if self.out.exists() and not self.out.is_dir():
            raise EvaluatorError(f"--out {self.out} is a file, not a folder")
        with self.writing():
            self._made = not self.out.exists()
            self.out.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
            ready = self.out / READY
            if (ready / MANIFEST).is_file():
                self._move_in(ready)
            for name in (STAGING, READY, *LEGACY_PARTIALS):
                _remove(self.out / name)

    def start(self) -> Path:
        """A fresh staging folder for this run's outputs."""
        with self.writing():
            _remove(self.staging)
            self.staging.mkdir()
        return self.staging

    def commit(self) -> list[str]:
        """Put the staged outputs in place of the folder's earlier ones (earlier outputs this run
        did not write, such as plots/ after --no-plots, go too); returns the names replaced."""
        with self.writing():
            names = sorted(p.name for p in self.staging.iterdir() if p.name in OUTPUT_NAMES)
            if SUMMARY not in names:
                raise EvaluatorError(f"internal error: {self.staging} holds no {SUMMARY}")
            (self.staging / MANIFEST).write_text(json.dumps(names) + "\n", encoding="utf-8")
            fsync_tree(self.staging)
            replaced = [_shown(n) for n in OUTPUT_NAMES if (self.out / n).exists()]
            ready = self.out / READY
            os.rename(self.staging, ready)  # from here on the new outputs are the finished ones
            fsync_dir(self.out)
            self._move_in(ready)
        return replaced

    def _move_in(self, ready: Path) -> None:
        """Move the outputs in `ready` into place, summary.json last; safe to repeat after a kill
        at any point (the manifest says which names are new)."""
        new = set(json.loads((ready / MANIFEST).read_text(encoding="utf-8")))
        if (ready / SUMMARY).exists():  # else every output is in place already
            _remove(self.out / SUMMARY)  # the folder is unfinished until the new one is in
            fsync_dir(self.out)
            for name in OUTPUT_NAMES:
                if name == SUMMARY:
                    continue
                if name not in new:
                    _remove(self.out / name)
                elif (ready / name).exists():  # else moved in before a kill
                    _remove(self.out / name)
                    os.rename(ready / name, self.out / name)
            fsync_dir(self.out)
            os.rename(ready / SUMMARY, self.out / SUMMARY)
            fsync_dir(self.out)
        shutil.rmtree(ready)

    def close(self) -> None:
        """Remove what this run staged and did not commit, and release the lock; a folder this run
        created and left empty goes too."""
        if not self._lock.held:
            return  # refused: the staged files are another run's
        shutil.rmtree(self.staging, ignore_errors=True)
        self._lock.release()  # removes evaluate.lock
        if self._made:
            with suppress(OSError):
                self.out.rmdir()  # only if empty
