"""The check interface shared by grammar and acceptability backends.

A check judges candidate sentences in batches. Grammar checks compare each candidate with the
sentence it was made from (errors *added*), because source sentences often carry errors of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


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
    name: str  # "grammar" or "acceptability"
    backend: str  # "harper", "languagetool", "cola", "link-grammar", "none"

    def check_many(
        self, originals: Sequence[str], candidates: Sequence[str]
    ) -> list[CheckResult]:
        """Judge candidates[i] (made from originals[i]); one result per candidate, same order."""
        ...

    def version(self) -> str:
        """Version string of the backend and its model/data, for provenance."""
        ...
