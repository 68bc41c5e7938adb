"""The NLI backend interface and the registry of backends by spec prefix.

A backend labels a batch of (premise, hypothesis) pairs. A model spec names one:
``hf:ID_OR_PATH`` (a bare id or path also means hf), ``precomputed:PATH``, and whatever else is
registered. Adding a backend is one line::

    register_backend("llm", "transnli.evaluator.backends.llm:LLMBackend.from_spec")

The target (a callable, or "module:attribute" imported on first use so that registering costs
nothing) is called as ``target(argument, options)`` and returns an `NLIBackend`.
"""

from __future__ import annotations

import importlib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BackendError
from ..labels import LABELS

Pair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Prediction:
    """One model decision: a canonical label and, when the backend has them, the probabilities
    of the three labels (keys entailment, neutral, contradiction)."""

    label: str
    probs: Mapping[str, float] | None = None

    def to_dict(self, ndigits: int | None = None) -> dict[str, Any]:
        probs = None
        if self.probs is not None:
            probs = {
                k: (round(float(self.probs[k]), ndigits) if ndigits else float(self.probs[k]))
                for k in LABELS
            }
        return {"label": self.label, "probs": probs}


@dataclass(frozen=True)
class BackendOptions:
    """Settings shared by backends; each backend reads the ones it understands.

    `hash_file` computes the sha256 of a file (the cache supplies a memoised one); `extra` holds
    settings of backends added later (an LLM judge's temperature, say).
    """

    batch_size: int = 32
    batch_auto: bool = False  # --batch-size auto: the hf backend picks (batch_size is then 32)
    batch_tokens: int | None = None  # at most this many padded tokens per batch (hf)
    compile: bool = False  # torch.compile the model (hf)
    device: str = "auto"
    dtype: str = "auto"
    max_length: int | None = None
    label_map: str | None = None
    threads: int | None = None
    # hub revision (branch, tag or commit) and whether to run a checkpoint's own code: per-model
    # options (`hf:ID?revision=...&trust_remote_code=1`), see evaluator/modelspec.py
    revision: str | None = None
    trust_remote_code: bool = False
    hash_file: Callable[[Path], str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class NLIBackend(ABC):
    """Labels sentence pairs. Subclasses implement `predict`; those that can schedule work better
    (sort by length, say) override `predict_batches` too."""

    #: the spec the user gave (shown in reports)
    spec: str = ""
    #: how many pairs `predict_batches` hands to `predict` at a time
    batch_size: int = 32
    #: False for backends whose labels are already stored (a file): nothing to gain from the cache
    cacheable: bool = True

    @property
    @abstractmethod
    def identity(self) -> str:
        """A string that changes whenever the labels could change (model name plus revision or
        a hash of the weights, and any setting that changes outputs). Keys the label cache."""

    @abstractmethod
    def predict(self, pairs: Sequence[Pair]) -> list[Prediction]:
        """One `Prediction` per pair, in input order."""

    def predict_batches(
        self, pairs: Sequence[Pair]
    ) -> Iterator[tuple[list[int], list[Prediction]]]:
        """Label `pairs` batch by batch, yielding (indices into `pairs`, predictions) as each batch
        completes, so that callers can store results and show progress as they go."""
        size = max(1, int(self.batch_size))
        for start in range(0, len(pairs), size):
            idx = list(range(start, min(start + size, len(pairs))))
            yield idx, self.predict([pairs[i] for i in idx])

    def cost_note(self, n_triples: int | None) -> str | None:
        """A line said before labelling where each pair costs much (an LLM writing a reply), so
        that a long run is expected; None for a model whose labels are cheap."""
        return None

    def check_available(self, pairs: Sequence[Pair]) -> None:  # noqa: B027 - optional hook
        """Raise before any work if some pairs can never be labelled (e.g. absent from a file)."""

    def describe(self) -> dict[str, Any]:
        """Provenance for summary.json: what was used, without anything that varies per run."""
        return {"spec": self.spec, "identity": self.identity}

    def unknown_token_share(self, sentences: Sequence[str]) -> float | None:
        """The share of the tokens of `sentences` that the model's tokenizer maps to its unknown
        token; None for a backend without a tokenizer (or one without an unknown token)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release memory (models are evaluated one after another)."""


def collect_batches(backend: NLIBackend, pairs: Sequence[Pair]) -> list[Prediction]:
    """`predict` for backends whose real work is in `predict_batches` (which may reorder pairs,
    e.g. by length): gathers its batches back into input order."""
    out: list[Prediction | None] = [None] * len(pairs)
    for idx, preds in backend.predict_batches(pairs):
        for i, p in zip(idx, preds, strict=True):
            out[i] = p
    return out  # type: ignore[return-value]


BackendFactory = Callable[[str, BackendOptions], NLIBackend]
_REGISTRY: dict[str, BackendFactory | str] = {}
_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9_\-]*):(.*)$", re.DOTALL)
DEFAULT_PREFIX = "hf"


def register_backend(prefix: str, factory: BackendFactory | str) -> None:
    """Make ``prefix:ARG`` specs create backends with `factory` (a callable or "module:attr")."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_\-]*", prefix):
        raise ValueError(f"invalid backend prefix {prefix!r}")
    _REGISTRY[prefix.lower()] = factory


def registered_prefixes() -> list[str]:
    return sorted(_REGISTRY)


def _resolve(factory: BackendFactory | str) -> BackendFactory:
    if callable(factory):
        return factory
    module_name, _, attr_path = factory.partition(":")
    obj: Any = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        obj = getattr(obj, attr)
    return obj


def split_spec(spec: str) -> tuple[str, str]:
    """("hf", "roberta-large-mnli") for "hf:roberta-large-mnli" and for the bare id/path."""
    if not isinstance(spec, str) or not spec.strip():
        raise BackendError("empty model spec")
    spec = spec.strip()
    m = _PREFIX.match(spec)
    if m and not (len(m.group(1)) == 1 and Path(spec).exists()):  # C:\... on Windows
        prefix, arg = m.group(1).lower(), m.group(2)
        if prefix in _REGISTRY:
            if not arg.strip():
                raise BackendError(f"model spec {spec!r}: nothing after '{prefix}:'")
            return prefix, arg.strip()
        if not Path(spec).exists():
            raise BackendError(
                f"model spec {spec!r}: unknown backend '{prefix}' "
                f"(known: {', '.join(registered_prefixes())}; a bare id or path means hf)"
            )
    return DEFAULT_PREFIX, spec


def create_backend(spec: str, options: BackendOptions | None = None) -> NLIBackend:
    """Build the backend a spec names."""
    prefix, arg = split_spec(spec)
    factory = _resolve(_REGISTRY[prefix])
    backend = factory(arg, options or BackendOptions())
    backend.spec = spec.strip()
    return backend
