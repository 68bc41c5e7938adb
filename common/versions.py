"""Installed versions of distributions, read from their metadata (nothing is imported)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def dist_version(name: str) -> str | None:
    """The installed version of distribution `name`, or None when it is not installed."""
    try:
        return version(name)
    except PackageNotFoundError:
        return None
