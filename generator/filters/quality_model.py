"""The learned quality scorer: a logistic regression over per-candidate features
(transnli.generator.filters.quality_features), trained on the hand-judged dev candidates by
benchmarks/train_quality_model.py, run as the filter stage ``quality_model``.

The model file (resources/models/quality_model.json) holds everything scoring needs: the feature
names, the standardisation (mean, scale), the coefficients and intercept, plus provenance (the
training data's sha256, the scikit-learn version, the cross-validated figures). Scoring is pure
numpy, so generation needs no scikit-learn. A candidate passes when its score (the model's
probability that the triple is good, docs/judging.md) is at least the threshold; the verdict records
the score and threshold on the record as ``checks.quality_model``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from transnli.generator.filters.base import FilterItem, FilterOptions, FilterVerdict
from transnli.generator.filters.quality_features import FEATURE_NAMES, QualityFeatures
from transnli.generator.filters.registry import register_filter

MODEL_FORMAT = "transnli-quality-logreg-1"
DEFAULT_THRESHOLD = 0.3


class QualityModelError(ValueError):
    """A model file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class QualityModel:
    feature_names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    meta: dict

    def scores(self, X: np.ndarray) -> np.ndarray:
        """P(good) for each row of X (columns in `feature_names` order)."""
        z = ((X - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    @classmethod
    def from_dict(cls, data: dict, source: str = "<dict>") -> QualityModel:
        if data.get("format") != MODEL_FORMAT:
            raise QualityModelError(
                f"{source}: field 'format' must be {MODEL_FORMAT!r}, got {data.get('format')!r}"
            )
        names = data.get("feature_names")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise QualityModelError(f"{source}: field 'feature_names' must be a list of strings")
        arrays = {}
        for name in ("mean", "scale", "coef"):
            value = data.get(name)
            if not isinstance(value, list) or len(value) != len(names):
                raise QualityModelError(
                    f"{source}: field '{name}' must be a list of {len(names)} numbers"
                )
            arrays[name] = np.asarray(value, dtype=np.float64)
        if not isinstance(data.get("intercept"), (int, float)):
            raise QualityModelError(f"{source}: field 'intercept' must be a number")
        if np.any(arrays["scale"] <= 0):
            raise QualityModelError(f"{source}: field 'scale' must be positive")
        meta = {
            k: v
            for k, v in data.items()
            if k not in ("feature_names", "mean", "scale", "coef", "intercept")
        }
        return cls(
            tuple(names),
            arrays["mean"],
            arrays["scale"],
            arrays["coef"],
            float(data["intercept"]),
            meta,
        )


def default_model_path() -> Path:
    from transnli.resources import resource_path

    return Path(resource_path("models", "quality_model.json"))


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> QualityModel:
    """The model at `path` (None: the shipped one). Raises QualityModelError for a bad file."""
    p = Path(path) if path else default_model_path()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise QualityModelError(f"{p}: no such quality model file") from e
    except json.JSONDecodeError as e:
        raise QualityModelError(f"{p}: line {e.lineno}: not valid JSON ({e.msg})") from e
    if not isinstance(data, dict):
        raise QualityModelError(f"{p}: expected a JSON object")
    return QualityModel.from_dict(data, str(p))


def check_model(path: str | None = None) -> QualityModel:
    """The model at `path`, refused (QualityModelError) when it needs features this version of
    transnli.generator.filters.quality_features does not compute."""
    model = load_model(path)
    missing = [n for n in model.feature_names if n not in FEATURE_NAMES]
    if missing:
        where = path or str(default_model_path())
        raise QualityModelError(
            f"{where}: field 'feature_names': features this version does not compute: "
            f"{', '.join(missing)}"
        )
    return model


@register_filter(
    "quality_model",
    rank=140,
    summary="a learned scorer of the candidate's quality must reach its threshold",
)
class QualityModelFilter:
    """Rejects a candidate whose learned quality score is below `threshold`."""

    name = ""  # set by @register_filter
    summary = ""  # set by @register_filter

    def __init__(
        self, ranker, model: QualityModel | None = None, threshold: float = DEFAULT_THRESHOLD
    ):
        if ranker is None:
            raise ValueError(
                "the quality_model filter needs the pipeline's word vectors (an AntonymRanker)"
            )
        self.model = model if model is not None else load_model()
        self.features = QualityFeatures(ranker)
        missing = [n for n in self.model.feature_names if n not in self.features.names]
        if missing:
            raise QualityModelError(
                "field 'feature_names': features this version does not compute: "
                f"{', '.join(missing)}"
            )
        self._columns = [self.features.names.index(n) for n in self.model.feature_names]
        self.threshold = threshold

    @classmethod
    def from_options(cls, options: FilterOptions) -> QualityModelFilter:
        return cls(options.ranker, check_model(options.quality_model), options.quality_threshold)

    def score_many(self, items: Sequence[FilterItem]) -> np.ndarray:
        if not items:
            return np.zeros(0)
        X = self.features.matrix(items, [it.ranked or None for it in items])
        return self.model.scores(X[:, self._columns])

    def judge_many(self, items: Sequence[FilterItem]) -> list[FilterVerdict]:
        out = []
        for score in self.score_many(items):
            details = {"score": round(float(score), 4), "threshold": self.threshold}
            if score >= self.threshold:
                out.append(FilterVerdict(True, "", details))
            else:
                out.append(
                    FilterVerdict(
                        False, f"quality score {score:.3f} below {self.threshold}", details
                    )
                )
        return out
