"""What every candidate filter shares: the item it judges, the verdict it gives, and a base class.

A filter is a small stage with one job and a batch method, `judge_many(items) ->
list[FilterVerdict]`; a filter whose verdicts are independent per item subclasses `PerItemFilter`
and writes `judge`. It is built from the run's `FilterOptions` (`from_options`), so the registry can
build any filter by name (transnli.generator.filters.registry).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from transnli.generator.tagging import TaggedSentence, Token

BACKEND = "rules"


@dataclass(frozen=True)
class FilterItem:
    """One built candidate as a filter sees it."""

    sentence: TaggedSentence
    token: Token
    antonym: str  # the WordNet lemma name, spaces for underscores
    antonym_pos: str  # its WordNet POS: n, v, a, r
    modified: str  # the realised sentence
    # The ranker's candidates, best first ([{"antonym", "score"}]); the quality scorer reads the
    # score margin from them. Empty when the caller has none.
    ranked: tuple = ()


@dataclass
class FilterVerdict:
    passed: bool
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": BACKEND,
            "passed": self.passed,
            **({"reason": self.reason} if self.reason else {}),
            **self.details,
        }


PASS = FilterVerdict(True)


@dataclass(frozen=True)
class FilterOptions:
    """The run's settings that some filters take: `include_aux` (auxiliary), `ranker` (the
    pipeline's AntonymRanker: sense_fit, quality_model), the quality scorer's threshold and model
    file (None: the shipped one)."""

    include_aux: bool = False
    ranker: Any = None
    quality_threshold: float = 0.3
    quality_model: str | None = None


class CandidateFilter(Protocol):
    name: str

    def judge_many(self, items: Sequence[FilterItem]) -> list[FilterVerdict]: ...


class PerItemFilter:
    """Base for filters whose verdicts are independent per item."""

    name = ""  # set by @register_filter
    summary = ""  # set by @register_filter

    @classmethod
    def from_options(cls, options: FilterOptions) -> PerItemFilter:
        """The filter as a run with `options` uses it (by default: built without arguments)."""
        return cls()

    def judge_many(self, items: Sequence[FilterItem]) -> list[FilterVerdict]:
        return [self.judge(item) for item in items]

    def judge(self, item: FilterItem) -> FilterVerdict:  # pragma: no cover - abstract
        raise NotImplementedError


def children(sentence: TaggedSentence, i: int) -> list[Token]:
    """The tokens whose head is token `i`."""
    return [t for t in sentence.tokens if t.head == i and t.i != i]
