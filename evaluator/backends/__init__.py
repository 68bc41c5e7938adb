"""NLI backends: the interface, the registry, and the built-in backends (registered lazily, so
importing this package does not import torch)."""

from .base import (
    BackendFactory,
    BackendOptions,
    NLIBackend,
    Pair,
    Prediction,
    create_backend,
    register_backend,
    registered_prefixes,
    split_spec,
)

register_backend("hf", "transnli.evaluator.backends.hf:HFBackend.from_spec")
register_backend(
    "precomputed", "transnli.evaluator.backends.precomputed:PrecomputedBackend.from_spec"
)
register_backend("llm", "transnli.evaluator.backends.llm:LLMJudgeBackend.from_spec")

__all__ = [
    "BackendFactory",
    "BackendOptions",
    "NLIBackend",
    "Pair",
    "Prediction",
    "create_backend",
    "register_backend",
    "registered_prefixes",
    "split_spec",
]
