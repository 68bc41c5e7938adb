"""The judgements log, RUN/review.jsonl: one JSON object a line, appended and fsynced, never
rewritten.

A judgement has the record format of the hand-judged sets in benchmarks/data/*_judged
(quality_dev.jsonl): item, source_id, hypothesis, word, word_index, pos, antonym,
modified_hypothesis, coherent, meaning_changed, good, error_type, reason, annotator; so
benchmarks/bench_quality.py and the quality model's training read it as they read those sets.
It adds `index` (the triple's record number in triples.jsonl, from 0) and `sample` (the order the
item was drawn in: random, all or uncertain). Two more kinds of line keep the log append-only:
- a skip: the same fields with good null and `skipped: true`;
- an undo: a copy of the line it takes back with `undone: true`.
The standing verdict of (triple, annotator) is the last line about them, and an undo removes it.

Two tabs, or two servers on one run, append under an exclusive lock on the log file after reading
what the others appended since, so no line is lost or torn and a triple is not judged twice.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transnli.review.errors import ReviewError

LOG = "review.jsonl"

# QUALITY.md's error types, in its order; the page's number keys follow this order.
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


def judgement_record(
    triple: dict[str, Any], index: int, verdict: Verdict, annotator: str | None, sample: str
) -> dict[str, Any]:
    """One log line: the triple's sentence fields and the verdict, in the *_judged format.
    coherent / meaning_changed follow from QUALITY.md's definitions where the verdict settles them
    (good: both true; no_change: coherent, meaning unchanged; another error type: incoherent, the
    meaning question left open as null)."""
    good = {"good": True, "bad": False, "skip": None}[verdict.kind]
    if verdict.kind == "good":
        coherent, changed = True, True
    elif verdict.error_type == "no_change":
        coherent, changed = True, False
    elif verdict.kind == "bad":
        coherent, changed = False, None
    else:
        coherent = changed = None
    rec: dict[str, Any] = {"item": triple.get("id", ""), "index": index}
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
        sample=sample,
    )
    if verdict.kind == "skip":
        rec["skipped"] = True
    return rec


def parse_line(line: bytes, path: Path, lineno: int) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise ReviewError(f"{path}:{lineno}: not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise ReviewError(f"{path}:{lineno}: expected a JSON object")
    for name, kind in (("index", int), ("item", str)):
        if not isinstance(data.get(name), kind):
            raise ReviewError(f"{path}:{lineno}: field '{name}' missing or not {kind.__name__}")
    return data


@dataclass
class Standing:
    """The standing verdicts, from the log's lines in order."""

    current: dict[tuple[int, str | None], dict[str, Any]] = field(default_factory=dict)
    # Per annotator, the keys they acted on, most recent last (what an undo takes back).
    history: dict[str | None, list[int]] = field(default_factory=dict)

    def apply(self, rec: dict[str, Any]) -> None:
        key = (rec["index"], rec.get("annotator"))
        if rec.get("undone"):
            self.current.pop(key, None)
            return
        self.current[key] = rec
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
        recs = [r for r in self.current.values() if r.get("good") is not None]
        return sorted(recs, key=lambda r: (r["index"], r.get("annotator") or ""))


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
                    self.standing.apply(parse_line(line, self.path, self._lines))

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
        self.standing.apply(rec)


def read_judgements(path: str | Path) -> list[dict[str, Any]]:
    """The standing judgements of a review log (skips and undone lines resolved away)."""
    path = Path(path)
    if not path.is_file():
        raise ReviewError(f"{path} does not exist; judge some triples with `transnli review` first")
    return JudgementLog(path).standing.judgements()
