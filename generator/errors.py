"""Exceptions of the generator. Every one of them is a problem the user can fix (a setting that
does not fit, an input that cannot be read, a run folder that refuses, a resource that is
missing); callers print the message, no traceback. The command line and the Python API translate
them, each in one place."""

from __future__ import annotations

from collections.abc import Callable


class GeneratorError(Exception):
    """Base class: a problem the user can fix; the message says what and where."""


class ConfigError(GeneratorError, ValueError):
    """Settings that cannot be used together or have no meaning (an unknown preset, a value out
    of range, an LLM pipeline without a model)."""


class WorkersError(ConfigError):
    """Worker processes asked of a pipeline that runs on one process (an LLM's). The message
    names two settings, so `worded` spells them as the caller knows them (Python names, or
    flags on the command line)."""

    def __init__(self, pipeline: str):
        self.pipeline = pipeline
        super().__init__(self.worded(str))

    def worded(self, name: Callable[[str], str]) -> str:
        return (
            f"{name('workers')} applies to the wordnet and negation pipelines; pipeline "
            f"{self.pipeline} has {name('llm_concurrency')} instead"
        )


class InputSourceError(GeneratorError):
    """The input cannot be found or read, or a record in it is malformed (`line`: where, when
    the input is a file)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


class MissingInputError(InputSourceError):
    """The input names a local file that does not exist."""

    def __init__(self, source: str):
        super().__init__(f"no such file: {source}")
        self.source = source


class RunFolderError(GeneratorError):
    """The output folder refuses the run (another run's outputs, a busy or damaged folder)."""


class ResourceError(GeneratorError):
    """A resource the pipeline needs (a model, a checker, word vectors, WordNet) cannot be
    loaded."""


class RunStoppedError(GeneratorError):
    """The run stopped part-way (an LLM server gave up, a worker process died); what was written
    before stays, and the same run resumes from there."""
