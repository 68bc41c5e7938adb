"""Language-model features of a candidate for the learned quality scorer (quality_model.py):
measured by bench_quality_lm.py and not shipped, since they do not beat d alone on the test set
(docs/quality-model.md, "Language-model features (measured, not shipped)").

d = log p(H') - log p(H) (the lm check's score) sums everything that changed: the swapped word's
tokens and every token after it. These features take it apart, from the same per-token
log-probabilities the lm check computes (transnli.common.lm, from the first differing token on;
the score cache serves them again for free when the check runs too):

- the swapped span: the tokens between the shared prefix and the shared suffix of H and H' (the
  word, the antonym, and any article the realiser changed). Its log-probability in H and in H'
  under the shared prefix, their difference (word against antonym in this context), and the
  same per token;
- the continuation: the shared suffix, scored in both sentences, so its tokens line up: the sum of
  the differences (how much the rest of the sentence suffers) and the largest single-token drop;
- the least likely token of H' against that of H, over the scored positions;
- the spans' prior: each span's log-probability as a sentence on its own, and the span difference
  minus the prior difference (how much this context, rather than the words' frequency, favours
  the antonym: a rare antonym is not a bad one);
- d itself, d per scored token, and the numbers of tokens.

All features are named `lm_*` (`LM_FEATURE_NAMES`); a model file that lists none of them needs no
language model. Pure functions compute them from token ids and scores (`pair_features`);
`LMFeatures` runs the scorer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from transnli.common.lm.readings import ROUND_DIGITS, TokenScores
from transnli.common.lm.scorer import CausalLMScorer, first_scored

LM_FEATURE_NAMES: tuple[str, ...] = (
    "lm_d",
    "lm_d_per_token",
    "lm_span_logp_original",
    "lm_span_logp_candidate",
    "lm_span_d",
    "lm_span_d_per_token",
    "lm_continuation_d",
    "lm_continuation_min_diff",
    "lm_min_token_diff",
    "lm_prior_original",
    "lm_prior_candidate",
    "lm_span_d_minus_prior",
    "lm_log_span_tokens_original",
    "lm_log_span_tokens_candidate",
    "lm_log_continuation_tokens",
)


def common_suffix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    """How many final tokens a and b share, at most `limit`."""
    n = 0
    while n < limit and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def spans(
    original: Sequence[int], candidate: Sequence[int], start: int
) -> tuple[tuple[int, int], tuple[int, int], int]:
    """The swapped span of each sentence, as (begin, end) token positions, and the length of the
    shared continuation after it. The spans begin at `start` (the first scored token) and keep at
    least one token each, so both sentences have a span to score."""
    limit = min(len(original), len(candidate)) - start - 1
    suffix = common_suffix(original, candidate, max(0, limit))
    return (start, len(original) - suffix), (start, len(candidate) - suffix), suffix


def pair_features(
    original: Sequence[int],
    candidate: Sequence[int],
    scores_original: TokenScores,
    scores_candidate: TokenScores,
    prior_original: float,
    prior_candidate: float,
) -> dict[str, float]:
    """The LM features of one (H, H'), from their token ids and their per-token log-probabilities
    from the same start; `prior_*`: each span's log-probability as a sentence of its own."""
    start = scores_original.start
    span_o, span_c, suffix = spans(original, candidate, start)
    lo = np.asarray(scores_original.logprobs, dtype=np.float64)
    lc = np.asarray(scores_candidate.logprobs, dtype=np.float64)
    n_o, n_c = span_o[1] - start, span_c[1] - start
    word_o, word_c = float(lo[:n_o].sum()), float(lc[:n_c].sum())
    cont = lc[n_c:] - lo[n_o:]  # the shared suffix, aligned token by token
    d = float(lc.sum() - lo.sum())
    span_d = word_c - word_o
    features = {
        "lm_d": d,
        "lm_d_per_token": d / max(len(lo), len(lc)),
        "lm_span_logp_original": word_o,
        "lm_span_logp_candidate": word_c,
        "lm_span_d": span_d,
        "lm_span_d_per_token": word_c / n_c - word_o / n_o,
        "lm_continuation_d": float(cont.sum()),
        "lm_continuation_min_diff": float(cont.min()) if suffix else 0.0,
        "lm_min_token_diff": float(lc.min() - lo.min()),
        "lm_prior_original": prior_original,
        "lm_prior_candidate": prior_candidate,
        "lm_span_d_minus_prior": span_d - (prior_candidate - prior_original),
        "lm_log_span_tokens_original": math.log(n_o),
        "lm_log_span_tokens_candidate": math.log(n_c),
        "lm_log_continuation_tokens": math.log1p(suffix),
    }
    # Rounded like the scores they come from, so float noise in the sums never reaches a record.
    return {k: round(v, ROUND_DIGITS) for k, v in features.items()}


class LMFeatures:
    """The LM features of (H, H') pairs, in batches, with one CausalLMScorer."""

    names = LM_FEATURE_NAMES

    def __init__(self, scorer: CausalLMScorer):
        self.scorer = scorer

    def rows(self, pairs: Sequence[tuple[str, str]]) -> list[dict[str, float]]:
        """One feature dict per (H, H'): two model calls, the pairs (from the first differing
        token, as the lm check scores them) and the swapped spans on their own."""
        scorer = self.scorer
        encoded = [(scorer.encode(h), scorer.encode(m)) for h, m in pairs]
        starts = [first_scored(a, b) for a, b in encoded]
        flat = [t for pair in encoded for t in pair]
        scores = scorer.score_tokens(flat, [s for s in starts for _ in (0, 1)])
        span_texts = []
        for (a, b), start in zip(encoded, starts, strict=True):
            span_o, span_c, _ = spans(a, b, start)
            span_texts += [_decode(scorer, a, span_o), _decode(scorer, b, span_c)]
        distinct = sorted(set(span_texts))
        prior = dict(zip(distinct, self._priors(distinct), strict=True))
        return [
            pair_features(
                a,
                b,
                scores[2 * i],
                scores[2 * i + 1],
                prior[span_texts[2 * i]],
                prior[span_texts[2 * i + 1]],
            )
            for i, (a, b) in enumerate(encoded)
        ]

    def _priors(self, texts: Sequence[str]) -> list[float]:
        """log p of each text as a sentence of its own (0.0 for an empty one)."""
        wanted = [t for t in texts if t]
        scored = self.scorer.score_sentences(wanted)
        totals = {t: s.total for t, s in zip(wanted, scored, strict=True)}
        return [totals.get(t, 0.0) for t in texts]


def _decode(scorer: CausalLMScorer, tokens: Sequence[int], span: tuple[int, int]) -> str:
    return scorer.tokenizer.decode(list(tokens[span[0] : span[1]])).strip()
