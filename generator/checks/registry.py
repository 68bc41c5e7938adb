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

from collections.abc import Callable
from pathlib import Path
from typing import Any

from transnli.generator.plugins import PackageModules

_CHECKS: dict[str, dict[str, type]] = {}
_MODULES = PackageModules(__package__, Path(__file__).parent)


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


def check_backends(kind: str) -> tuple[str, ...]:
    """The backends registered for stage `kind`, sorted, with "none" (the check off) last."""
    _MODULES.load()
    return tuple(sorted(_CHECKS.get(kind, {}), key=lambda name: (name == "none", name)))


def build_check(kind: str, backend: str, **options: Any):
    """The `kind` check named `backend`, built from the run's `options` (each backend takes the
    ones it needs). Raises ValueError for an unknown backend, BackendUnavailable when the backend
    cannot run here."""
    _MODULES.load()
    cls = _CHECKS.get(kind, {}).get(backend)
    if cls is None:
        raise ValueError(
            f"unknown {kind} backend {backend!r}; one of {', '.join(check_backends(kind))}"
        )
    return cls.from_options(**options)
