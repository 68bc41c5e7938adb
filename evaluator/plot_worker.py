"""The figures' PDFs rendered on a second process while the main one writes everything else.

A small run's fixed cost is mostly start-up: importing torch and transformers, then drawing the
figures, of which the PDFs (TrueType fonts subset and embedded) take the most. A worker process
started with the run imports matplotlib while the main process imports torch, renders the PDFs
while the main process writes the rows, tables, PNGs and SVGs, which shortens a small run
(measured: docs/speed.md, 'Third session'). The
files are the ones the main process would write: plots.FORMAT_GROUPS draws the PDF from a figure of
its own in either case, and the tests compare bytes.

Only the command line starts one (`use_plot_worker()`): a library call should not start processes
in its caller's program. If the worker cannot start or dies, the main process renders the PDFs
itself.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

WORKER_FORMATS = ("pdf",)
_enabled = False


def use_plot_worker(enabled: bool = True) -> None:
    """Let evaluation runs in this process render figures on a worker process (the command line)."""
    global _enabled
    _enabled = enabled


def plot_worker_enabled() -> bool:
    return _enabled


def _leave_when_orphaned(parent: int) -> None:
    """Runs on the worker: a main process killed with SIGKILL cannot stop it, so it leaves by
    itself, mid-figure if need be (the next run into the folder must not find it still writing
    the staged plots)."""
    import os
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="transnli-orphan-watch", daemon=True).start()


def _warm_up() -> None:
    """Runs on the worker as soon as it starts: the imports and the fonts the PDFs need."""
    import io

    from matplotlib.figure import Figure

    from . import plots

    with plots.style():
        fig = Figure(figsize=(1, 1))
        fig.add_subplot().set_title("transnli 0.9%")
        fig.savefig(io.BytesIO(), format="pdf", metadata=plots.METADATA["pdf"])


def _render(summary: dict[str, Any], folder: str, formats: Sequence[str]) -> list[str]:
    from .plots import write_plots

    return [str(p) for p in write_plots(summary, Path(folder), formats)]


@contextmanager
def _sigint_ignored():
    """SIGINT ignored while the worker process starts: it inherits that and keeps it (Python
    leaves an ignored SIGINT ignored), so Ctrl-C, which the terminal sends to every process of
    the command, stops the main process only; the main process then stops the worker. Without it
    the worker printed its own KeyboardInterrupt traceback."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; a library caller's thread keeps its own
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


class PlotWorker:
    """One worker process for one run: `start()` early, `render(...)` once the summary exists,
    `close()` at the end (also after a failure)."""

    def __init__(self) -> None:
        self._pool = None

    def start(self) -> PlotWorker:
        import multiprocessing
        import os
        from concurrent.futures import ProcessPoolExecutor

        try:
            # spawn, not fork: the main process may hold threads (torch's, the tokenizer's, the
            # preloading one) whose locks a forked child would inherit held
            self._pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_leave_when_orphaned,
                initargs=(os.getpid(),),
            )
            with _sigint_ignored():  # the worker starts here, on the first task
                self._pool.submit(_warm_up)
        except (OSError, RuntimeError) as e:
            log.debug("no plot worker (%s): figures render in this process", e)
            self._pool = None
        return self

    def render(self, summary: dict[str, Any], folder: Path) -> Future | None:
        """Start the worker's share of the figures; None when there is no worker."""
        if self._pool is None:
            return None
        try:
            return self._pool.submit(_render, summary, str(folder), WORKER_FORMATS)
        except RuntimeError as e:  # the pool broke (the worker died) or was shut down
            log.debug("plot worker unavailable (%s)", e)
            return None

    def close(self) -> None:
        """Stop the worker: at once, even mid-figure (a run that failed or was interrupted drops
        the folder the worker writes into right after)."""
        if self._pool is None:
            return
        # the executor has no public way to stop a task that runs (3.14 adds terminate_workers)
        processes = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=10)
        self._pool = None


def write_figures(
    summary: dict[str, Any],
    folder: Path,
    worker: PlotWorker | None = None,
    pending: Future | None = None,
) -> list[Path]:
    """Every figure, in write_plots' order: all of them here without a worker; with one, the
    formats it does not render here, then its files (`pending`, from `worker.render`) or, when it
    failed, the same files rendered here."""
    from .plots import FORMATS, in_figure_order, write_plots

    if worker is None:
        return write_plots(summary, folder)
    here = write_plots(summary, folder, [f for f in FORMATS if f not in WORKER_FORMATS])
    if pending is not None:
        try:
            return in_figure_order(here + [Path(p) for p in pending.result()])
        except Exception as e:  # noqa: BLE001 - a dead worker or a failed render: do it here
            log.debug("plot worker failed (%s): rendering its figures here", e)
    return in_figure_order(here + write_plots(summary, folder, WORKER_FORMATS))
