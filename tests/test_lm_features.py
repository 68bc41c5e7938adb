"""The language-model features of the quality scorer (benchmarks/lm_features.py): the
swapped span and the continuation are split where H and H' share their suffix, each figure comes
from the per-token log-probabilities the lm check uses, and a tiny random causal LM built here goes
through the same loading and scoring code as the packaged Gemma."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from tiny_lm import build_tiny_causal_lm
from transnli.common.lm.readings import TokenScores
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from lm_features import (  # noqa: E402  (a benchmark module: measured, not shipped)
    LM_FEATURE_NAMES,
    LMFeatures,
    pair_features,
    spans,
)

PAIRS = [
    ("The soup is hot.", "The soup is cold."),
    ("He changed his mind.", "He stayed his mind."),
    ("A big dog runs.", "A small dog runs."),
    ("A dog walks.", "A dog runs."),
]


def test_the_span_ends_where_the_shared_suffix_begins():
    # BOS a b [c d] e f  against  BOS a b [x] e f: the span is c d / x, the continuation e f
    assert spans((1, 5, 6, 7, 8, 9, 10), (1, 5, 6, 11, 9, 10), 3) == ((3, 5), (3, 4), 2)
    # a change at the very end: no continuation
    assert spans((1, 5, 6), (1, 5, 7), 2) == ((2, 3), (2, 3), 0)
    # one sentence the other's prefix: each keeps one token of span
    assert spans((1, 5, 6), (1, 5, 6, 6), 2) == ((2, 3), (2, 4), 0)


def test_each_feature_reads_its_own_tokens():
    original, candidate = (1, 5, 6, 7, 8, 9), (1, 5, 11, 12, 8, 9)
    lo = TokenScores(2, (-1.0, -2.0, -0.5, -0.25))  # span 6 7, continuation 8 9
    lc = TokenScores(2, (-3.0, -4.0, -2.5, -0.25))  # span 11 12, continuation 8 9
    f = pair_features(original, candidate, lo, lc, prior_original=-5.0, prior_candidate=-9.0)
    assert set(f) == set(LM_FEATURE_NAMES)
    assert f["lm_d"] == -6.0
    assert f["lm_d_per_token"] == -1.5
    assert (f["lm_span_logp_original"], f["lm_span_logp_candidate"]) == (-3.0, -7.0)
    assert f["lm_span_d"] == -4.0 and f["lm_span_d_per_token"] == -2.0
    assert f["lm_continuation_d"] == -2.0 and f["lm_continuation_min_diff"] == -2.0
    assert f["lm_min_token_diff"] == -4.0 - -2.0
    assert f["lm_span_d_minus_prior"] == -4.0 - (-9.0 - -5.0)
    assert f["lm_log_span_tokens_candidate"] == round(math.log(2), 4)
    assert f["lm_log_continuation_tokens"] == round(math.log(3), 4)


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"), max_positions=256)


def test_the_features_come_from_the_lm_checks_own_scores(tiny_lm_dir, tmp_path):
    scorer = CausalLMScorer.load(
        LMSettings(spec=str(tiny_lm_dir), cache_dir=tmp_path / "cache", use_cache=False)
    )
    rows = LMFeatures(scorer).rows(PAIRS)
    for row, score in zip(rows, scorer.compare_many(PAIRS), strict=True):
        assert row["lm_d"] == score.delta
    # "hot" / "cold" is the whole span; its prior is the word scored as a sentence of its own
    priors = scorer.score_sentences(["hot", "cold"])
    assert rows[0]["lm_prior_original"] == priors[0].total
    assert rows[0]["lm_prior_candidate"] == priors[1].total
    assert rows[0]["lm_log_continuation_tokens"] == round(math.log(2), 4)  # "." scored in both
    # the same pairs in another order and company give the same rows
    again = LMFeatures(scorer).rows(PAIRS[::-1] + [("A dog runs.", "A dog walks.")])
    assert again[: len(PAIRS)][::-1] == rows
