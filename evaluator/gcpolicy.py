"""When the cyclic garbage collector runs during a command-line run.

Importing torch and transformers and loading a model create a few million objects, nearly all of
which live for the whole run. Python's collector, triggered every 700 net allocations, scans them
again and again while they are being built, and afterwards every full collection walks them once
more while labels and output rows are made, a noticeable part of a small run (measured:
docs/speed.md, 'Third session'). So the collector is paused while a model loads;
the command line (not the Python API: it would move the caller's whole heap too) then freezes what
exists into the permanent generation, which later collections skip. Reference counting still frees
everything as usual; only cycles created before the freeze stay until the process exits.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_freeze_after_loading = False


def freeze_after_loading(enabled: bool = True) -> None:
    """Have `loading()` freeze the heap when it ends (the command line asks for this)."""
    global _freeze_after_loading
    _freeze_after_loading = enabled


@contextmanager
def loading() -> Iterator[None]:
    """The collector paused for the block (imports, model loading); frozen afterwards when
    `freeze_after_loading()` was called; its enabled state restored either way."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _freeze_after_loading:
            gc.freeze()
        if enabled:
            gc.enable()
