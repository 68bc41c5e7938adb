"""Giving freed memory back to the operating system between batches.

The native checkers allocate a lot for a moment on hard sentences (link-grammar's parse tables
reach tens of megabytes on a long sentence it cannot link) and free it again. glibc keeps freed
memory in its arenas, one per thread, so without a trim a long run's resident size only ever
ratchets up to the sum of every thread's worst moment. `release_free_memory` asks glibc to return
the free pages (malloc_trim); elsewhere (macOS, musl) it does nothing.

malloc_trim does not shrink the free space at the top of a thread's arena, though: glibc does
that itself when the top grows past its trim threshold, and by default that threshold follows
the largest block freed so far (up to 64 MB), so after one hard parse each parsing thread's arena
kept its free memory (measured: docs/speed.md, 'Allocator'). `tune_allocator` fixes the threshold
at 16 MB instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

# mallopt parameters (malloc.h) and the values tune_allocator sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
TRIM_THRESHOLD = 16 << 20
# Setting one threshold stops glibc from moving both: the mmap threshold goes where the moving
# one ends up after large frees (32 MB), so blocks below it still come from the arenas. (Left at
# its 128 kB start, link-grammar's tables would be mapped and unmapped on every parse: slower.)
MMAP_THRESHOLD = 32 << 20


@functools.cache
def _libc_function(name: str, argtypes: tuple, restype):
    lib = ctypes.util.find_library("c")
    if not lib:
        return None
    try:
        fn = getattr(ctypes.CDLL(lib), name)
    except (OSError, AttributeError):  # not glibc
        return None
    fn.argtypes, fn.restype = list(argtypes), restype
    return fn


def release_free_memory() -> bool:
    """Return free heap pages to the OS; True when the C library could do it."""
    trim = _libc_function("malloc_trim", (ctypes.c_size_t,), ctypes.c_int)
    if trim is None:
        return False
    trim(0)
    return True


def tune_allocator() -> bool:
    """Fix glibc's trim and mmap thresholds (see the module docstring), unless the user has set
    them (MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_): a lower peak at the same speed, where a
    lower trim threshold keeps memory flatter but slows generation (measured: docs/speed.md,
    'Allocator'). True when it was set."""
    if any(k in os.environ for k in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")):
        return False
    mallopt = _libc_function("mallopt", (ctypes.c_int, ctypes.c_int), ctypes.c_int)
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
