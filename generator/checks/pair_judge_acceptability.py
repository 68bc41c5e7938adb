"""The pair-judge acceptability check: a language model fine-tuned on people's judgements reads
H and H' together (transnli.generator.pair_judge) and gives the probability that H' is good; the
candidate passes when it reaches the threshold (default: the judge folder's own).

A folder may be stacked with a linear judge file it holds (its 'stack' field): the linear judge
then reads the same pair through the language model's forward pass (the judge check's own path)
and the probability is the mean of the two, mapped by the folder's stack calibration when it has
one. The folder that ships (`default_pair_judge_path`) is such a stack; `--judge-model FOLDER`
names another. Every number is kept on the record:
``{"backend": "pair-judge", "passed", "p_good", "threshold"}``, and for a stack also "p_pair",
"p_linear" and the language model's scores the judge check records. How it is trained and
validated: docs/quality-model.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transnli.common.devices import resolve_device
from transnli.common.digest import sha256_file
from transnli.common.lm.conversion import resolve_model_folder
from transnli.common.lm.settings import DEFAULT_LM, LMError, LMSettings
from transnli.generator.checks.base import (
    BackendUnavailable,
    CheckResult,
    check_lengths,
    require_finite,
)
from transnli.generator.checks.judge_acceptability import JudgeAcceptability
from transnli.generator.checks.lm_acceptability import score_details
from transnli.generator.checks.registry import register_check
from transnli.generator.pair_judge import (
    PairJudge,
    PairJudgeError,
    default_pair_judge_path,
    load_pair_judge,
    read_pair_judge_meta,
    stack_calibration,
    stack_probability,
    stacked_judge_file,
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
        folder = judge_model or str(default_pair_judge_path())
        try:
            where, identity = resolve_model_folder(LMSettings(spec=lm or DEFAULT_LM))
            meta = read_pair_judge_meta(folder)
            trained_on = meta.get("language_model_sha256")
            if trained_on and identity.get("weights_sha256") not in (None, trained_on):
                raise PairJudgeError(
                    f"{folder} was trained on another language model "
                    f"({meta.get('language_model')}): name that model with --lm, or a pair "
                    "judge trained for this one with --judge-model"
                )
        except (LMError, PairJudgeError) as exc:
            raise BackendUnavailable(f"acceptability backend '{BACKEND}': {exc}") from exc
        linear_file = stacked_judge_file(folder, meta)
        linear = None
        if linear_file is not None:
            linear = JudgeAcceptability.from_options(
                lm=lm, judge_model=str(linear_file), device=device
            )
        try:
            # a stack's two judges read one copy of the model's weights and one tokenizer
            # (docs/quality-model.md)
            scorer = linear.scorer if linear is not None else None
            judge = load_pair_judge(
                folder,
                where,
                str(resolve_device(device)),
                loaded=scorer.model if scorer is not None else None,
                loaded_tokenizer=scorer.tokenizer if scorer is not None else None,
            )
        except PairJudgeError as exc:
            if linear is not None:
                linear.close()
            raise BackendUnavailable(f"acceptability backend '{BACKEND}': {exc}") from exc
        check = cls(judge, threshold=judge_threshold, identity=identity, linear=linear)
        check.shipped = judge_model is None
        return check

    measure = "p_good"  # what rank_scores gives, and its name on the record

    def __init__(
        self,
        judge: PairJudge,
        *,
        threshold: float | None = None,
        identity: dict[str, Any] | None = None,
        linear: JudgeAcceptability | None = None,
    ):
        self.judge = judge
        self.threshold = judge.threshold if threshold is None else float(threshold)
        self.identity = identity or {}
        self.linear = linear  # the linear judge of a stacked folder
        self.shipped = False  # the folder that ships with transnli (named by name, not path)

    def effective_settings(self) -> dict[str, Any]:
        """The judge folder and threshold this check resolved, for config.json and the card."""
        name = self.judge.source.name
        return {
            "judge_model": f"{name} (shipped)" if self.shipped else str(self.judge.source),
            "judge_threshold": self.threshold,
        }

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
        """Each pair's numbers for the record: p_good, and for a stack p_pair, p_linear and the
        language model's scores."""
        pair = self.judge.probabilities(pairs)
        require_finite(BACKEND, "the pair judge", pair)
        if self.linear is None:
            return [{"p_good": p} for p in pair]
        readings, linear = self.linear.probabilities(pairs)
        calibration = stack_calibration(self.judge.meta)
        return [
            {
                "p_good": stack_probability(q, p, calibration),
                "p_pair": p,
                "p_linear": q,
                **score_details(reading.score),
            }
            for p, q, reading in zip(pair, linear, readings, strict=True)
        ]

    def rank_scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """How good each (H, H') is by this check's measure, for choosing among candidates."""
        return [numbers["p_good"] for numbers in self.probabilities(list(pairs))]

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        check_lengths(originals, candidates)
        results = []
        for numbers in self.probabilities(list(zip(originals, candidates, strict=True))):
            p = numbers["p_good"]
            passed = p >= self.threshold
            reason = "" if passed else f"pair judge: p(good) = {p} < {self.threshold}"
            details = {"p_good": p, "threshold": self.threshold, **numbers}
            results.append(CheckResult(self.backend, passed, details, reason))
        return results

    def version(self) -> str:
        digest = sha256_file(self.judge.source)[:16]
        weights = self.identity.get("weights_sha256") or "unknown"
        alone = f"pair-judge {digest} on lm {self.identity.get('spec')} ({weights})"
        return alone if self.linear is None else f"{alone}, stacked with {self.linear.version()}"

    def close(self) -> None:
        if self.linear is not None:
            self.linear.close()
