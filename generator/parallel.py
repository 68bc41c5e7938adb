"""Generation on several worker processes, with output identical to one process.

`run_batches(pipeline, pairs, workers)` is what `transnli generate` iterates over. With one worker
it is `pipeline.run(pairs)`. With N > 1 the parent cuts the stream of pairs into the same
batches `pipeline.run` would make and sends them to N worker processes, each holding its own
WordNet pipeline built from the same configuration; results come back in input order (an ordered
map over batches), so the files the parent writes are byte-identical to a one-worker run (the
pipeline's results never depend on batch boundaries or on what a process has cached). Each
batch's statistics and stage times come back with it and are added to the parent pipeline's, so
stats.json is identical too. The parent keeps doing what it does with one worker: it reads the
input, owns the resumable RunWriter and writes every batch. It builds no pipeline of its own
(`PooledPipeline` stands in for one; a worker answers what the parent must know of a pipeline,
such as config.json's versions).

Memory stays bounded: at most `window` batches (default 2 per worker) are in flight, so a large
input is never read ahead of what the workers can take.

A worker that dies (killed by the out-of-memory killer, say) fails the run at once with
`WorkerDied`, instead of leaving the parent waiting for a batch that will never come; the
pool is a `concurrent.futures.ProcessPoolExecutor`, which notices a lost process. Workers ignore
Ctrl-C (the parent handles it and stops them) and exit by themselves if the parent dies.

Workers are started with the "spawn" method: forking a process that has loaded spaCy, torch and
the checkers' native libraries is not safe. Each worker therefore pays the pipeline's start-up
(a few seconds) once; the pool starts a worker when a batch waits for one, so a run of one batch
starts one worker, and a worker leaves without the interpreter's slow teardown
(`_leave_at_once`). Checks that run threads of their own (harper) get the CPUs divided among the
workers.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from transnli.generator.checks.base import available_cpus
from transnli.generator.config import LOCAL_PIPELINES, GeneratorConfig
from transnli.generator.pipeline import BatchResult, GenerationStats, StageTimer, batched

WARM_UP = (
    "The old man was happy to see the young children.",
    "She quickly opened the heavy door and walked inside.",
    "They found the answer easy, but the question was hard.",
    "a long and tiring journey",
)


def warm_up(pipeline) -> None:
    """Run a few made-up sentences through `pipeline` and forget them: the lazy loads (WordNet's
    multiword lists, inflection tables, the checkers' first-use state) happen now rather than in
    the first real batch. Results do not depend on it; counts and stage times are reset."""
    from transnli.generator.readers import NLIPair

    pipeline.process(
        [NLIPair(f"warm-up:{i}", s, s, None, "warm-up", "", 0) for i, s in enumerate(WARM_UP)]
    )
    pipeline.stats = type(pipeline.stats)()  # its class: a negation pipeline's reports more
    pipeline.timer = StageTimer()


# -- worker side ----------------------------------------------------------------------------------
_WORKER_PIPELINE: Any = None
_WORKER_ERROR: BaseException | None = None
_WORKER_BARRIER: Any = None


class WorkerDied(RuntimeError):
    """A worker process ended without returning its batch."""


def _exit_when_orphaned(parent: int) -> None:
    """A parent killed with SIGKILL cannot stop its workers; they notice it is gone and leave."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def _leave_at_once() -> None:
    """A worker's last exit handler: end the process without the interpreter's finalization,
    which frees the pipeline object by object (spaCy, the vectors, WordNet: about 1 s measured,
    that the parent's close waits for) where the system frees it at once. Nothing is lost: the
    pool has sent every result and flushed its queues before exit handlers run, and the score
    cache commits each write."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _worker_init(config: GeneratorConfig, barrier, check_threads: int, parent: int) -> None:
    global _WORKER_PIPELINE, _WORKER_ERROR, _WORKER_BARRIER
    _WORKER_BARRIER = barrier
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    try:
        from transnli.generator.build import build_pipeline

        _WORKER_PIPELINE = build_pipeline(config)  # a LOCAL_PIPELINES one (ParallelRunner checks)
        for check in _WORKER_PIPELINE.checks:  # the CPUs are shared among the workers
            if hasattr(check, "set_threads"):
                check.set_threads(check_threads)
        warm_up(_WORKER_PIPELINE)
        # registered last, so run first: the handlers of what the pipeline imported are skipped
        atexit.register(_leave_at_once)
    except BaseException as e:  # noqa: BLE001 - reported with the first batch, not by a respawn loop
        _WORKER_ERROR = e


def _worker_ready(_: int) -> bool:
    if _WORKER_ERROR is not None:
        _WORKER_BARRIER.abort()  # release the others at once
        raise _WORKER_ERROR
    # Held until every worker runs one of these at once: then all of them have built their
    # pipelines (a worker runs its initializer before taking any task).
    _WORKER_BARRIER.wait(timeout=600)
    return True


def _worker_call(function, args: tuple):
    """`function(pipeline, *args)` on this worker's pipeline: what the parent of a run asks of
    the pipeline it does not build itself (its provenance, the language model's cost line)."""
    if _WORKER_ERROR is not None:
        raise _WORKER_ERROR
    return function(_WORKER_PIPELINE, *args)


def _stats_type(pipeline) -> type:
    """The class of the pipeline's statistics (the negation pipelines' report more): asked of one
    worker, it also says that this worker has built its pipeline."""
    return type(pipeline.stats)


def _worker_process(batch: list) -> tuple[BatchResult, dict, dict, dict]:
    """One batch through the worker's pipeline; returns the result and this batch's statistics
    (counts, skipped sentences) and stage seconds."""
    if _WORKER_ERROR is not None:
        raise _WORKER_ERROR
    pipeline = _WORKER_PIPELINE
    pipeline.stats = type(pipeline.stats)()  # its class: a negation pipeline's reports more
    pipeline.timer = StageTimer()
    result = pipeline.process(batch)
    return (
        result,
        dict(pipeline.stats.counts),
        dict(pipeline.stats.skipped_sentences),
        dict(pipeline.timer.seconds),
    )


# -- parent side ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _worker_death_is_reported():
    try:
        yield
    except BrokenProcessPool as e:
        raise WorkerDied(
            "a worker process died without finishing its batch (killed, e.g. by the "
            "out-of-memory killer: each worker needs about 1 GB)"
        ) from e


class ParallelRunner:
    """A pool of worker processes running the WordNet pipeline of `config`.

    `stats` and `timer` (the parent pipeline's, usually) receive every batch's counts and stage
    seconds as its result is handed out. Use as a context manager, or call `close()`."""

    def __init__(
        self,
        config: GeneratorConfig,
        workers: int,
        *,
        stats: GenerationStats | None = None,
        timer: StageTimer | None = None,
        window: int | None = None,
        start_method: str = "spawn",
    ):
        if workers < 2:
            raise ValueError("ParallelRunner needs at least 2 workers (use pipeline.run for one)")
        if config.pipeline not in LOCAL_PIPELINES:
            raise ValueError(
                "--workers > 1 runs the wordnet and negation pipelines only, not "
                f"{config.pipeline!r} "
                "(LLM pipelines have their own --llm-concurrency)"
            )
        self.config = config
        self.workers = workers
        self.stats = stats if stats is not None else GenerationStats()
        self.timer = timer if timer is not None else StageTimer()
        self.window = max(1, window or 2 * workers)
        ctx = multiprocessing.get_context(start_method)
        check_threads = max(1, available_cpus() // workers)
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=ctx,
            initializer=_worker_init,
            initargs=(config, ctx.Barrier(workers), check_threads, os.getpid()),
        )

    def wait_ready(self) -> None:
        """Block until every worker has built its pipeline (raises a worker's build error)."""
        with _worker_death_is_reported():
            futures = [self._pool.submit(_worker_ready, i) for i in range(self.workers)]
        for future in futures:
            self._result(future)

    def call(self, function, *args):
        """`function(pipeline, *args)` run by one worker on its pipeline (`function` must be a
        module-level function, to be sent to the worker); returns its result."""
        with _worker_death_is_reported():
            future = self._pool.submit(_worker_call, function, args)
        return self._result(future)

    def _result(self, future):
        with _worker_death_is_reported():
            return future.result()

    def run(self, pairs: Iterable, batch_size: int | None = None) -> Iterator[BatchResult]:
        size = batch_size or self.config.batch_size
        pending: deque = deque()
        for batch in batched(pairs, size):
            # A worker that dies between two results breaks the pool, and then `submit` is
            # where the parent learns of it.
            with _worker_death_is_reported():
                pending.append(self._pool.submit(_worker_process, batch))
            if len(pending) >= self.window:
                yield self._collect(pending.popleft())
        while pending:
            yield self._collect(pending.popleft())

    def _collect(self, future) -> BatchResult:
        result, counts, skipped, seconds = self._result(future)
        self.stats.counts.update(counts)
        self.stats.skipped_sentences.update(skipped)
        for name, s in seconds.items():
            self.timer.seconds[name] = self.timer.seconds.get(name, 0.0) + s
        return result

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def terminate(self) -> None:
        """Stop at once: queued batches are dropped and running ones killed."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            # shutdown(wait=False) forgets the executor's manager thread, so a later
            # shutdown(wait=True) no longer joins it: keep it to join here. Left running, it can
            # close its wake-up pipe while the interpreter's exit hook writes to it, which prints
            # an OSError traceback after our one-line error (Python < 3.12).
            manager = getattr(pool, "_executor_manager_thread", None)
            pool.shutdown(wait=False, cancel_futures=True)
            # The executor has no public way to stop a running task; its process table is the
            # one handle on the workers (absent in some versions: then they finish their batch).
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
            pool.shutdown(wait=True)
            if manager is not None:
                manager.join(timeout=30)

    def __enter__(self) -> ParallelRunner:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.terminate()


class PooledPipeline:
    """What the parent of a --workers N run holds in place of a pipeline: the configuration, the
    run's statistics and stage times, and the pool of workers, with one of them started and ready
    (its pipeline built and warmed up; a build error is raised here, as building the pipeline
    would raise it). The parent never runs a pipeline itself, so it builds none: spaCy, the
    vectors, WordNet and the checks loaded in it for nothing, seconds before any worker started,
    and held a worker's memory. What it must know of a pipeline, a worker tells it (`call`).
    The other workers start as batches wait for them (the pool's own rule), so a run of one
    batch starts one worker only. Close it, or `terminate` it when the run fails."""

    checks: tuple = ()  # none in this process
    client = None  # LLM pipelines do not run on workers

    def __init__(self, config: GeneratorConfig, workers: int):
        self.config = config
        self.timer = StageTimer()
        self.runner = ParallelRunner(config, workers, timer=self.timer)
        try:
            self.stats = self.runner.call(_stats_type)()
        except BaseException:
            self.runner.terminate()
            raise

    def run(self, pairs: Iterable) -> Iterator[BatchResult]:
        # the caller may have replaced stats (a resumed run's) since the workers started
        self.runner.stats, self.runner.timer = self.stats, self.timer
        yield from self.runner.run(pairs)

    def call(self, function, *args):
        """`function(pipeline, *args)` on a worker's pipeline (ParallelRunner.call)."""
        return self.runner.call(function, *args)

    def close(self) -> None:
        self.runner.close()

    def terminate(self) -> None:
        self.runner.terminate()


def run_batches(
    pipeline, pairs: Iterable, workers: int = 1, runner: ParallelRunner | None = None
) -> Iterator[BatchResult]:
    """The pipeline's batches over `pairs`, in input order: in this process when `workers` is 1,
    else on a ParallelRunner (started here and closed at the end unless `runner` is given)
    whose statistics and stage times go into `pipeline.stats` and `pipeline.timer`. A
    PooledPipeline runs on its own workers (its owner closes them)."""
    if isinstance(pipeline, PooledPipeline) or (workers <= 1 and runner is None):
        yield from pipeline.run(pairs)
        return
    own = runner is None
    if own:
        runner = ParallelRunner(
            pipeline.config, workers, stats=pipeline.stats, timer=pipeline.timer
        )
    try:
        yield from runner.run(pairs)
    except BaseException:
        if own:
            runner.terminate()
        raise
    if own:
        runner.close()
