"""The language-model acceptability check: is H' about as likely a sentence as H?

A causal language model (transnli.common.lm; the default is Gemma 3 270M, installed by the setup)
scores the original H and the candidate H' from the first token where they differ:
d = log p(H') - log p(H), summed over those tokens. The shared prefix cancels (the model is causal),
so d measures how much less likely the swapped word and everything after it became. An antonym
that fits the sentence costs little ("a dark -> light room": about -2); one that breaks its sense
costs a lot ("changed -> stayed his mind": about -12; "make -> unmake light work": -26).

The candidate passes when d >= threshold. Every number is kept on the record:
``{"backend": "lm", "passed": ..., "logp_original": ..., "logp_candidate": ..., "d": ...,
"from_token": k, "threshold": t}`` (log-probabilities in nats, from token k on; token 0 is BOS).
The default threshold and how it was chosen: docs/generation.md, "The language-model check".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transnli.common.lm.readings import PairScore
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import DEFAULT_LM, LMError, LMSettings
from transnli.generator.checks.base import BackendUnavailable, CheckResult, check_lengths
from transnli.generator.checks.registry import register_check
from transnli.generator.config import DEFAULT_LM_THRESHOLD


@register_check("acceptability", "lm")
class LMAcceptability:
    """Passes H' when the language model finds it at most `threshold` nats less likely than H
    (d = log p(H') - log p(H) >= threshold). Scores come from the model's score cache when a
    sentence was scored before, so a rerun costs no model time."""

    @classmethod
    def from_options(
        cls,
        *,
        lm: str | None = None,
        lm_threshold: float = DEFAULT_LM_THRESHOLD,
        lm_dtype: str = "float32",
        device: str = "auto",
        **kw: Any,
    ) -> LMAcceptability:
        """The lm* and device options are this backend's; the others are ignored."""
        return cls(load_scorer("lm", lm, lm_dtype, device), threshold=lm_threshold)

    measure = "d"  # what rank_scores gives, and its name on the record

    def __init__(self, scorer: CausalLMScorer, *, threshold: float = DEFAULT_LM_THRESHOLD):
        self.scorer = scorer
        self.threshold = float(threshold)

    def rank_scores(self, pairs: list[tuple[str, str]]) -> list[float]:
        """d of each (H, H'), for choosing among candidates (transnli.generator.lm_choice)."""
        return [s.delta for s in self.scorer.compare_many(pairs)]

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        check_lengths(originals, candidates)
        try:
            scores = self.scorer.compare_many(list(zip(originals, candidates, strict=True)))
        except LMError as exc:
            raise BackendUnavailable(f"acceptability backend 'lm': {exc}") from exc
        results = []
        for s in scores:
            passed = s.delta >= self.threshold
            details = {**score_details(s), "threshold": self.threshold}
            reason = "" if passed else f"language model: d = {s.delta} < {self.threshold}"
            results.append(CheckResult(self.backend, passed, details, reason))
        return results

    def version(self) -> str:
        return model_version(self.scorer)

    def close(self) -> None:
        self.scorer.close()


def load_scorer(backend: str, lm: str | None, lm_dtype: str, device: str) -> CausalLMScorer:
    """The language model of the acceptability check `backend`; one line when it cannot load."""
    settings = LMSettings(spec=lm or DEFAULT_LM, device=device, dtype=lm_dtype)
    try:
        return CausalLMScorer.load(settings)
    except LMError as exc:
        raise BackendUnavailable(
            f"acceptability backend '{backend}': {exc}. Switch with --acceptability link-grammar "
            "(or the 'fast' preset)"
        ) from exc


def score_details(score: PairScore) -> dict[str, Any]:
    """A pair's log-probabilities as a language-model check records them."""
    return {
        "logp_original": score.original,
        "logp_candidate": score.modified,
        "d": score.delta,
        "from_token": score.shared_prefix_tokens,
    }


def model_version(scorer: CausalLMScorer) -> str:
    """The language model's provenance line: spec, class, dtype and weights' digest."""
    ident = scorer.identity
    digest = ident.get("weights_sha256") or "unknown"
    return f"lm {ident.get('spec')} ({ident.get('class')}, {ident.get('dtype')}, {digest})"
