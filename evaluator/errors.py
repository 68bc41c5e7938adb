"""Exceptions of the evaluator. Every one of them is a user-facing problem (bad input, a model
that cannot be used, a label file that lacks pairs): the CLI prints the message, no traceback."""

from __future__ import annotations


class EvaluatorError(Exception):
    """Base class: a problem the user can fix; the message says what and where."""


class LabelError(EvaluatorError, ValueError):
    """A label name (or a label map) that cannot be read as entailment/neutral/contradiction."""


class BackendError(EvaluatorError):
    """A model spec that cannot be resolved, loaded or used."""


class MissingPairsError(BackendError):
    """A label source (e.g. a precomputed file) lacks pairs that the run needs."""

    def __init__(self, source: str, missing: list[tuple[str, str]], total: int):
        self.source, self.missing, self.total = source, missing, total
        premise, hypothesis = missing[0]
        super().__init__(
            f"{source}: {len(missing)} of the {total} pairs this run needs are missing, e.g. "
            f"premise={premise!r} hypothesis={hypothesis!r}. Export every pair a run may need "
            "with `transnli pairs TRIPLES --out FILE`, label them, and try again."
        )
