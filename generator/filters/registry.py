"""The filter registry: each filter registers itself by name beside its class.

    @register_filter("sense_fit", rank=120, summary="the word must be likely to be used in ...")
    class SenseFitFilter(PerItemFilter): ...

Every module of this package is imported the first time the registry is asked, so adding a filter
is adding one module. Filters run in the order of their `rank` (cheap look-ups first; the learned
quality scorer last, on what the rules leave), whatever order a preset names them in, so the
order in which modules load changes nothing. Preset validation, the `--filters` help and the
dataset card's filter list read the registry; a test holds the docs' filter table to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from transnli.generator.filters.base import FilterOptions
from transnli.generator.plugins import PackageModules

_FILTERS: dict[str, type] = {}
_RANKS: dict[str, int] = {}
_MODULES = PackageModules(__package__, Path(__file__).parent)


def register_filter(name: str, rank: int, summary: str) -> Callable[[type], type]:
    """Class decorator: register the filter class under `name`, run at position `rank`;
    `summary` is the clause a dataset card uses to say what the filter did."""

    def register(cls: type) -> type:
        if _FILTERS.get(name, cls) is not cls:
            raise ValueError(f"filter {name!r} is registered twice")
        clash = [n for n, r in _RANKS.items() if r == rank and n != name]
        if clash:
            raise ValueError(f"filter {name!r} has the rank of {clash[0]!r} ({rank})")
        cls.name = name
        cls.summary = summary
        _FILTERS[name] = cls
        _RANKS[name] = rank
        return cls

    return register


def filter_names() -> tuple[str, ...]:
    """Every registered filter's name, in running order."""
    _MODULES.load()
    return tuple(sorted(_FILTERS, key=_RANKS.__getitem__))


def filter_class(name: str) -> type:
    """The class registered as `name` (KeyError when there is none)."""
    _MODULES.load()
    return _FILTERS[name]


def filter_summary(name: str) -> str:
    """What the filter `name` does, in one clause ("" for a name no filter has any more)."""
    _MODULES.load()
    cls = _FILTERS.get(name)
    return cls.summary if cls is not None else ""


def build_filters(
    names: Sequence[str],
    include_aux: bool = False,
    ranker=None,
    quality_threshold: float = 0.3,
    quality_model: str | None = None,
) -> list:
    """The filters `names` lists, in running order (see the module docstring)."""
    known = filter_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown filter(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    options = FilterOptions(include_aux, ranker, quality_threshold, quality_model)
    return [filter_class(n).from_options(options) for n in known if n in names]
