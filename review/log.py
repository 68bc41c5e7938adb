"""The judgements log, RUN/review.jsonl: one JSON object a line, appended and fsynced, never
rewritten.

A judgement has the record format of the hand-judged sets in benchmarks/data/*_judged
(quality_dev.jsonl): item, source_id, hypothesis, word, word_index, pos, antonym,
modified_hypothesis, coherent, meaning_changed, good, error_type, reason, annotator; so
benchmarks/bench_quality.py and the quality model's training read it as they read those sets.
It adds `index` (the triple's record number in triples.jsonl, from 0), `digest` (the sha256 of
the triple's premise, hypothesis and modified hypothesis: a judgement counts only while the
triple at `index` still has it, transnli.review.integrity), the order the item was drawn in
(`sample`: random, all or uncertain; `sample_seed`, `sample_size` and `sample_of`, the number of
triples it was drawn from, so the sample can be drawn again and checked) and `time` (UTC, ISO
8601). Two more kinds of line keep the log append-only:
- a skip: the same fields with good null and `skipped: true`;
- an undo: a copy of the line it takes back with `undone: true`.
The standing verdict of (triple, annotator) is the last line about them, and an undo removes it.

Two tabs, or two servers on one run, append under an exclusive lock on the log file after reading
what the others appended since, so no line is lost or torn and a triple is not judged twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from transnli.generator.run_folder import REVIEW_LOG
from transnli.review.errors import ReviewError

LOG = REVIEW_LOG
# An annotator's name: a short string of letters, digits and `_ .@-`, so that it is the same
# thing in a URL, a log line, a terminal and a card (it is escaped there all the same: a log
# line can be edited by hand).
ANNOTATOR = re.compile(r"\w[\w .@-]{0,63}")
MAX_REASON = 2000
# The judging guideline the page and the card link: docs/judging.md of the source tree the package
# runs from (the editable install scripts/setup.sh makes), or the copy a wheel ships as package
# data (pyproject.toml: transnli.docs, installed as transnli/docs/ beside transnli/review/).
GUIDELINE = Path(__file__).resolve().parents[1] / "docs" / "judging.md"

# The guideline's error types (docs/judging.md), in its order; the page's number keys follow it.
ERROR_TYPES: dict[str, str] = {
    "invalid_substitution": "a real opposite, but the result is incoherent",
    "grammar": "the swap broke agreement, licensing, argument structure or morphology",
    "polysemy": "the word was used in another sense than the one the antonym opposes",
    "fixed_phrase": "the word sits in an idiom, particle verb or fixed expression",
    "auxiliary": "a copula, auxiliary or modal was replaced",
    "coreference": "gender or number now clashes with a pronoun or name elsewhere",
    "no_change": "coherent, but the meaning is not changed",
    "other": "say what in the reason",
}
VERDICTS = ("good", "bad", "skip")
# Fields copied from the triple into a judgement (the *_judged sets' sentence fields).
TRIPLE_FIELDS = ("source_id", "hypothesis", "word", "word_index", "pos", "antonym")


@dataclass(frozen=True)
class Verdict:
    """What the annotator decided about one triple."""

    kind: str  # good, bad or skip
    error_type: str | None = None
    reason: str = ""

    def check(self) -> Verdict:
        if self.kind not in VERDICTS:
            raise ReviewError(f"verdict {self.kind!r} is not one of {', '.join(VERDICTS)}")
        if self.kind == "bad" and self.error_type not in ERROR_TYPES:
            raise ReviewError(
                f"a bad verdict needs an error type, one of {', '.join(ERROR_TYPES)}; "
                f"got {self.error_type!r}"
            )
        if self.kind != "bad" and self.error_type is not None:
            raise ReviewError(f"only a bad verdict has an error type (got {self.error_type!r})")
        return self


def check_annotator(annotator: Any) -> str | None:
    """The annotator's name as given (None: unnamed); refuses anything but a short name."""
    if annotator is None:
        return None
    if not isinstance(annotator, str):
        raise ReviewError(f"annotator must be a string (got {type(annotator).__name__})")
    name = annotator.strip()
    if not name:
        return None
    if not ANNOTATOR.fullmatch(name):
        raise ReviewError(
            f"annotator {name[:80]!r} is not a name of up to 64 letters, digits and _ .@- "
            "(starting with a letter or digit)"
        )
    return name


def triple_digest(triple: dict[str, Any]) -> str:
    """What a judgement is a judgement of: the sha256 of the triple's three sentences."""
    sentences = [triple.get(k) for k in ("premise", "hypothesis", "modified_hypothesis")]
    return hashlib.sha256(json.dumps(sentences, ensure_ascii=False).encode("utf-8")).hexdigest()


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class SampleSpec:
    """The order a judgement was made in, as the log records it: its kind, and for the random
    sample its seed, its size and the number of triples it was drawn from."""

    kind: str
    seed: int
    size: int
    of: int

    def fields(self) -> dict[str, Any]:
        return {
            "sample": self.kind,
            "sample_seed": self.seed,
            "sample_size": self.size,
            "sample_of": self.of,
        }


def judgement_record(
    triple: dict[str, Any],
    index: int,
    verdict: Verdict,
    annotator: str | None,
    sample: SampleSpec,
    time: str | None = None,
) -> dict[str, Any]:
    """One log line: the triple's sentence fields and the verdict, in the *_judged format.
    coherent / meaning_changed follow from the guideline's definitions (docs/judging.md) where
    the verdict settles them (good: both true; no_change: coherent, meaning unchanged; another
    error type: incoherent, the meaning question left open as null)."""
    good = {"good": True, "bad": False, "skip": None}[verdict.kind]
    if verdict.kind == "good":
        coherent, changed = True, True
    elif verdict.error_type == "no_change":
        coherent, changed = True, False
    elif verdict.kind == "bad":
        coherent, changed = False, None
    else:
        coherent = changed = None
    rec: dict[str, Any] = {
        "item": triple.get("id", ""),
        "index": index,
        "digest": triple_digest(triple),
    }
    rec.update({k: triple.get(k) for k in TRIPLE_FIELDS[:2]})
    rec.update({k: triple.get(k) for k in TRIPLE_FIELDS[2:]})
    rec["modified_hypothesis"] = triple.get("modified_hypothesis")
    rec.update(
        coherent=coherent,
        meaning_changed=changed,
        good=good,
        error_type=verdict.error_type,
        reason=verdict.reason.strip(),
        annotator=annotator or None,
        **sample.fields(),
        time=time or utc_now(),
    )
    if verdict.kind == "skip":
        rec["skipped"] = True
    return rec


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# The fields a line may hold and the values each may take; anything else names the line.
FIELD_RULES: dict[str, tuple[str, Any]] = {
    "index": ("an integer >= 0", lambda v: type(v) is int and v >= 0),
    "item": ("a string", lambda v: isinstance(v, str)),
    "good": ("true, false or null", lambda v: v is None or isinstance(v, bool)),
    "annotator": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "error_type": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "digest": ("a string", lambda v: isinstance(v, str)),
    "sample": ("a string", lambda v: isinstance(v, str)),
    "sample_seed": ("an integer", lambda v: type(v) is int),
    "sample_size": ("an integer >= 1", lambda v: type(v) is int and v >= 1),
    "sample_of": ("an integer >= 0", lambda v: type(v) is int and v >= 0),
    "undone": ("true or false", lambda v: isinstance(v, bool)),
    "skipped": ("true or false", lambda v: isinstance(v, bool)),
}
REQUIRED = ("index", "item", "good")


def parse_line(line: bytes, path: Path, lineno: int) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise ReviewError(f"{path}:{lineno}: not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise ReviewError(f"{path}:{lineno}: expected a JSON object")
    for name, (wanted, ok) in FIELD_RULES.items():
        if name not in data:
            if name in REQUIRED:
                raise ReviewError(f"{path}:{lineno}: field '{name}' is missing")
            continue
        if not ok(data[name]):
            raise ReviewError(
                f"{path}:{lineno}: field '{name}' must be {wanted} (got {_kind(data[name])} "
                f"{json.dumps(data[name], ensure_ascii=False)[:60]})"
            )
    return data


@dataclass
class Standing:
    """The standing verdicts, from the log's lines in order."""

    current: dict[tuple[int, str | None], dict[str, Any]] = field(default_factory=dict)
    # The log's line number of each standing line (what a report names).
    lineno: dict[tuple[int, str | None], int] = field(default_factory=dict)
    # Per annotator, the keys they acted on, most recent last (what an undo takes back).
    history: dict[str | None, list[int]] = field(default_factory=dict)

    def apply(self, rec: dict[str, Any], lineno: int = 0) -> None:
        key = (rec["index"], rec.get("annotator"))
        if rec.get("undone"):
            self.current.pop(key, None)
            self.lineno.pop(key, None)
            return
        self.current[key] = rec
        self.lineno[key] = lineno
        self.history.setdefault(key[1], []).append(key[0])

    def last_standing(self, annotator: str | None) -> dict[str, Any] | None:
        """The annotator's most recent line that still stands (what undo takes back)."""
        for index in reversed(self.history.get(annotator, [])):
            rec = self.current.get((index, annotator))
            if rec is not None:
                return rec
        return None

    def judgements(self) -> list[dict[str, Any]]:
        """Standing judgements (skips left out), in index then annotator order."""
        return [rec for _, rec in self.numbered()]

    def numbered(self) -> list[tuple[int, dict[str, Any]]]:
        """(line number, judgement) of the standing judgements, skips left out, in index then
        annotator order."""
        keys = sorted(
            (k for k, r in self.current.items() if r.get("good") is not None),
            key=lambda k: (k[0], k[1] or ""),
        )
        return [(self.lineno[k], self.current[k]) for k in keys]


class JudgementLog:
    """RUN/review.jsonl: read incrementally, appended under a lock, fsynced."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.standing = Standing()
        self._read_to = 0  # bytes of the file already applied
        self._lines = 0
        self.refresh()

    def refresh(self) -> None:
        """Apply what was appended since the last read (by this or another process). A last line
        without its newline is a write cut off by a crash: it is left for the next append to cut."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            fh.seek(self._read_to)
            for line in fh:
                if not line.endswith(b"\n"):
                    break
                self._lines += 1
                self._read_to += len(line)
                if line.strip():
                    self.standing.apply(parse_line(line, self.path, self._lines), self._lines)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the log's exclusive lock, with every line appended so far applied."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                self.refresh()
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def append(self, rec: dict[str, Any]) -> None:
        """Append one line and fsync it; call inside `locked()`."""
        data = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
        with open(self.path, "r+b" if self.path.exists() else "wb") as fh:
            fh.truncate(self._read_to)  # drop a torn line a crash left after the last whole one
            fh.seek(self._read_to)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        self._read_to += len(data)
        self._lines += 1
        self.standing.apply(rec, self._lines)


def read_log(path: str | Path) -> JudgementLog:
    """A review log that must exist (skips and undone lines resolved away in its standing)."""
    path = Path(path)
    if not path.is_file():
        raise ReviewError(f"{path} does not exist; judge some triples with `transnli review` first")
    return JudgementLog(path)


def read_judgements(path: str | Path) -> list[dict[str, Any]]:
    """The standing judgements of a review log, unchecked (transnli.review.integrity checks them
    against the run's triples)."""
    return read_log(path).standing.judgements()
