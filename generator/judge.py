"""The trained judge: the probability that a candidate H' is good (docs/judging.md: coherent English
whose meaning differs from H), from one forward pass of the language model over H and H'.

Features (`judge_features`), all from `CausalLMScorer.read_pairs`:
- scalars from the token log-probabilities, scored from the first token where H and H' differ:
  d = log p(H') - log p(H), d per token, the swapped span's log-probability in each and their
  difference (the word against its antonym in this context), the change over the shared
  continuation, the least likely token of each;
- vectors of the hidden states at one layer: the swapped span of H' (mean over its tokens), its
  shift from the span of H, and the mean over H'. The middle layers carry the word's sense in
  context, which likelihood misses (a fluent sentence with the wrong sense of a word).

The model is linear: a logistic regression over standardised scalars and over each vector block
projected on its principal components (benchmarks/train_judge.py fits both inside each
cross-validation fold). Projection, scaling and coefficients collapse into one weight vector per
block, so the shipped file is small and scoring is a dot product in numpy: no scikit-learn at run
time. The raw score is calibrated (Platt scaling fitted on out-of-fold scores), so the probability
means what it says: among triples scored 0.8, about 8 in 10 are good on the judged data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

JUDGE_FORMAT = "transnli-judge-1"
DEFAULT_JUDGE_THRESHOLD = 0.5

SCALARS = (
    "d",
    "d_per_token",
    "span_original",
    "span_modified",
    "span_delta",
    "continuation_delta",
    "min_original",
    "min_modified",
    "tokens_scored",
    "span_tokens",
)
VECTORS = ("span_modified", "span_shift", "pooled_modified")


class JudgeError(ValueError):
    """A judge file that cannot be used; the message names the file and the field."""


def scalar_features(reading) -> list[float]:
    """SCALARS of one `PairReading`, in order."""
    start = reading.original.start
    lo, lm = reading.original.logprobs, reading.modified.logprobs
    n_o, n_m = reading.span_ends[0] - start, reading.span_ends[1] - start
    span_o, span_m = sum(lo[:n_o]), sum(lm[:n_m])
    d = sum(lm) - sum(lo)
    return [
        d,
        d / max(len(lo), len(lm)),
        span_o,
        span_m,
        span_m - span_o,
        (sum(lm) - span_m) - (sum(lo) - span_o),
        min(lo),
        min(lm),
        float(len(lm)),
        float(n_m),
    ]


def vector_features(reading, layer: int) -> dict[str, np.ndarray]:
    """VECTORS of one `PairReading` at `layer`."""
    o, m = reading.original_states[layer], reading.modified_states[layer]
    span_m = np.asarray(m.span, dtype=np.float64)
    return {
        "span_modified": span_m,
        "span_shift": span_m - np.asarray(o.span, dtype=np.float64),
        "pooled_modified": np.asarray(m.pooled, dtype=np.float64),
    }


def _number(value) -> bool:
    """A JSON number (not a boolean) that is finite: NaN and Infinity are not weights."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Fields:
    """Reads a judge file's fields, each checked strictly; a wrong one raises JudgeError naming
    the file and the field (one line)."""

    def __init__(self, data: dict, source: str):
        self.data, self.source = data, source

    def fail(self, name: str, what: str) -> JudgeError:
        return JudgeError(f"{self.source}: field {name!r} {what}")

    def get(self, name: str, kind: type):
        value = self.data.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.fail(name, f"is missing or not a {kind.__name__}")
        return value

    def integer(self, name: str, low: int) -> int:
        value = self.get(name, int)
        if value < low:
            raise self.fail(name, f"must be at least {low}, got {value}")
        return value

    def number(self, name: str, value=None, *, between: tuple[float, float] | None = None):
        """A finite number (`value`, or the field `name`); `between`: open interval."""
        value = self.data.get(name) if value is None else value
        if not _number(value):
            raise self.fail(name, f"must be a finite number, got {value!r}")
        if between is not None and not between[0] < value < between[1]:
            raise self.fail(name, f"must be between {between[0]} and {between[1]}, got {value}")
        return float(value)

    def numbers(self, name: str, value, length: int) -> np.ndarray:
        if not isinstance(value, list) or len(value) != length:
            raise self.fail(name, f"must be a list of {length} numbers")
        bad = next((x for x in value if not _number(x)), None)
        if bad is not None or any(isinstance(x, bool) for x in value):
            raise self.fail(name, f"must hold finite numbers only, got {bad!r}")
        return np.asarray(value, dtype=np.float64)

    def optional_probability(self, name: str) -> float | None:
        """A probability strictly between 0 and 1, or None when the field is absent."""
        if name not in self.data:
            return None
        return self.number(name, between=(0.0, 1.0))


@dataclass(frozen=True)
class Judge:
    """A trained judge file, loaded. `probabilities(readings)` is its batch method."""

    layer: int
    width: int
    scalar_mean: np.ndarray
    scalar_scale: np.ndarray
    scalar_coef: np.ndarray
    vector_coef: dict[str, np.ndarray]  # per block: [width]
    intercept: float
    calibration: tuple[float, float]  # Platt: p = sigmoid(a * z + b)
    meta: dict
    threshold: float | None = None  # the file's own cut (None: DEFAULT_JUDGE_THRESHOLD)
    # The share of good candidates among those the calibration was fitted on: the prior the
    # probabilities carry, which the card's label-shift correction (transnli.generator.precision)
    # starts from. None in files written before it was recorded: the card then gives the
    # uncorrected mean and says why.
    training_prior: float | None = None
    # How the card estimates a run's precision (transnli.generator.precision.METHODS), chosen by
    # leave-one-genre-out validation, and the largest error it made there (None: not validated).
    estimate_method: str = "mean"
    estimate_error: float | None = None

    def raw_scores(self, readings: Sequence) -> np.ndarray:
        """The linear score z of each reading (before calibration)."""
        if not readings:
            return np.zeros(0)
        scalars = np.array([scalar_features(r) for r in readings], dtype=np.float64)
        z = ((scalars - self.scalar_mean) / self.scalar_scale) @ self.scalar_coef + self.intercept
        for i, reading in enumerate(readings):
            blocks = vector_features(reading, self.layer)
            for name, coef in self.vector_coef.items():
                if blocks[name].shape != coef.shape:
                    raise JudgeError(
                        f"the judge expects hidden states of width {coef.shape[0]} at layer "
                        f"{self.layer}; the language model gives {blocks[name].shape[0]}: "
                        "was it trained for another model?"
                    )
                z[i] += float(blocks[name] @ coef)
        return z

    def calibrate(self, z: np.ndarray) -> np.ndarray:
        a, b = self.calibration
        with np.errstate(over="ignore"):  # exp overflow is p = 0, as it should be
            return 1.0 / (1.0 + np.exp(-(a * z + b)))

    def probabilities(self, readings: Sequence) -> list[float]:
        """The calibrated probability that each candidate is good, rounded to 4 digits (NaN
        where the language model's reading is not a number: the caller refuses it)."""
        return [round(float(p), 4) for p in self.calibrate(self.raw_scores(readings))]

    @classmethod
    def from_dict(cls, data: dict, source: str = "<dict>") -> Judge:
        f = _Fields(data, source)
        if data.get("format") != JUDGE_FORMAT:
            raise f.fail("format", f"must be {JUDGE_FORMAT!r}, got {data.get('format')!r}")
        layer, width = f.integer("layer", 0), f.integer("width", 1)
        names = f.get("scalars", list)
        unknown = [n for n in names if n not in SCALARS]
        if unknown or len(set(names)) != len(names):
            what = ", ".join(map(str, unknown)) or "a feature named twice"
            raise f.fail("scalars", f"lists features this version does not compute: {what}")
        order = [SCALARS.index(n) for n in names]
        arrays = {}
        for key in ("scalar_mean", "scalar_scale", "scalar_coef"):
            full = np.zeros(len(SCALARS)) if key != "scalar_scale" else np.ones(len(SCALARS))
            full[order] = f.numbers(key, data.get(key), len(names))
            arrays[key] = full
        if np.any(arrays["scalar_scale"] <= 0):
            raise f.fail("scalar_scale", "must be positive")
        vectors = {}
        for name, value in f.get("vector_coef", dict).items():
            if name not in VECTORS:
                raise f.fail("vector_coef", f"names an unknown block {name!r}")
            vectors[name] = f.numbers(f"vector_coef.{name}", value, width)
        calibration = f.get("calibration", dict)
        a = f.number("calibration.a", calibration.get("a", "missing"))
        b = f.number("calibration.b", calibration.get("b", "missing"))
        if a <= 0:  # a higher score must mean more likely good, or every cut is upside down
            raise f.fail("calibration.a", f"must be positive, got {a}")
        method, error = _estimation(f)
        known = {
            *("layer", "width", "scalars", "scalar_mean", "scalar_scale", "scalar_coef"),
            *("vector_coef", "intercept", "calibration", "training_prior", "precision_estimate"),
        }
        return cls(
            layer=layer,
            width=width,
            scalar_mean=arrays["scalar_mean"],
            scalar_scale=arrays["scalar_scale"],
            scalar_coef=arrays["scalar_coef"],
            vector_coef=dict(sorted(vectors.items())),
            intercept=f.number("intercept"),
            calibration=(a, b),
            meta={k: v for k, v in data.items() if k not in known},
            threshold=f.optional_probability("threshold"),
            training_prior=f.optional_probability("training_prior"),
            estimate_method=method,
            estimate_error=error,
        )


def _estimation(f: _Fields) -> tuple[str, float | None]:
    """The file's `precision_estimate` (method and validated error); absent: the plain mean,
    not validated. The EM method needs the training prior it starts from."""
    from transnli.generator.precision import METHODS

    if "precision_estimate" not in f.data:
        return "mean", None
    doc = f.get("precision_estimate", dict)
    method = doc.get("method")
    if method not in METHODS:
        raise f.fail("precision_estimate.method", f"must be one of {', '.join(METHODS)}")
    if method == "em" and "training_prior" not in f.data:
        raise f.fail("training_prior", "is needed by precision_estimate.method 'em'")
    error = f.number("precision_estimate.max_abs_error", doc.get("max_abs_error", "missing"))
    if not 0.0 <= error <= 1.0:
        raise f.fail("precision_estimate.max_abs_error", f"must be between 0 and 1, got {error}")
    return method, error


def default_judge_path() -> Path:
    from transnli.resources import resource_path

    return Path(resource_path("models", "judge_gemma3_270m.json"))


def load_judge(path: str | None = None) -> Judge:
    """The judge at `path` (None: the shipped one for the default language model); read again
    when the file changed."""
    p = Path(path) if path else default_judge_path()
    try:
        st = p.stat()
    except OSError:
        return _read_judge(str(p), None)  # its error names the file
    return _read_judge(str(p), (st.st_size, st.st_mtime_ns, st.st_ino))


@lru_cache(maxsize=4)
def _read_judge(path: str, _version: tuple | None) -> Judge:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise JudgeError(f"{p}: no such judge file") from exc
    except json.JSONDecodeError as exc:
        raise JudgeError(f"{p}: line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgeError(f"{p}: cannot be read ({exc})") from exc
    if not isinstance(data, dict):
        raise JudgeError(f"{p}: expected a JSON object")
    return Judge.from_dict(data, str(p))
