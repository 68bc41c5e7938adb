"""The sha256 of a file or a folder: what provenance records and caches key on."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: str | Path) -> str:
    """The sha256 of a file's bytes (read in 4 MiB chunks); of a folder (a checkpoint, a saved HF
    dataset), the sha256 over its files' relative paths and digests, in path order."""
    path = Path(path)
    if path.is_dir():
        h = hashlib.sha256()
        for p in sorted(q for q in path.rglob("*") if q.is_file()):
            h.update(f"{p.relative_to(path).as_posix()}\0{sha256_file(p)}\n".encode())
        return h.hexdigest()
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()
