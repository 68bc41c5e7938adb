"""The check registry: each check backend registers itself by kind and name beside its class.

    @register_check("grammar", "harper")
    class HarperGrammar: ...

A kind is a stage of the pipeline ("grammar", "acceptability"); a config names one backend of
each. Every module of this package is imported the first time the registry is asked, so adding a
backend is adding one module. `check_backends(kind)` lists a kind's backends (sorted, with the
switched-off "none" last): config validation and the CLI's choices read it. `build_check` builds
a backend from the run's options through its `from_options`, which takes what it needs.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

_CHECKS: dict[str, dict[str, type]] = {}
_LOCK = threading.Lock()
_LOADED = False


def register_check(kind: str, backend: str) -> Callable[[type], type]:
    """Class decorator: register the check class as backend `backend` of stage `kind`."""

    def register(cls: type) -> type:
        backends = _CHECKS.setdefault(kind, {})
        if backends.get(backend, cls) is not cls:
            raise ValueError(f"{kind} backend {backend!r} is registered twice")
        cls.name = kind
        cls.backend = backend
        backends[backend] = cls
        return cls

    return register


def _load_all() -> None:
    """Import every module of the checks package once, so that each has registered its checks."""
    global _LOADED
    if _LOADED:
        return
    with _LOCK:
        if not _LOADED:
            for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
                importlib.import_module(f"{__package__}.{module.name}")
            _LOADED = True


def check_backends(kind: str) -> tuple[str, ...]:
    """The backends registered for stage `kind`, sorted, with "none" (the check off) last."""
    _load_all()
    return tuple(sorted(_CHECKS.get(kind, {}), key=lambda name: (name == "none", name)))


def build_check(kind: str, backend: str, **options: Any):
    """The `kind` check named `backend`, built from the run's `options` (each backend takes the
    ones it needs). Raises ValueError for an unknown backend, BackendUnavailable when the backend
    cannot run here."""
    _load_all()
    cls = _CHECKS.get(kind, {}).get(backend)
    if cls is None:
        raise ValueError(
            f"unknown {kind} backend {backend!r}; one of {', '.join(check_backends(kind))}"
        )
    return cls.from_options(**options)
