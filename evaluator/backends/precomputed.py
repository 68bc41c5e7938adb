"""Labels read from a file: any model (an API, another framework, a person) can be judged.

The file is JSONL, one labelled pair a line::

    {"premise": A, "hypothesis": B, "label": "entailment", "probs": {"entailment": 0.9, ...}}

(A, B) is the pair in the order the model saw it; `probs` is optional; labels are normalised by
name (ENTAILMENT, entail, e ...). `transnli pairs` writes the pairs a run needs in this shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transnli.common.digest import sha256_file
from transnli.generator.jsonl import jsonl_objects

from ..errors import BackendError, LabelError, MissingPairsError
from ..labels import LABELS, normalize_label, parse_label
from .base import BackendOptions, NLIBackend, Pair, Prediction


def _read_probs(value: Any, where: str) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BackendError(
            f"{where}: field 'probs' must be an object such as "
            '{"entailment": 0.9, "neutral": 0.08, "contradiction": 0.02}'
        )
    probs: dict[str, float] = {}
    for key, p in value.items():
        label = normalize_label(key)
        if label is None:
            raise BackendError(f"{where}: field 'probs' has an unknown label {key!r}")
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise BackendError(f"{where}: field 'probs' value for {key!r} is not a number")
        probs[label] = float(p)
    if set(probs) != set(LABELS):
        raise BackendError(
            f"{where}: field 'probs' must give entailment, neutral and contradiction"
        )
    return probs


def read_labelled_pairs(path: str | Path) -> dict[Pair, Prediction]:
    """Read a labelled-pairs file into {(premise, hypothesis): Prediction}.

    A pair given twice with different labels is an error; blank lines are skipped.
    """
    path = Path(path)
    out: dict[Pair, Prediction] = {}
    if not path.is_file():
        raise BackendError(f"precomputed labels: no such file {path}")
    try:
        _read_into(path, out)
    except UnicodeDecodeError as e:
        raise BackendError(f"precomputed labels: {path} is not UTF-8 text ({e.reason})") from e
    return out


def _read_into(path: Path, out: dict[Pair, Prediction]) -> None:
    first_line: dict[Pair, int] = {}
    for lineno, data in jsonl_objects(path, BackendError):
        where = f"{path}:{lineno}"
        for name in ("premise", "hypothesis"):
            if not isinstance(data.get(name), str):
                raise BackendError(f"{where}: field '{name}' missing or not a string")
        if "label" not in data:
            raise BackendError(f"{where}: field 'label' missing")
        try:
            label = parse_label(data["label"], where=f"{where}: field 'label'")
        except LabelError as e:
            raise BackendError(str(e)) from e
        pred = Prediction(label, _read_probs(data.get("probs"), where))
        pair = (data["premise"], data["hypothesis"])
        if pair in out and out[pair].label != label:
            raise BackendError(
                f"{where}: pair labelled {label!r} here but {out[pair].label!r} on line "
                f"{first_line[pair]}"
            )
        out.setdefault(pair, pred)
        first_line.setdefault(pair, lineno)


class PrecomputedBackend(NLIBackend):
    """Serves labels from a labelled-pairs file."""

    cacheable = False  # the file already is the store

    def __init__(self, path: str | Path, labels: dict[Pair, Prediction], digest: str):
        self.path = Path(path)
        self.labels = labels
        self._identity = f"precomputed|sha256:{digest}"
        self.batch_size = 4096

    @classmethod
    def from_spec(cls, arg: str, options: BackendOptions) -> PrecomputedBackend:
        path = Path(arg).expanduser()
        if not path.is_file():
            raise BackendError(f"precomputed labels: no such file {path}")
        labels = read_labelled_pairs(path)
        digest = options.hash_file(path) if options.hash_file else sha256_file(path)
        return cls(path, labels, digest)

    @property
    def identity(self) -> str:
        return self._identity

    def check_available(self, pairs: Sequence[Pair]) -> None:
        missing = [p for p in dict.fromkeys(pairs) if p not in self.labels]
        if missing:
            raise MissingPairsError(f"precomputed labels {self.path}", missing, len(set(pairs)))

    def predict(self, pairs: Sequence[Pair]) -> list[Prediction]:
        self.check_available(pairs)
        return [self.labels[p] for p in pairs]

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "backend": "precomputed",
            "path": str(self.path),
            "pairs_in_file": len(self.labels),
        }
