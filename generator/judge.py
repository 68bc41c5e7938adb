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
        return 1.0 / (1.0 + np.exp(-(a * z + b)))

    def probabilities(self, readings: Sequence) -> list[float]:
        """The calibrated probability that each candidate is good, rounded to 4 digits."""
        return [round(float(p), 4) for p in self.calibrate(self.raw_scores(readings))]

    @classmethod
    def from_dict(cls, data: dict, source: str = "<dict>") -> Judge:
        def field(name, kind):
            value = data.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise JudgeError(f"{source}: field {name!r} is missing or not a {kind.__name__}")
            return value

        if data.get("format") != JUDGE_FORMAT:
            raise JudgeError(
                f"{source}: field 'format' must be {JUDGE_FORMAT!r}, got {data.get('format')!r}"
            )
        layer, width = field("layer", int), field("width", int)
        names = field("scalars", list)
        unknown = [n for n in names if n not in SCALARS]
        if unknown:
            raise JudgeError(
                f"{source}: field 'scalars': features this version does not compute: "
                f"{', '.join(map(str, unknown))}"
            )
        order = [SCALARS.index(n) for n in names]
        arrays = {}
        for key in ("scalar_mean", "scalar_scale", "scalar_coef"):
            value = field(key, list)
            if len(value) != len(names) or not all(
                isinstance(x, (int, float)) and math.isfinite(x) for x in value
            ):
                raise JudgeError(f"{source}: field {key!r} must be {len(names)} finite numbers")
            full = np.zeros(len(SCALARS)) if key != "scalar_scale" else np.ones(len(SCALARS))
            full[order] = value
            arrays[key] = full
        if np.any(arrays["scalar_scale"] <= 0):
            raise JudgeError(f"{source}: field 'scalar_scale' must be positive")
        vectors = field("vector_coef", dict)
        for name, value in vectors.items():
            if name not in VECTORS:
                raise JudgeError(f"{source}: field 'vector_coef': unknown block {name!r}")
            if not isinstance(value, list) or len(value) != width:
                raise JudgeError(
                    f"{source}: field 'vector_coef.{name}' must be {width} numbers (the width)"
                )
        calibration = field("calibration", dict)
        try:
            a, b = float(calibration["a"]), float(calibration["b"])
        except (KeyError, TypeError, ValueError) as exc:
            raise JudgeError(f"{source}: field 'calibration' needs numbers 'a' and 'b'") from exc
        intercept = data.get("intercept")
        if not isinstance(intercept, (int, float)) or isinstance(intercept, bool):
            raise JudgeError(f"{source}: field 'intercept' must be a number")
        known = {
            "layer",
            "width",
            "scalars",
            "scalar_mean",
            "scalar_scale",
            "scalar_coef",
            "vector_coef",
            "intercept",
            "calibration",
        }
        return cls(
            layer=layer,
            width=width,
            scalar_mean=arrays["scalar_mean"],
            scalar_scale=arrays["scalar_scale"],
            scalar_coef=arrays["scalar_coef"],
            vector_coef={k: np.asarray(v, dtype=np.float64) for k, v in sorted(vectors.items())},
            intercept=float(intercept),
            calibration=(a, b),
            meta={k: v for k, v in data.items() if k not in known},
        )


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
