"""What a folder written by one transnli run at a time needs, for `generate`'s run folder and
`evaluate`'s output folder alike: an exclusive lock that names its holder, durable renames, atomic
JSON files, and one line for a write the disk refused.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, runs are not guarded
    fcntl = None


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in `path` durable (a no-op where directories cannot be
    opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """fsync every file under `root`, then every folder, deepest first: once it returns, the
    tree survives a power cut, so renaming it into place publishes whole files only."""
    folders = []
    for folder, _, names in os.walk(root):
        folders.append(folder)
        for name in names:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    for folder in reversed(folders):
        fsync_dir(Path(folder))


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new file, whole."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def disk_error(e: OSError, path: Path) -> str:
    """One line for a failed write under a run's folder, with what to do about it."""
    where = e.filename or path
    fixes = {
        errno.ENOSPC: "the disk is full; free some space and run the same command again to resume",
        errno.EDQUOT: "the disk quota is used up; free some space and run the same command again "
        "to resume",
        errno.EROFS: "the file system is read-only; choose another --out, or make it writable and "
        "run the same command again to resume",
        errno.EACCES: "permission denied; choose another --out or fix its permissions",
        errno.EPERM: "permission denied; choose another --out or fix its permissions",
    }
    fix = fixes.get(e.errno, "run the same command again to resume")
    return f"cannot write {where}: {e.strerror or e}; {fix}"


class FolderLock:
    """The exclusive lock of one folder: an flock on FOLDER/`name`, a file that holds the
    holder's PID. The kernel drops the lock when its holder dies, however it dies, so a crashed
    run never leaves a folder locked. A second process is refused at once with `busy` (an
    exception class), naming the holder's PID. `remove`: delete the file on release (the folder
    keeps no trace of the lock); a process that opened the file just before it was deleted
    notices and takes the lock on the new file instead."""

    def __init__(self, directory: Path, name: str, busy: type[Exception], remove: bool = False):
        self.dir = directory
        self.path = directory / name
        self.busy = busy
        self.remove = remove
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None or fcntl is None:
            return
        fd = self._locked_fd()
        while self.remove and not self._is_current(fd):
            os.close(fd)  # locked a file its holder deleted on release: lock the new one
            fd = self._locked_fd()
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def _locked_fd(self) -> int:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise self.busy(
                f"{self.dir} is in use by PID {holder} (another transnli run); wait for it to "
                "end, or stop it, or choose another --out"
            ) from None
        return fd

    def _is_current(self, fd: int) -> bool:
        """Whether `fd` is still the file at the lock's path."""
        try:
            there = os.stat(self.path)
        except FileNotFoundError:
            return False
        here = os.fstat(fd)
        return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)

    def release(self) -> None:
        if self._fd is not None:
            if self.remove:
                with contextlib.suppress(OSError):
                    self.path.unlink()  # still held: no other process can have locked it
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None
