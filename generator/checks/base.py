"""The check interface shared by grammar and acceptability backends.

A check judges candidate sentences in batches. Grammar checks compare each candidate with the
sentence it was made from (errors *added*), because source sentences often carry errors of their
own.
"""

from __future__ import annotations

import math
import os
import queue
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
    """A check backend. Optional: `effective_settings() -> dict` of the GeneratorConfig fields it
    resolved itself where the config left them None (the judge's file and threshold); config.json
    records them and the dataset card shows them (build.provenance)."""

    name: str  # "grammar" or "acceptability"
    backend: str  # "harper", "languagetool", "cola", "link-grammar", "none"

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
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
    thread would hold the largest table it ever needed for the rest of the run. Starting threads
    costs nothing beside a batch's parses (measured: docs/speed.md, 'Acceptability check
    (link-grammar)')."""

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

    def map(
        self,
        fn: Callable[[T], R],
        items: Iterable[T],
        *,
        one_at_a_time: Callable[[T], bool] | None = None,
    ) -> list[R]:
        """fn over items, results in input order. one_at_a_time (fresh_threads only): items for
        which it is true never run beside each other: one thread takes them in turn while the
        others take the rest, and then it helps with the rest too. For memory-hungry items (a
        long sentence's parse), so the peak is one of them, not one per thread."""
        items = list(items)
        if self.fresh_threads and items:
            workers = min(self.threads, len(items))
            with ThreadPoolExecutor(workers, thread_name_prefix=self.name) as ex:
                if one_at_a_time is None or workers == 1:
                    return list(ex.map(fn, items))
                return _map_with_lane(ex, workers, fn, items, one_at_a_time)
        if self._executor is None or len(items) < 2:
            return [fn(x) for x in items]
        return list(self._executor.map(fn, items))

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


def _map_with_lane(
    ex: ThreadPoolExecutor,
    workers: int,
    fn: Callable[[T], R],
    items: list[T],
    one_at_a_time: Callable[[T], bool],
) -> list[R]:
    """ThreadPool.map's one_at_a_time: a lane for the marked items on the first thread, the
    others in a shared queue that every thread drains."""
    lane = [i for i, x in enumerate(items) if one_at_a_time(x)]
    in_lane = set(lane)
    shared: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(len(items)):
        if i not in in_lane:
            shared.put(i)
    results: list[Any] = [None] * len(items)

    def run(own: list[int]) -> None:
        for i in own:
            results[i] = fn(items[i])
        while True:
            try:
                i = shared.get_nowait()
            except queue.Empty:
                return
            results[i] = fn(items[i])

    futures = [ex.submit(run, lane)] + [ex.submit(run, []) for _ in range(workers - 1)]
    for future in futures:
        future.result()  # raises what a thread raised
    return results


class SwitchedOff:
    """A check switched off (backend "none"): every candidate passes."""

    @classmethod
    def from_options(cls, **_options: Any):
        return cls()

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        check_lengths(originals, candidates)
        return [CheckResult("none", True) for _ in candidates]

    def version(self) -> str:
        return "none"


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


def require_finite(backend: str, judge: str, probabilities: Sequence[float]) -> None:
    """Stop with one line when a judge's probability is not a number: a NaN would reject every
    candidate quietly and end the run as "0 triples"."""
    from transnli.generator.errors import ResourceError

    broken = sum(not math.isfinite(p) for p in probabilities)
    if broken:
        raise ResourceError(
            f"acceptability backend '{backend}': {judge}'s probability is not a number for "
            f"{broken} of {len(probabilities)} candidates: the language model's outputs are not "
            "finite (damaged weights? `transnli doctor` checks the model)"
        )
