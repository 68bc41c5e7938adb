"""The triple record: the one contract between generator and evaluator.

A triples file is JSONL, one `TripleRecord` a line. The generator writes every field; the evaluator
needs only premise, hypothesis and modified_hypothesis (id, dataset, gold_label are optional), so
`read_triples` accepts sparse lines and fills the rest with defaults.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

LABELS = ("entailment", "neutral", "contradiction")


class RecordError(ValueError):
    """A malformed line in a triples file; the message names file, line and field."""

    def __init__(
        self, path: str | Path, line: int, field_name: str | None, problem: str, unit: str = "line"
    ):
        # A JSONL file's lines read path:line as editors do; a table's rows say "row N".
        where = (f"{path}:{line}" if unit == "line" else f"{path}: {unit} {line}") + (
            f": field '{field_name}'" if field_name else ""
        )
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.field, self.problem = str(path), line, field_name, problem


@dataclass
class TripleRecord:
    premise: str
    hypothesis: str
    modified_hypothesis: str
    id: str = ""
    source_id: str = ""
    dataset: str = ""
    split: str = ""
    gold_label: str | None = None
    # Which sentence of the pair was modified; "hypothesis" is the paper's setting.
    target: str = "hypothesis"
    word: str = ""
    word_index: int = -1
    char_start: int = -1
    char_end: int = -1
    pos: str = ""
    tag: str = ""
    antonym: str = ""
    # Every antonym considered, best first: [{"antonym": str, "score": float | None}, ...]
    candidates: list[dict[str, Any]] = field(default_factory=list)
    pipeline: str = "wordnet"
    # Per check name ("grammar", "acceptability", "llm_answer"): {"backend", "passed", ...}.
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Set on rejected candidates only.
    rejected_by: str | None = None
    reason: str | None = None
    # Pipeline-specific details (e.g. the LLM's raw reply); None for the WordNet pipeline.
    llm: dict[str, Any] | None = None

    @property
    def p_good(self) -> float | None:
        """The trained judge's calibrated probability that H' is good (QUALITY.md), as the
        judge check keeps it (checks.acceptability.p_good); None where no judge scored this
        triple (another acceptability check, the `fast` preset, an older run, another
        generator's file). The evaluator reads it to tell violations on doubtful triples apart."""
        return judge_probability(self.checks)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.rejected_by is None:
            d.pop("rejected_by")
            d.pop("reason")
        if self.llm is None:
            d.pop("llm")
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TripleRecord:
        known = _field_names(cls)
        return cls(**{k: v for k, v in data.items() if k in known})


@cache
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def stable_id(*parts: object) -> str:
    """A short id that depends only on the given parts (not on run order or time)."""
    h = hashlib.sha1("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return h[:16]


REQUIRED = ("premise", "hypothesis", "modified_hypothesis")
JUDGE_CHECK, JUDGE_FIELD = "acceptability", "p_good"  # where the judge keeps its probability


def judge_probability(checks: Any) -> float | None:
    """checks.acceptability.p_good of a record's `checks` (None where absent); a value that is
    no probability raises ValueError (parse_triple_dict names the line)."""
    entry = checks.get(JUDGE_CHECK) if isinstance(checks, dict) else None
    value = entry.get(JUDGE_FIELD) if isinstance(entry, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{value!r} is not a probability (a number from 0 to 1)")
    return float(value)


def parse_triple_line(line: str, path: str | Path, lineno: int) -> TripleRecord:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise RecordError(path, lineno, None, f"not valid JSON: {e.msg} (column {e.colno})") from e
    if not isinstance(data, dict):
        raise RecordError(path, lineno, None, "expected a JSON object")
    return parse_triple_dict(data, path, lineno)


def parse_triple_dict(
    data: dict[str, Any], path: str | Path, lineno: int, unit: str = "line"
) -> TripleRecord:
    """A record from one parsed line (or table row), validated like every triples input."""
    for name in REQUIRED:
        value = data.get(name)
        if not isinstance(value, str) or not value.strip():
            raise RecordError(path, lineno, name, "missing or not a non-empty string", unit)
    gold = data.get("gold_label")
    if gold is not None and gold not in LABELS:
        raise RecordError(
            path, lineno, "gold_label", f"{gold!r} is not one of {', '.join(LABELS)} or null", unit
        )
    try:
        judge_probability(data.get("checks"))
    except ValueError as e:
        raise RecordError(path, lineno, f"checks.{JUDGE_CHECK}.{JUDGE_FIELD}", str(e), unit) from e
    rec = TripleRecord.from_dict(data)
    if not rec.dataset:
        rec.dataset = Path(path).name.split(".")[0]
    if not rec.id:
        rec.id = stable_id(rec.premise, rec.hypothesis, rec.modified_hypothesis)
    return rec


def read_triples(path: str | Path) -> Iterator[TripleRecord]:
    """Stream records from a triples JSONL file; blank lines are skipped."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                yield parse_triple_line(line, path, lineno)


def write_jsonl(records: Iterable[TripleRecord], fh) -> int:
    n = 0
    for rec in records:
        fh.write(rec.to_json() + "\n")
        n += 1
    return n
