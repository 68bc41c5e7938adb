"""What the label cache's file digests cost (docs/models.md, "The label cache").

For each size: a file of that size is written, evicted from the page cache, then
- cold: the first `LabelCache.hash_file` (the full sha256, read from disk);
- rehash_warm: the full sha256 again, the file now in the page cache (what a changed inode or
  ctime costs on a second run);
- memo_hit: `LabelCache.hash_file` once more (a stat and one SQLite lookup: every later run).
Prints JSON. The files are written under --dir (a temporary folder by default) and removed.

    python benchmarks/bench_digest.py                  # 90 MB and 1 GB
    python benchmarks/bench_digest.py --sizes-mb 90
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from transnli.common.digest import sha256_file
from transnli.evaluator.cache import LabelCache

BLOCK = 4 << 20


def write_file(path: Path, size: int) -> None:
    block = os.urandom(BLOCK)
    with open(path, "wb") as fh:
        left = size
        while left > 0:
            fh.write(block[: min(BLOCK, left)])
            left -= BLOCK
        fh.flush()
        os.fsync(fh.fileno())


def evict(path: Path) -> bool:
    """Drop the file's pages from the page cache (Linux); False where that cannot be done."""
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def measure(folder: Path, size_mb: int) -> dict:
    path = folder / f"weights-{size_mb}mb.bin"
    write_file(path, size_mb << 20)
    try:
        evicted = evict(path)
        with LabelCache(folder / f"cache-{size_mb}") as cache:
            cold = timed(cache.hash_file, path)
            rehash = timed(sha256_file, path)
            hit = min(timed(cache.hash_file, path) for _ in range(5))
            assert cache.files_hashed == 1
    finally:
        path.unlink()
    return {
        "size_mb": size_mb,
        "page_cache_evicted": evicted,
        "cold_s": round(cold, 3),
        "rehash_warm_s": round(rehash, 3),
        "rehash_warm_mb_per_s": round(size_mb / rehash, 1),
        "memo_hit_ms": round(hit * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[90, 1024])
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        rows = [measure(Path(tmp), size) for size in args.sizes_mb]
    print(
        json.dumps(
            {"machine": platform.machine(), "cpus": os.cpu_count(), "results": rows}, indent=2
        )
    )


if __name__ == "__main__":
    main()
