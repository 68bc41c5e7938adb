"""The pair-judge acceptability check: a language model fine-tuned on people's judgements reads
H and H' together (transnli.generator.pair_judge) and gives the probability that H' is good; the
candidate passes when it reaches the threshold (default: the judge folder's own).

No pair judge ships yet: name a folder trained by benchmarks/train_pair_judge.py with
`--judge-model`. Every number is kept on the record: ``{"backend": "pair-judge", "passed",
"p_good", "threshold"}``. How it is trained and validated: docs/quality-model.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transnli.common.devices import resolve_device
from transnli.common.digest import sha256_file
from transnli.common.lm.conversion import resolve_model_folder
from transnli.common.lm.settings import DEFAULT_LM, LMError, LMSettings
from transnli.generator.checks.base import BackendUnavailable, CheckResult, check_lengths
from transnli.generator.checks.registry import register_check
from transnli.generator.pair_judge import (
    NEEDS_FOLDER,
    PairJudge,
    PairJudgeError,
    load_pair_judge,
)

BACKEND = "pair-judge"


@register_check("acceptability", BACKEND)
class PairJudgeAcceptability:
    """Passes H' when the pair judge's probability that it is good reaches `threshold`."""

    @classmethod
    def from_options(
        cls,
        *,
        lm: str | None = None,
        judge_model: str | None = None,
        judge_threshold: float | None = None,
        device: str = "auto",
        **kw: Any,
    ) -> PairJudgeAcceptability:
        """The lm, judge_* and device options are this backend's; the others are ignored."""
        if not judge_model:
            raise BackendUnavailable(f"acceptability backend '{BACKEND}': {NEEDS_FOLDER}")
        try:
            where, identity = resolve_model_folder(LMSettings(spec=lm or DEFAULT_LM))
            judge = load_pair_judge(judge_model, where, str(resolve_device(device)))
        except (LMError, PairJudgeError) as exc:
            raise BackendUnavailable(f"acceptability backend '{BACKEND}': {exc}") from exc
        trained_on = judge.meta.get("language_model_sha256")
        if trained_on and identity.get("weights_sha256") not in (None, trained_on):
            raise BackendUnavailable(
                f"acceptability backend '{BACKEND}': {judge_model} was trained on another "
                f"language model ({judge.meta.get('language_model')}); name it with --lm"
            )
        return cls(judge, threshold=judge_threshold, identity=identity)

    measure = "p_good"  # what rank_scores gives, and its name on the record

    def __init__(
        self,
        judge: PairJudge,
        *,
        threshold: float | None = None,
        identity: dict[str, Any] | None = None,
    ):
        self.judge = judge
        self.threshold = judge.threshold if threshold is None else float(threshold)
        self.identity = identity or {}

    def rank_scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """How good each (H, H') is by this check's measure, for choosing among candidates."""
        return self.judge.probabilities(list(pairs))

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        check_lengths(originals, candidates)
        probabilities = self.judge.probabilities(list(zip(originals, candidates, strict=True)))
        results = []
        for p in probabilities:
            passed = p >= self.threshold
            reason = "" if passed else f"pair judge: p(good) = {p} < {self.threshold}"
            details = {"p_good": p, "threshold": self.threshold}
            results.append(CheckResult(self.backend, passed, details, reason))
        return results

    def version(self) -> str:
        digest = sha256_file(self.judge.source)[:16]
        weights = self.identity.get("weights_sha256") or "unknown"
        return f"pair-judge {digest} on lm {self.identity.get('spec')} ({weights})"

    def close(self) -> None:
        pass
