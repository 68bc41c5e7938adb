"""`EvaluationSettings`: every option of an evaluation (`transnli evaluate`'s flags, the Python
API's keyword arguments), in one object checked once by `validate`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import EvaluatorError
from .labels import parse_label_map
from .metrics import CONFIDENT_LEVEL


@dataclass
class EvaluationSettings:
    """How `evaluate_triples` labels, counts and writes.

    `batch_size`: pairs per forward pass, or "auto"; `batch_tokens`: also cap a batch at this
    many padded tokens; `compile`: torch.compile the model; `device`, `dtype`, `max_length`,
    `label_map` and `threads` reach every backend (a model spec may override them);
    `backend_extra`: backend-specific settings (the LLM judges' transport). `all_pairs`: label
    (P,H') for every triple; `families`: also label every pair inside each sentence family;
    `limit`: the first N triples only; `window`: label, count and write this many triples at a
    time (None or 0: the whole run at once; families always hold the run whole).
    `cache_dir` / `no_cache`: the label cache; `show_progress`, `plots`; `overwrite`: replace
    another evaluation's outputs in the output folder; `allow_unfinished`: evaluate a triples
    file of a generation run that has not finished (refused otherwise). `confident_level`: the
    judge's p_good at or above which a triple counts as one the judge is confident in (the
    report's confident-triple rates, docs/evaluation.md)."""

    batch_size: int | str = 32
    device: str = "auto"
    dtype: str = "auto"
    max_length: int | None = None
    label_map: str | None = None
    all_pairs: bool = False
    cache_dir: str | Path | None = None
    no_cache: bool = False
    threads: int | None = None
    show_progress: bool = True
    plots: bool = True
    backend_extra: dict[str, Any] = field(default_factory=dict)
    overwrite: bool = False
    families: bool = False
    limit: int | None = None
    batch_tokens: int | None = None
    compile: bool = False
    window: int | None = None
    allow_unfinished: bool = False
    confident_level: float = CONFIDENT_LEVEL

    def validate(self) -> EvaluationSettings:
        """Raise EvaluatorError for a value no run can use, before anything loads."""
        if self.limit is not None and self.limit < 1:
            raise EvaluatorError("limit must be at least 1 triple")
        batch_size = self.batch_size
        if batch_size != "auto" and (not isinstance(batch_size, int) or batch_size < 1):
            raise EvaluatorError("batch size must be at least 1, or auto")
        if self.batch_tokens is not None and self.batch_tokens < 1:
            raise EvaluatorError("batch tokens must be at least 1")
        if self.max_length is not None and self.max_length < 8:
            raise EvaluatorError("max length must be at least 8 tokens")
        if self.window is not None and self.window < 0:
            raise EvaluatorError("window must be at least 1 triple (0: the whole run at once)")
        level = self.confident_level
        if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level <= 1:
            raise EvaluatorError(f"confident level must be above 0 and at most 1 (got {level!r})")
        if self.label_map:
            parse_label_map(self.label_map)  # fail before loading anything
        return self

    @property
    def held_whole(self) -> bool:
        """No windows: families are built over the whole run, and 0 or None asks for it."""
        return self.families or not self.window

    def identity(self) -> dict[str, Any]:
        """The settings that decide the labels and counts (with the triples and the models, what
        makes two evaluations the same one), as summary.json records them."""
        config = {
            "all_pairs": self.all_pairs,
            "batch_size": self.batch_size,
            "device": self.device,
            "dtype": self.dtype,
            "max_length": self.max_length,
            "label_map": self.label_map,
            "limit": self.limit,
        }
        if self.families:  # only when set: earlier evaluations keep their identity
            config["families"] = True
        if self.confident_level != CONFIDENT_LEVEL:  # likewise
            config["confident_level"] = self.confident_level
        return config
