"""Reading triples for evaluation: the generator's records, slimmed to what the evaluator uses.

Texts are interned, so a premise shared by many triples is held once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from transnli.generator.record import RecordError
from transnli.generator.tables import TableError, read_any, triples_kind

from .errors import EvaluatorError


@dataclass(frozen=True, slots=True)
class Triple:
    id: str
    dataset: str
    premise: str
    hypothesis: str
    modified: str  # H'
    gold_label: str | None = None
    source: str = ""  # the triples file it came from
    source_id: str = ""  # the source pair's id: triples sharing it form a family (family_eval)
    pipeline: str = ""  # "negation" marks H¬ rather than an H'


def iter_triples(paths: Iterable[str | Path]) -> Iterator[Triple]:
    """Stream slim triples from triples files (JSONL, Parquet, or saved Hugging Face dataset
    folders), in file then row order."""
    seen: dict[str, str] = {}

    def intern(s: str) -> str:
        if len(seen) >= _INTERN_LIMIT:  # a long run read in windows: keep the table bounded
            seen.clear()
        return seen.setdefault(s, s)

    for path in paths:
        path = Path(path)
        if not path.exists():
            raise EvaluatorError(f"triples file {path} does not exist")
        for rec in read_any(path):
            yield Triple(
                id=rec.id,
                dataset=intern(rec.dataset),
                premise=intern(rec.premise),
                hypothesis=intern(rec.hypothesis),
                modified=intern(rec.modified_hypothesis),
                gold_label=rec.gold_label,
                source=intern(str(path)),
                source_id=intern(rec.source_id),
                pipeline=intern(rec.pipeline),
            )


_INTERN_LIMIT = 1 << 20


def load_triples(paths: Iterable[str | Path]) -> list[Triple]:
    """All triples of the given files; an empty selection is an error."""
    paths = list(paths)
    triples = list(_checked(iter_triples(paths)))
    if not triples:
        raise EvaluatorError(f"no triples in {', '.join(str(p) for p in paths)}")
    return triples


def _checked(triples: Iterator[Triple]) -> Iterator[Triple]:
    """Reading errors as EvaluatorError (they name the file, line and field)."""
    try:
        yield from triples
    except (RecordError, TableError) as e:
        raise EvaluatorError(str(e)) from e
    except UnicodeDecodeError as e:
        raise EvaluatorError(f"a triples file is not UTF-8 text: {e}") from e


class TripleSource:
    """The triples of an evaluation, handed out in windows: `windows(None)` gives them all at once
    (and holds them), `windows(n)` reads the files again on each call and gives n at a time, so
    that a run of any size holds one window."""

    def __init__(self, paths: Sequence[Path], triples: Sequence[Triple] | None = None, limit: int | None = None):
        self.paths = list(paths)
        self.limit = limit
        self._held = None if triples is None else list(triples)[:limit]
        self._opened: tuple[int, Iterator[list[Triple]]] | None = None

    def all(self) -> list[Triple]:
        if self._held is None:
            self._held = load_triples(self.paths)[:self.limit]
        return self._held

    def windows(self, size: int | None) -> Iterator[list[Triple]]:
        if size is None or self._held is not None:
            held = self.all()
            step = size or len(held)
            for start in range(0, len(held), step):
                yield held[start:start + step]
            return
        if self._opened is not None and self._opened[0] == size:
            _, reading = self._opened
            self._opened = None
        else:
            reading = self._read(size)
        yield from reading

    def open(self, size: int | None) -> None:
        """Read the first window now, so that an error in it (or an empty selection) is reported
        before any model loads; the next `windows(size)` goes on from there. An error further on
        stops the run when its window is reached."""
        if size is None or self._held is not None:
            self.all()
            return
        reading = self._read(size)
        first = next(reading)
        self._opened = (size, itertools.chain([first], reading))

    def _read(self, size: int) -> Iterator[list[Triple]]:
        stream = itertools.islice(_checked(iter_triples(self.paths)), self.limit)
        empty = True
        while window := list(itertools.islice(stream, size)):
            empty = False
            yield window
        if empty:
            raise EvaluatorError(f"no triples in {', '.join(str(p) for p in self.paths)}")

    def count_hint(self) -> int | None:
        """How many triples there are, cheaply where it can be known (held, or JSONL lines) for a
        progress bar's total; None where it cannot."""
        if self._held is not None:
            return len(self._held)
        total = 0
        for path in self.paths:
            if triples_kind(path) != "jsonl":
                return None
            with open(path, "rb") as fh:
                total += sum(1 for line in fh if line.strip())
        return total if self.limit is None else min(total, self.limit)
