"""The judge acceptability check: a judge trained on people's judgements decides, from the
language model's forward pass over H and H', how likely H' is to be good.

The language model (transnli.common.lm) reads each pair once: the token log-probabilities the lm
check uses (d = log p(H') - log p(H)) and the hidden states at the judge's layer come from the
same pass. The judge (transnli.generator.judge; the shipped file was trained for Gemma 3 270M on
the judged dev and genre candidates) turns them into a calibrated probability that H' is good
(docs/judging.md); the candidate passes when it is at least the threshold (default: the file's own,
chosen in cross-validation). Every number is kept on the record: ``{"backend": "judge", "passed",
"p_good", "threshold", "d", "logp_original", "logp_candidate", "from_token"}``.
How the judge was trained and what it gets wrong: docs/quality-model.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transnli.common.digest import sha256_file
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMError
from transnli.generator.checks.base import (
    BackendUnavailable,
    CheckResult,
    check_lengths,
    require_finite,
)
from transnli.generator.checks.lm_acceptability import (
    load_scorer,
    model_version,
    score_details,
)
from transnli.generator.checks.registry import register_check
from transnli.generator.judge import (
    DEFAULT_JUDGE_THRESHOLD,
    Judge,
    JudgeError,
    default_judge_path,
    load_judge,
)


@register_check("acceptability", "judge")
class JudgeAcceptability:
    """Passes H' when the judge's probability that it is good reaches `threshold`."""

    @classmethod
    def from_options(
        cls,
        *,
        lm: str | None = None,
        lm_dtype: str = "float32",
        judge_model: str | None = None,
        judge_threshold: float | None = None,
        device: str = "auto",
        **kw: Any,
    ) -> JudgeAcceptability:
        """The lm*, judge_* and device options are this backend's; the others are ignored."""
        try:
            judge = load_judge(judge_model)
        except JudgeError as exc:
            raise BackendUnavailable(f"acceptability backend 'judge': {exc}") from exc
        scorer = load_scorer("judge", lm, lm_dtype, device)
        source = judge_model or str(default_judge_path())
        check_fits(judge, scorer, source)
        check = cls(scorer, judge, threshold=judge_threshold, source=source)
        check.shipped = judge_model is None
        return check

    measure = "p_good"  # what rank_scores gives, and its name on the record

    def __init__(
        self,
        scorer: CausalLMScorer,
        judge: Judge,
        *,
        threshold: float | None = None,
        source: str = "",
    ):
        self.scorer = scorer
        self.judge = judge
        if threshold is None:
            threshold = DEFAULT_JUDGE_THRESHOLD if judge.threshold is None else judge.threshold
        self.threshold = float(threshold)
        self.source = source
        self.shipped = False  # the judge that ships with transnli (named by file, not path)

    def effective_settings(self) -> dict[str, Any]:
        """The settings this check resolved where the run's config left them unset (None: the
        shipped judge, the file's own threshold), for config.json and the dataset card."""
        name = Path(self.source).name
        return {
            "judge_model": f"{name} (shipped)" if self.shipped else self.source,
            "judge_threshold": self.threshold,
        }

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> tuple[list, list[float]]:
        """(readings, p_good) of each (H, H')."""
        try:
            readings = self.scorer.read_pairs(pairs, (self.judge.layer,))
        except LMError as exc:
            raise BackendUnavailable(f"acceptability backend 'judge': {exc}") from exc
        probabilities = self.judge.probabilities(readings)
        require_finite("judge", "the judge", probabilities)
        return readings, probabilities

    def rank_scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """How good each (H, H') is by this check's measure, for choosing among candidates."""
        return self.probabilities(pairs)[1]

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        check_lengths(originals, candidates)
        readings, probabilities = self.probabilities(list(zip(originals, candidates, strict=True)))
        results = []
        for reading, p in zip(readings, probabilities, strict=True):
            passed = p >= self.threshold
            details = {"p_good": p, "threshold": self.threshold, **score_details(reading.score)}
            reason = "" if passed else f"judge: p(good) = {p} < {self.threshold}"
            results.append(CheckResult(self.backend, passed, details, reason))
        return results

    def version(self) -> str:
        judge_digest = sha256_file(self.source)[:16] if self.source else "unknown"
        return f"judge {judge_digest} (layer {self.judge.layer}) on {model_version(self.scorer)}"

    def close(self) -> None:
        self.scorer.close()


def check_fits(judge: Judge, scorer: CausalLMScorer, source: str) -> None:
    """A judge trained for another language model is refused before any work: its layer must
    exist and its hidden states must have the model's width."""
    width = getattr(scorer.model.config.get_text_config(), "hidden_size", None)
    if judge.layer > scorer.layers or (width is not None and width != judge.width):
        raise BackendUnavailable(
            f"acceptability backend 'judge': {source} was trained for a model with hidden "
            f"states of width {judge.width} at layer {judge.layer} "
            f"({judge.meta.get('language_model', 'unknown')}); {scorer.settings.spec} has width "
            f"{width} and {scorer.layers} layers. Train a judge for it "
            "(benchmarks/train_judge.py) or use --acceptability lm"
        )
