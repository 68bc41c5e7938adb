"""Reading triples for evaluation: the generator's records, slimmed to what the evaluator uses.

Texts are interned, so a premise shared by many triples is held once.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from transnli.generator.record import RecordError, TripleRecord
from transnli.generator.run_folder import FINISHED, OUTPUTS, PROGRESS
from transnli.generator.triples_reader import TableError, read_any

from .errors import EvaluatorError

log = logging.getLogger("transnli")


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
    # The judge's probability that H' is good (TripleRecord.p_good); None where none was recorded.
    p_good: float | None = None

    @classmethod
    def of(cls, rec: TripleRecord, source: str, intern: Callable[[str], str] = str) -> Triple:
        """The slim triple of a generator record (the one place a record's fields are taken);
        `intern` holds each text once."""
        return cls(
            id=rec.id,
            dataset=intern(rec.dataset),
            premise=intern(rec.premise),
            hypothesis=intern(rec.hypothesis),
            modified=intern(rec.modified_hypothesis),
            gold_label=rec.gold_label,
            source=intern(source),
            source_id=intern(rec.source_id),
            pipeline=intern(rec.pipeline),
            p_good=rec.p_good,
        )


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
            yield Triple.of(rec, str(path), intern)


_INTERN_LIMIT = 1 << 16  # strings: a premise shared by nearby triples is held once


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
    that a run of any size holds one window (a run smaller than one window is held after the
    first read)."""

    def __init__(
        self,
        paths: Sequence[Path],
        triples: Sequence[Triple] | None = None,
        limit: int | None = None,
    ):
        self.paths = list(paths)
        self.limit = limit
        self._held = None if triples is None else list(triples)[:limit]

    def all(self) -> list[Triple]:
        if self._held is None:
            self._held = load_triples(self.paths)[: self.limit]
        return self._held

    def head(self, n: int) -> list[Triple]:
        """The run's first `n` triples (read again from the files when the run is not held)."""
        if self._held is not None:
            return self._held[:n]
        limit = n if self.limit is None else min(n, self.limit)
        return list(itertools.islice(_checked(iter_triples(self.paths)), limit))

    def windows(self, size: int | None) -> Iterator[list[Triple]]:
        if size is None or self._held is not None:
            held = self.all()
            step = size or len(held)
            for start in range(0, len(held), step):
                yield held[start : start + step]
            return
        yield from self._read(size)

    def _read(self, size: int) -> Iterator[list[Triple]]:
        stream = itertools.islice(_checked(iter_triples(self.paths)), self.limit)
        first = list(itertools.islice(stream, size))
        if not first:
            raise EvaluatorError(f"no triples in {', '.join(str(p) for p in self.paths)}")
        if len(first) < size:  # the whole run fits in one window: hold it rather than read it again
            self._held = first
        yield first
        while window := list(itertools.islice(stream, size)):
            yield window


def check_triples_files(paths: Sequence[Path], hash_file: Callable[[Path], str]) -> None:
    """The same file given twice (by path or by content) would count its triples twice: an error."""
    by_path: dict[Path, Path] = {}
    by_digest: dict[str, Path] = {}
    for path in paths:
        resolved = path.resolve()
        if resolved in by_path:
            raise EvaluatorError(
                f"triples file {path} is given twice (also as {by_path[resolved]}); "
                "give each file once"
            )
        by_path[resolved] = path
        digest = hash_file(path)
        if digest in by_digest:
            raise EvaluatorError(
                f"triples files {by_digest[digest]} and {path} have the same content; "
                "give each file once (its triples would be counted twice)"
            )
        by_digest[digest] = path


def unfinished_run(path: Path) -> Path | None:
    """The generation run folder that `path` is an output of, when that run has not finished: it
    holds the run's checkpoint and no finished marker (a `transnli generate` still appending to
    the file, or one that was stopped). None for a finished run or a file of no run."""
    folder = path.parent
    if path.name in OUTPUTS and (folder / PROGRESS).exists() and not (folder / FINISHED).exists():
        return folder
    return None


def check_runs_finished(paths: Sequence[Path], allow_unfinished: bool) -> None:
    """Refuse a triples file whose generation run has not finished (its triples so far are not
    the run's); with `allow_unfinished`, say so on stderr and go on."""
    for path in paths:
        run = unfinished_run(path)
        if run is None:
            continue
        what = (
            f"{path} belongs to a generation run that has not finished ({run} holds {PROGRESS} "
            f"and no {FINISHED}: `transnli generate` is still writing it, or was stopped)"
        )
        if allow_unfinished:
            log.warning("%s; evaluating only the triples written so far (--allow-unfinished)", what)
            continue
        raise EvaluatorError(
            f"{what}; evaluating it now would judge only the triples written so far. Let the run "
            "finish (run the same `transnli generate` command again to resume a stopped one), "
            "or pass --allow-unfinished to evaluate what is there"
        )
