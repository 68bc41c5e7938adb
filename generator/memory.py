"""Giving freed memory back to the operating system between batches.

The native checkers allocate a lot for a moment on hard sentences (link-grammar's parse tables
reach tens of megabytes on a long sentence it cannot link) and free it again. glibc keeps freed
memory in its arenas, one per thread, so without a trim a long run's resident size only ever
ratchets up to the sum of every thread's worst moment. `release_free_memory` asks glibc to return
the free pages (malloc_trim); elsewhere (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        fn = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


def release_free_memory() -> bool:
    """Return free heap pages to the OS; True when the C library could do it."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
