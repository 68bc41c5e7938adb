"""The check interface shared by grammar and acceptability backends.

A check judges candidate sentences in batches. Grammar checks compare each candidate with the
sentence it was made from (errors *added*), because source sentences often carry errors of their own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class BackendUnavailable(RuntimeError):
    """A configured backend cannot run on this machine. The message says what is missing and
    how to get it or which setting to switch to."""


@dataclass
class CheckResult:
    backend: str
    passed: bool
    # Backend-specific evidence: e.g. {"errors_original": 0, "errors_candidate": 1,
    # "added": ["..."]} for grammar, {"score": 0.93, "threshold": 0.5} for CoLA,
    # {"null_count": 0} for link-grammar.
    details: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "passed": self.passed, **self.details}


def check_lengths(originals: Sequence[str], candidates: Sequence[str]) -> None:
    """check_many's inputs pair up one to one."""
    if len(originals) != len(candidates):
        raise ValueError(f"check_many: {len(originals)} originals but {len(candidates)} candidates")


class Check(Protocol):
    name: str  # "grammar" or "acceptability"
    backend: str  # "harper", "languagetool", "cola", "link-grammar", "none"

    def check_many(
        self, originals: Sequence[str], candidates: Sequence[str]
    ) -> list[CheckResult]:
        """Judge candidates[i] (made from originals[i]); one result per candidate, same order."""
        ...

    def version(self) -> str:
        """Version string of the backend and its model/data, for provenance."""
        ...


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


class ThreadPool:
    """Threads for a backend whose native code lets go of the GIL while it works (harper's Rust,
    link-grammar's C through ctypes), so one process keeps every core busy.

    threads: None means the CPUs available, at most 4; 1 means no threads (calls run inline).
    map keeps input order, so results never depend on which thread finished first.

    fresh_threads: every map call runs on threads started for it, which end when it returns (with
    threads=1 too: then on one such thread). For a native library that keeps memory per thread
    until the thread ends (link-grammar keeps each thread's largest parse table): a long-lived
    thread would hold the largest table it ever needed for the rest of the run. Starting two
    threads costs about 0.1 ms, nothing beside a batch's parses."""

    def __init__(self, threads: int | None, name: str, *, fresh_threads: bool = False) -> None:
        self.name = name
        self.fresh_threads = fresh_threads
        self._executor: ThreadPoolExecutor | None = None
        self.threads = 1
        self.resize(threads)

    def resize(self, threads: int | None) -> None:
        if threads is None:
            threads = min(4, available_cpus())
        self.close()
        self.threads = max(1, int(threads))
        if self.threads > 1 and not self.fresh_threads:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix=self.name)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        items = list(items)
        if self.fresh_threads and items:
            with ThreadPoolExecutor(min(self.threads, len(items)), thread_name_prefix=self.name) as ex:
                return list(ex.map(fn, items))
        if self._executor is None or len(items) < 2:
            return [fn(x) for x in items]
        return list(self._executor.map(fn, items))

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


class ThreadedCheck:
    """What a check whose backend runs on a ThreadPool (`self._pool`) offers: its thread count,
    `set_threads` (worker processes divide the CPUs among themselves) and `close`."""

    _pool: ThreadPool

    @property
    def threads(self) -> int:
        return self._pool.threads

    def set_threads(self, threads: int | None) -> None:
        """Run on this many threads from now on (None: the CPUs available, at most 4)."""
        self._pool.resize(threads)

    def close(self) -> None:
        self._pool.close()
