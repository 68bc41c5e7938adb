"""Run output: triples.jsonl, rejected.jsonl, stats.json, config.json, and exports.

Writing is append-only with a checkpoint (progress.json) after every batch that records how many
input pairs are done and the byte length of each output file at that moment. A crashed run is
resumed by truncating the files back to the checkpoint (dropping any half-written batch) and
skipping the pairs already done, so no line is lost or duplicated.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from transnli.generator.record import TripleRecord

TRIPLES, REJECTED, STATS, CONFIG, PROGRESS = (
    "triples.jsonl", "rejected.jsonl", "stats.json", "config.json", "progress.json",
)
EXPORTS = ("parquet", "hf")


class OutputError(RuntimeError):
    pass


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def fingerprint(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


class RunWriter:
    """Owns one output folder for one generation run."""

    def __init__(self, out_dir: str | Path, run_fingerprint: str, overwrite: bool = False):
        self.dir = Path(out_dir)
        self.fp = run_fingerprint
        self.overwrite = overwrite
        self.pairs_done = 0
        self.resumed_stats: dict | None = None
        self._fh: dict[str, Any] = {}

    def path(self, name: str) -> Path:
        return self.dir / name

    def open(self) -> int:
        """Prepare the folder; returns the number of input pairs already done (0 for a new run)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        progress = self.path(PROGRESS)
        if self.overwrite:
            for name in (TRIPLES, REJECTED, STATS, CONFIG, PROGRESS):
                self.path(name).unlink(missing_ok=True)
            for export in ("triples.parquet", "rejected.parquet", "hf_dataset"):
                p = self.path(export)
                shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
        elif progress.exists():
            state = json.loads(progress.read_text(encoding="utf-8"))
            if state.get("fingerprint") != self.fp:
                raise OutputError(
                    f"{self.dir} holds an unfinished run with a different input or configuration "
                    "(or made by another transnli version); "
                    "rerun with the same settings to resume it, or pass --overwrite to start again"
                )
            for name, size in state["offsets"].items():
                with open(self.path(name), "r+b") as fh:
                    fh.truncate(size)
            self.pairs_done = state["pairs_done"]
            self.resumed_stats = state["stats"]
        elif self.path(TRIPLES).exists() or self.path(STATS).exists():
            raise OutputError(f"{self.dir} already holds a finished run; pass --overwrite to replace it")
        for name in (TRIPLES, REJECTED):
            self._fh[name] = open(self.path(name), "a", encoding="utf-8")  # noqa: SIM115 - closed in finish()
        return self.pairs_done

    def write_config(self, doc: dict) -> None:
        write_json_atomic(self.path(CONFIG), {**doc, "run_fingerprint": self.fp})

    def finished_stats(self) -> dict | None:
        """The stats of a finished run of exactly these settings in this folder, else None."""
        if self.overwrite or self.path(PROGRESS).exists() or not self.path(STATS).exists():
            return None
        try:
            config = json.loads(self.path(CONFIG).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if config.get("run_fingerprint") != self.fp:
            return None
        return json.loads(self.path(STATS).read_text(encoding="utf-8"))

    def write_batch(self, accepted: list[TripleRecord], rejected: list[TripleRecord], n_pairs: int, stats: dict) -> None:
        for name, records in ((TRIPLES, accepted), (REJECTED, rejected)):
            fh = self._fh[name]
            fh.writelines(r.to_json() + "\n" for r in records)
            fh.flush()
        self.pairs_done += n_pairs
        offsets = {name: fh.tell() for name, fh in self._fh.items()}
        write_json_atomic(
            self.path(PROGRESS),
            {"fingerprint": self.fp, "pairs_done": self.pairs_done, "offsets": offsets, "stats": stats},
        )

    def finish(self, stats: dict) -> None:
        self.close()
        write_json_atomic(self.path(STATS), stats)
        self.path(PROGRESS).unlink(missing_ok=True)

    def close(self) -> None:
        for fh in self._fh.values():
            fh.close()
        self._fh.clear()


def export(out_dir: str | Path, kinds: list[str]) -> list[Path]:
    """Copies of triples (and rejects) as Parquet files and/or a Hugging Face `datasets` folder."""
    import pyarrow.json as pj

    out = Path(out_dir)
    written: list[Path] = []

    def table(name: str):
        path = out / name
        if path.stat().st_size == 0:
            return None
        return pj.read_json(path)

    if "parquet" in kinds:
        import pyarrow.parquet as pq

        for name in (TRIPLES, REJECTED):
            t = table(name)
            if t is not None:
                target = out / name.replace(".jsonl", ".parquet")
                pq.write_table(t, target)
                written.append(target)
    if "hf" in kinds:
        import datasets

        splits = {}
        for name, split in ((TRIPLES, "triples"), (REJECTED, "rejected")):
            t = table(name)
            if t is not None:
                splits[split] = datasets.Dataset(t)
        target = out / "hf_dataset"
        if splits:
            datasets.DatasetDict(splits).save_to_disk(str(target))
            written.append(target)
    return written
