"""Reading triples for evaluation: the generator's records, slimmed to what the evaluator uses.

Texts are interned, so a premise shared by many triples is held once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from transnli.generator.record import RecordError
from transnli.generator.tables import TableError, read_any

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


def load_triples(paths: Iterable[str | Path]) -> list[Triple]:
    """All triples of the given files; an empty selection is an error."""
    paths = list(paths)
    try:
        triples = list(iter_triples(paths))
    except (RecordError, TableError) as e:
        raise EvaluatorError(str(e)) from e
    except UnicodeDecodeError as e:
        raise EvaluatorError(f"a triples file is not UTF-8 text: {e}") from e
    if not triples:
        raise EvaluatorError(f"no triples in {', '.join(str(p) for p in paths)}")
    return triples
