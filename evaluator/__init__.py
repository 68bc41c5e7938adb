"""transnli evaluator: labels triples with NLI models and measures transitive consistency.

Entry point for other code: ``evaluate_triples(triple_paths, model_specs, out_dir, settings)``
with an ``EvaluationSettings`` (see transnli.evaluator.evaluate and transnli.evaluator.settings);
imported lazily so that ``import transnli.evaluator`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EvaluationSettings", "evaluate_triples"]


def __getattr__(name: str) -> Any:
    if name == "evaluate_triples":
        from .evaluate import evaluate_triples

        return evaluate_triples
    if name == "EvaluationSettings":
        from .settings import EvaluationSettings

        return EvaluationSettings
    raise AttributeError(f"module 'evaluator' has no attribute {name!r}")
