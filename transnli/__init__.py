"""transnli: adversarial NLI test sets by antonym replacement, and transitive self-consistency
evaluation of NLI models without gold labels.

The distribution installs this one import package; the repository's top-level folders map into it:
``transnli.generator`` (generator/), ``transnli.evaluator`` (evaluator/) and ``transnli.resources``
(resources/).
"""

from __future__ import annotations

from transnli.common.versions import dist_version

# "0+unknown" when running from a checkout that is not installed
__version__ = dist_version("transnli") or "0+unknown"

# The Python API (transnli/api.py) loads on first use, so that `import transnli` stays cheap.
_API = ("generate", "evaluate", "GenerationResult", "Evaluation", "TransnliError")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from transnli import api

        return getattr(api, name)
    raise AttributeError(f"module 'transnli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
