"""Run output: triples.jsonl, rejected.jsonl, stats.json, config.json, and exports.

What a run folder says about itself:
- `run.lock` is held (an exclusive flock) by the one process writing the folder; a second run
  into it refuses at once. The kernel drops the lock when that process dies, however it dies.
- `progress.json` exists from the moment a run starts until it has finished: the run is
  unfinished. It records the run's fingerprint, how many input pairs are done and the byte
  length of each output file at the last checkpoint (one after every batch; the files are
  fsynced before the checkpoint is, and the checkpoint is replaced atomically). A stopped run
  is resumed by truncating the files back to the checkpoint (dropping any half-written batch)
  and skipping the pairs already done, so no line is lost or duplicated.
- `finished.json` is written after stats.json, when every output is complete: from then on the
  run is finished. A folder without it is never taken for a finished run. The exports (Parquet,
  HF, card) come after it: they are copies made from the finished files, so an export that fails
  leaves a finished run whose exports can be made again (the same command again reuses the run
  and exports; so does `transnli export`).
- A folder holding anything else (docs/, another tool's output) is no run folder: it is refused,
  and nothing is written into it (run_folder.foreign_entries).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from transnli.common.folder import FolderLock, disk_error, fsync_dir, write_json_atomic
from transnli.generator.record import TripleRecord
from transnli.generator.run_folder import (
    CONFIG,
    EXPORT_PATHS,
    FINISHED,
    LOCK,
    OUTPUTS,
    PROGRESS,
    REJECTED,
    REVIEW_DERIVED,
    STATS,
    TRIPLES,
    OutputError,
    foreign_entries,
)


class RunBusy(OutputError):
    """Another process holds the folder's lock."""


def fingerprint(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


class RunLock(FolderLock):
    """The exclusive lock of one run folder: an flock on OUT/run.lock, which holds the holder's
    PID."""

    def __init__(self, directory: Path):
        super().__init__(directory, LOCK, RunBusy)


def _progress_problem(state: Any) -> str | None:
    """What is wrong with a parsed progress.json, or None."""
    if not isinstance(state, dict):
        return "not a JSON object"
    if not isinstance(state.get("fingerprint"), str):
        return "no fingerprint"
    done = state.get("pairs_done")
    if not isinstance(done, int) or isinstance(done, bool) or done < 0:
        return f"pairs_done is {done!r}"
    offsets = state.get("offsets")
    if (
        not isinstance(offsets, dict)
        or set(offsets) != set(OUTPUTS)
        or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in offsets.values()
        )
    ):
        return f"offsets is {offsets!r}"
    if state.get("stats") is not None and not isinstance(state["stats"], dict):
        return "stats is not an object"
    return None


class RunWriter:
    """Owns one output folder for one generation run (see the module's docstring for its states)."""

    def __init__(self, out_dir: str | Path, run_fingerprint: str, overwrite: bool = False):
        self.dir = Path(out_dir)
        self.fp = run_fingerprint
        self.overwrite = overwrite
        self.pairs_done = 0
        self.resumed = False  # True when open() took up a stopped run
        self.resumed_stats: dict | None = None
        self._fh: dict[str, Any] = {}
        self._lock = RunLock(self.dir)

    def path(self, name: str) -> Path:
        return self.dir / name

    @contextmanager
    def _writing(self, path: Path):
        try:
            yield
        except OSError as e:
            raise OutputError(disk_error(e, path)) from e

    def lock(self) -> None:
        """Create the folder and take its lock (RunBusy when another process holds it). A folder
        that holds files no run writes is refused before anything is written into it."""
        with self._writing(self.dir):
            if not self._lock.held:
                self._refuse_foreign()
            self.dir.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()

    def _refuse_foreign(self) -> None:
        if self.dir.exists() and not self.dir.is_dir():
            raise OutputError(f"{self.dir} is a file, not a folder; give --out a folder")
        foreign = foreign_entries(self.dir)
        if foreign:
            shown = ", ".join(foreign[:3]) + (
                f" and {len(foreign) - 3} more" if foreign[3:] else ""
            )
            raise OutputError(
                f"{self.dir} is not a generation run folder (it holds {shown}); give --out a new "
                "or empty folder, or the folder of an earlier `transnli generate` run"
            )

    def open(self) -> int:
        """Prepare the folder; returns the number of input pairs already done (0 for a new run).
        On any error the folder is left as it was and the lock is released."""
        try:
            self.lock()
            with self._writing(self.dir):
                state = self._checkpoint()
                if state is None:
                    self._start()
                else:
                    self._resume(state)
                for name in OUTPUTS:
                    self._fh[name] = open(self.path(name), "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        except BaseException:
            self.close()
            raise
        return self.pairs_done

    def preflight(self) -> None:
        """Every refusal open() would make (another run's checkpoint or finished marker, a
        damaged or cut checkpoint), made now and writing nothing: called before a slow start (a
        language model takes seconds to load), so that such a folder is refused at once."""
        with self._writing(self.dir):
            if self.dir.is_dir():
                state = self._checkpoint()
                if state is not None:
                    self._resume_problem(state)

    def _checkpoint(self) -> dict | None:
        """The checkpoint to resume from; None when the run starts afresh; refuses the rest."""
        if self.overwrite:
            return None
        if self.path(FINISHED).exists():
            raise OutputError(
                f"{self.dir} already holds a finished run with a different input or configuration "
                "(or language model weights, or made by another transnli version); "
                "pass --overwrite to replace it"
            )
        if self.path(PROGRESS).exists():
            state = self._read_progress()
            if state["fingerprint"] != self.fp:
                raise OutputError(
                    f"{self.dir} holds an unfinished run with a different input or configuration "
                    "(or language model weights, or made by another transnli version); "
                    "rerun with the same settings to resume it, or pass --overwrite to start again"
                )
            return state
        leftovers = [name for name in (*OUTPUTS, STATS, CONFIG) if self.path(name).exists()]
        if leftovers:
            raise OutputError(
                f"{self.dir} holds {', '.join(leftovers)} but neither a checkpoint ({PROGRESS}) "
                f"nor a finished marker ({FINISHED}), so it is no run this transnli can resume (an "
                "older version made it, or it was edited); pass --overwrite to replace it"
            )
        return None

    def _read_progress(self) -> dict:
        path = self.path(PROGRESS)
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            problem = _progress_problem(state)
        except ValueError as e:  # not UTF-8, not JSON
            problem = str(e)
        if problem:
            raise OutputError(
                f"{path} is corrupt ({problem}), so the run cannot be resumed; "
                "pass --overwrite to start again"
            )
        return state

    def _start(self) -> None:
        # The checkpoint first: from here on the folder says "unfinished", whatever happens next.
        write_json_atomic(
            self.path(PROGRESS), self._progress_doc({name: 0 for name in OUTPUTS}, None)
        )
        self.path(FINISHED).unlink(missing_ok=True)
        for name in (STATS, CONFIG, *EXPORT_PATHS, *REVIEW_DERIVED):
            p = self.path(name)
            shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
        for name in OUTPUTS:
            open(self.path(name), "wb").close()
        fsync_dir(self.dir)

    def _resume_problem(self, state: dict) -> None:
        """Refuse a checkpoint whose files were lost or cut since (reads only)."""
        for name, size in state["offsets"].items():
            p = self.path(name)
            if not p.exists():
                if size:
                    raise OutputError(
                        f"{p} is missing, but {self.path(PROGRESS)} says it held {size} bytes "
                        "at the last checkpoint; pass --overwrite to start again"
                    )
                continue
            actual = p.stat().st_size
            if actual < size:  # never pad: what was lost is lost, and the user must know
                raise OutputError(
                    f"{p} is shorter ({actual} bytes) than at the last checkpoint ({size} bytes, "
                    f"{self.path(PROGRESS)}): it was cut or replaced; pass --overwrite to start "
                    "again"
                )

    def _resume(self, state: dict) -> None:
        self._resume_problem(state)
        for name, size in state["offsets"].items():
            p = self.path(name)
            if not p.exists():
                p.touch()
            os.truncate(p, size)  # drop what a stopped batch half-wrote
        self.pairs_done = state["pairs_done"]
        self.resumed_stats = state["stats"]
        self.resumed = True

    def _progress_doc(self, offsets: dict[str, int], stats: dict | None) -> dict:
        return {
            "fingerprint": self.fp,
            "pairs_done": self.pairs_done,
            "offsets": offsets,
            "stats": stats,
        }

    def write_config(self, doc: dict) -> None:
        with self._writing(self.path(CONFIG)):
            write_json_atomic(self.path(CONFIG), {**doc, "run_fingerprint": self.fp})

    def finished_stats(self) -> dict | None:
        """The stats of a finished run of exactly these settings in this folder, else None."""
        if self.overwrite:
            return None
        try:
            marker = json.loads(self.path(FINISHED).read_text(encoding="utf-8"))
            if not isinstance(marker, dict) or marker.get("run_fingerprint") != self.fp:
                return None
            return json.loads(self.path(STATS).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write_batch(
        self, accepted: list[TripleRecord], rejected: list[TripleRecord], n_pairs: int, stats: dict
    ) -> None:
        for name, records in ((TRIPLES, accepted), (REJECTED, rejected)):
            fh = self._fh[name]
            with self._writing(self.path(name)):
                fh.writelines(r.to_json() + "\n" for r in records)
                fh.flush()
                os.fsync(fh.fileno())  # on disk before the checkpoint that counts it
        self.pairs_done += n_pairs
        offsets = {name: fh.tell() for name, fh in self._fh.items()}
        with self._writing(self.path(PROGRESS)):
            write_json_atomic(self.path(PROGRESS), self._progress_doc(offsets, stats))

    def finish(self, stats: dict, exports: list[str] | tuple[str, ...] = ()) -> list[Path]:
        """stats.json, the finished marker, then the exports; returns the exported paths. The lock
        is released whatever happens."""
        try:
            with self._writing(self.dir):
                for fh in self._fh.values():
                    fh.flush()
                    os.fsync(fh.fileno())
                write_json_atomic(self.path(STATS), stats)
                write_json_atomic(
                    self.path(FINISHED),
                    {"run_fingerprint": self.fp, "pairs_done": self.pairs_done},
                )
                self.path(PROGRESS).unlink(missing_ok=True)
                fsync_dir(self.dir)
            return self.write_exports(exports)
        finally:
            self.close()

    def write_exports(self, kinds: list[str] | tuple[str, ...]) -> list[Path]:
        """The exports `kinds` of the finished run in this folder (held locked); returns their
        paths. A failure says that the run itself is finished and how to export again."""
        if not kinds:
            return []
        try:
            return export(self.dir, list(kinds))
        except (OutputError, OSError, ValueError) as e:  # ValueError: pyarrow's ArrowInvalid too
            why = (
                f"cannot write {e.filename or self.dir}: {e.strerror or e}"
                if isinstance(e, OSError)
                else str(e)
            )
            raise OutputError(
                f"{self.dir} holds a finished run, but exporting it ({','.join(kinds)}) failed: "
                f"{why}; once that is fixed, run the same command again (it reuses the run) or "
                f"`transnli export {self.dir} --to {','.join(kinds)}`"
            ) from e

    def close(self) -> None:
        """Close the files and release the lock; what follows the last checkpoint is dropped on
        resume."""
        for fh in self._fh.values():
            with suppress(OSError):  # a full disk: the unflushed tail is past the checkpoint anyway
                fh.close()
        self._fh.clear()
        self._lock.release()


def export(out_dir: str | Path, kinds: list[str]) -> list[Path]:
    """Copies of triples (and rejects) as Parquet files, a Hugging Face `datasets` folder and/or a
    Hub-ready folder with a dataset card, all with the declared schema
    (transnli.generator.publish)."""
    from transnli.generator.publish import export as export_run

    return export_run(out_dir, list(kinds))
