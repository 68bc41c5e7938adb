"""The language model's scores kept on disk (`ScoreCache`, SQLite), and the checked form of a
row's value (`stored_value`, `stored_numbers`)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sqlite3
import struct
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from transnli.common.lm.readings import SideStates, TokenScores

log = logging.getLogger("transnli")
#: the score cache's file, under `cache_dir/lm-scores`
SCORES_DB = "scores.sqlite3"


class ScoreCache:
    """Scores kept on disk (SQLite, `folder/SCORES_DB`), keyed by the model's identity, the token
    ids and the start: a rerun of the same sentences with the same weights computes nothing.

    Each value (a sentence's log-probabilities, or one layer's hidden states of a side) is its
    numbers as float64s and a check (the first 8 bytes of the sha256 of key and numbers), so a row
    that cannot be read back as this request's numbers (cut short, of another type, edited) is a
    miss: scored again and overwritten, with one warning a cache. A damaged database
    file is moved aside and a new one started (one warning); a cache that cannot be written (a full
    disk) stops storing and keeps serving."""

    def __init__(self, folder: Path, identity: dict[str, Any]):
        self.path = Path(folder) / SCORES_DB
        self._prefix = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[
            :16
        ]
        self.bad_rows = 0
        self._conn: sqlite3.Connection | None = None
        self._writable = True
        self._open(retry=True)

    def _open(self, retry: bool) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS scores (key BLOB PRIMARY KEY, value BLOB)")
            # per generation run (input, settings, weights): the sentences it had scored, so a
            # rerun's cost line can count them as already here (CausalLMScorer.run_sentences)
            conn.execute("CREATE TABLE IF NOT EXISTS runs (key BLOB PRIMARY KEY, sentences INT)")
            conn.execute("SELECT count(*) FROM (SELECT 1 FROM scores LIMIT 1)").fetchone()
            self._conn = conn
        except sqlite3.Error as exc:
            self._damaged(exc, retry)
        except OSError as exc:
            log.warning(
                f"the language model's score cache {self.path} cannot be opened "
                f"({exc.strerror or exc}); scores are computed without it"
            )

    def _damaged(self, exc: sqlite3.Error, retry: bool) -> None:
        """A database that cannot be read: moved aside (kept for a look) and started anew once;
        a second failure, or a lock held too long, leaves this run without the cache."""
        self.close()
        if retry and _is_damage(exc):
            aside = self.path.with_name(self.path.name + ".damaged")
            log.warning(
                f"the language model's score cache {self.path} is damaged ({exc}); moved to "
                f"{aside.name} and started anew (its scores are computed again)"
            )
            for suffix in ("", "-wal", "-shm"):
                with suppress(OSError):
                    os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
            self._open(retry=False)
            return
        log.warning(
            f"the language model's score cache {self.path} cannot be used ({exc}); scores are "
            "computed without it"
        )

    def _key(self, tokens: tuple[int, ...], start: int, *more: object) -> bytes:
        body = "|".join([self._prefix, str(start), ",".join(map(str, tokens)), *map(str, more)])
        return hashlib.sha256(body.encode()).digest()

    def _read(self, key: bytes) -> tuple[float, ...] | None:
        """The checked numbers stored under `key`; None when there are none or the row is bad
        (counted, with one warning a cache)."""
        if self._conn is None:
            return None
        try:
            row = self._conn.execute("SELECT value FROM scores WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._damaged(exc, retry=True)
            return None
        if row is None:
            return None
        numbers = stored_numbers(key, row[0])
        if numbers is None:
            self._bad_row()
        return numbers

    def _bad_row(self) -> None:
        self.bad_rows += 1
        if self.bad_rows == 1:
            log.warning(
                f"the language model's score cache {self.path} holds rows that do not read "
                "back as scores (cut short, of another type or edited); they are scored again"
            )

    def _write(self, key: bytes, numbers: Sequence[float]) -> None:
        if self._conn is None or not self._writable:
            return
        try:
            self._conn.execute(
                "INSERT OR REPLACE INTO scores VALUES (?, ?)", (key, stored_value(key, numbers))
            )
        except sqlite3.Error as exc:
            if "full" in str(exc):
                self._writable = False
                log.warning(
                    f"the language model's score cache {self.path} cannot grow: the disk is full "
                    f"({exc}); the run goes on without storing scores"
                )
            else:
                self._damaged(exc, retry=True)

    def get(self, tokens: tuple[int, ...], start: int) -> TokenScores | None:
        numbers = self._read(self._key(tokens, start))
        if numbers is None:
            return None
        if len(numbers) != len(tokens) - start or not all(x <= 0 for x in numbers):
            self._bad_row()  # checked, but not this request's log-probabilities
            return None
        return TokenScores(start, numbers)

    def put(self, tokens: tuple[int, ...], start: int, scores: TokenScores) -> None:
        self._write(self._key(tokens, start), scores.logprobs)

    def get_states(
        self, tokens: tuple[int, ...], start: int, end: int, layers: Sequence[int]
    ) -> dict[int, SideStates] | None:
        """A side's states at every one of `layers`, or None when any is missing or malformed."""
        out = {}
        for layer in layers:
            numbers = self._read(self._key(tokens, start, "states", end, layer))
            if numbers is None:
                return None
            if not numbers or len(numbers) % 2:
                self._bad_row()
                return None
            half = len(numbers) // 2
            out[layer] = SideStates(numbers[:half], numbers[half:])
        return out

    def put_states(
        self, tokens: tuple[int, ...], start: int, end: int, states: dict[int, SideStates]
    ) -> None:
        for layer, side in states.items():
            self._write(self._key(tokens, start, "states", end, layer), side.span + side.pooled)

    def run_sentences(self, run: str) -> int | None:
        """The sentences a run of key `run` had scored into this cache; None when none did."""
        if self._conn is None:
            return None
        try:
            row = self._conn.execute(
                "SELECT sentences FROM runs WHERE key = ?", (self._key((), 0, "run", run),)
            ).fetchone()
        except sqlite3.Error:
            return None  # a lookup for a cost line: never worth stopping a run for
        return row[0] if row and isinstance(row[0], int) and row[0] >= 0 else None

    def note_run(self, run: str, sentences: int) -> None:
        if self._conn is None or not self._writable:
            return
        with suppress(sqlite3.Error):
            self._conn.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?)",
                (self._key((), 0, "run", run), int(sentences)),
            )

    def close(self) -> None:
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None


def _is_damage(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return type(exc) is sqlite3.DatabaseError or "malformed" in text or "not a database" in text


def stored_value(key: bytes, numbers: Sequence[float]) -> bytes:
    """A cache row's value: the numbers as little-endian float64s, then the check."""
    payload = struct.pack(f"<{len(numbers)}d", *numbers)
    return payload + hashlib.sha256(key + payload).digest()[:8]


def stored_numbers(key: bytes, value: Any) -> tuple[float, ...] | None:
    """The numbers of a cache row, or None when the row cannot be what was stored under `key`:
    not bytes, cut short, a check that does not match (edited, or another key's row), or a number
    that is not finite."""
    if not isinstance(value, bytes) or len(value) < 8 or len(value) % 8:
        return None
    payload, check = value[:-8], value[-8:]
    if hashlib.sha256(key + payload).digest()[:8] != check:
        return None
    numbers = struct.unpack(f"<{len(payload) // 8}d", payload)
    if not all(math.isfinite(x) for x in numbers):
        return None
    return numbers
