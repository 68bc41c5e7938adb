"""What one read of the language model gives: token log-probabilities (`TokenScores`), a pair's
score (`PairScore`), and hidden states (`SideStates`, `PairReading`), every number rounded to
ROUND_DIGITS."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from transnli.common.lm.settings import LMError

ROUND_DIGITS = 4


@dataclass(frozen=True)
class TokenScores:
    """Log-probabilities of a sentence's tokens from token `start` on (0 is the BOS token)."""

    start: int
    logprobs: tuple[float, ...]

    @classmethod
    def rounded(cls, start: int, logprobs: Sequence[float]) -> TokenScores:
        """The model's log-probabilities, rounded; a non-finite one (damaged weights) is refused
        here, before any check reads it or the score cache keeps it."""
        if not all(math.isfinite(x) for x in logprobs):
            raise LMError(
                "the language model gave a non-finite log-probability (NaN or infinite): its "
                "weights are damaged or overflow in this dtype; check its files "
                "(transnli doctor) or convert it again"
            )
        return cls(start, tuple(round(x, ROUND_DIGITS) for x in logprobs))

    @property
    def total(self) -> float:
        return round(sum(self.logprobs), ROUND_DIGITS)


@dataclass(frozen=True)
class PairScore:
    """log p of H and of H' from their first differing token on, and d = log p(H') - log p(H)."""

    original: float
    modified: float
    shared_prefix_tokens: int

    @property
    def delta(self) -> float:
        return round(self.modified - self.original, ROUND_DIGITS)


@dataclass(frozen=True)
class SideStates:
    """Hidden states of one sentence at one layer, as two vectors: the mean over its swapped span
    (the tokens where it differs from the other side of its pair) and the mean over the whole
    sentence (BOS excluded). Rounded to ROUND_DIGITS, like the log-probabilities."""

    span: tuple[float, ...]
    pooled: tuple[float, ...]


@dataclass(frozen=True)
class PairReading:
    """Everything one read of (H, H') gives: each side's token log-probabilities from the first
    differing token (`score` is the PairScore compare_many gives), where each side's swapped span
    ends (exclusive, in tokens), and each side's hidden states at the layer asked for."""

    original: TokenScores
    modified: TokenScores
    span_ends: tuple[int, int]
    original_states: dict[int, SideStates]  # by layer
    modified_states: dict[int, SideStates]

    @property
    def score(self) -> PairScore:
        return PairScore(self.original.total, self.modified.total, self.original.start)
