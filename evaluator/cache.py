"""A persistent label cache (SQLite) in front of any backend.

Labels are keyed by (model identity, premise, hypothesis): the identity changes whenever the labels
could (other weights, revision, dtype, label map...), so a hit is never stale. The cached backend
sends only misses to the model and commits them in large transactions (every WRITE_PAIRS labels or
WRITE_SECONDS, and whenever labelling stops, finished or not), so a second run, or a run that
crashed half way, reuses the labels already computed.

The same database memoises file digests by (path, size, mtime, inode, ctime), so a large
checkpoint is hashed once. Size and mtime alone can lie: a file replaced by another of the same size
whose mtime was set back (`cp -p`, `touch -d`, an unpacked archive) keeps both. Its inode or its
ctime changes all the same (the kernel sets ctime on every write, rename and `touch`, and no call
sets it back), so any change to either means the content is hashed again (docs/models.md, "The
label cache"). A stored row that cannot be read back (an unknown label, a probability that is not a
number, a row cut short) is a miss: computed again and overwritten, with one warning.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from transnli.common.digest import sha256_file

from .backends.base import NLIBackend, Pair, Prediction, collect_batches
from .errors import EvaluatorError
from .labels import LABELS

log = logging.getLogger("transnli")
CACHE_ENV = "TRANSNLI_CACHE"
DB_NAME = "labels.sqlite3"
SCHEMA_VERSION = 1
_CHUNK = 500  # keys per SELECT (well under SQLite's variable limit)
WRITE_PAIRS = 8192  # labels per write transaction of the cached backend
WRITE_SECONDS = 5.0  # ... or sooner, so a crash loses at most this much work


def default_cache_dir() -> Path:
    """$TRANSNLI_CACHE, else $XDG_CACHE_HOME/transnli, else ~/.cache/transnli."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "transnli"


def pair_key(premise: str, hypothesis: str) -> bytes:
    """sha256 of the exact pair (length-prefixed, so no separator can collide)."""
    p, h = premise.encode("utf-8"), hypothesis.encode("utf-8")
    return hashlib.sha256(len(p).to_bytes(8, "big") + p + h).digest()


class CacheError(EvaluatorError):
    """The label cache cannot be used (a damaged file, an unwritable folder)."""


class CacheFullError(CacheError):
    """A write failed because the disk (or the database's size limit) is full; nothing stored
    before it is lost (SQLite rolls the failed transaction back)."""


def sqlite_problem(path: Path, e: sqlite3.Error, what: str, fix: str) -> str:
    """One line for a SQLite error on a cache file: which file, what is wrong, what to do."""
    msg = str(e)
    if "malformed" in msg or "not a database" in msg or type(e) is sqlite3.DatabaseError:
        return f"the {what} {path} is damaged ({msg}); delete it ({fix}) or run with --no-cache"
    if "full" in msg:
        return (
            f"the {what} {path} cannot grow: the disk is full ({msg}); free some space or run with "
            "--no-cache"
        )
    return f"the {what} {path} cannot be used ({msg}); run with --no-cache, or delete the file"


def _guarded(method: Callable) -> Callable:
    """Turn a SQLite error inside a cache method into a CacheError that names the file."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as e:
            problem = sqlite_problem(self.path, e, "label cache", "labels will be computed again")
            raise (CacheFullError if "full" in str(e) else CacheError)(problem) from e

    return wrapper


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def stored_prediction(row: Sequence[Any]) -> Prediction | None:
    """A stored (label, p_entailment, p_neutral, p_contradiction) row as a Prediction, or None
    when it cannot be one: an unknown label, probabilities that are not three finite numbers in
    [0, 1] (SQLite keeps a text where a number was written), or a row cut short."""
    if len(row) != 4 or row[0] not in LABELS:
        return None
    label, *probs = row
    if all(p is None for p in probs):
        return Prediction(label, None)
    if not all(
        isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) and 0 <= p <= 1
        for p in probs
    ):
        return None
    return Prediction(label, dict(zip(LABELS, map(float, probs), strict=True)))


class LabelCache:
    """The SQLite store: labels per model identity, and file digests."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder).expanduser()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.path = self.folder / DB_NAME
            self.conn = sqlite3.connect(str(self.path), timeout=60)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self._create()
        except sqlite3.Error as e:
            raise CacheError(
                sqlite_problem(
                    self.folder / DB_NAME, e, "label cache", "labels will be computed again"
                )
            ) from e
        except OSError as e:
            raise CacheError(
                f"cannot open the label cache in {self.folder}: {e.strerror or e}; "
                "choose another folder with --cache-dir, or run with --no-cache"
            ) from e
        self._model_ids: dict[str, int] = {}
        self.files_hashed = 0  # digests actually computed (not served from the table)
        self.bad_rows = 0  # stored rows that could not be read back (treated as misses)

    def _create(self) -> None:
        with self.conn:
            self.conn.executescript(
                """
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS models (
                    id INTEGER PRIMARY KEY, identity TEXT NOT NULL UNIQUE);
                CREATE TABLE IF NOT EXISTS labels (
                    model_id INTEGER NOT NULL, key BLOB NOT NULL,
                    premise TEXT NOT NULL, hypothesis TEXT NOT NULL, label TEXT NOT NULL,
                    p_entailment REAL, p_neutral REAL, p_contradiction REAL,
                    PRIMARY KEY (model_id, key)) WITHOUT ROWID;
                DROP TABLE IF EXISTS file_hashes;
                CREATE TABLE IF NOT EXISTS file_digests (
                    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                    inode INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL);
                """
            )
            self.conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

    # ------------------------------------------------------------------ labels
    @_guarded
    def model_id(self, identity: str) -> int:
        if identity not in self._model_ids:
            with self.conn:
                self.conn.execute("INSERT OR IGNORE INTO models (identity) VALUES (?)", (identity,))
            row = self.conn.execute(
                "SELECT id FROM models WHERE identity = ?", (identity,)
            ).fetchone()
            self._model_ids[identity] = int(row[0])
        return self._model_ids[identity]

    @_guarded
    def get_many(self, identity: str, pairs: Sequence[Pair]) -> dict[int, Prediction]:
        """{index into pairs: Prediction} for the pairs already stored for this model."""
        mid = self.model_id(identity)
        keys = [pair_key(p, h) for p, h in pairs]
        where: dict[bytes, list[int]] = {}
        for i, k in enumerate(keys):
            where.setdefault(k, []).append(i)
        found: dict[int, Prediction] = {}
        unique = list(where)
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            rows = self.conn.execute(
                "SELECT key, label, p_entailment, p_neutral, p_contradiction FROM labels "
                f"WHERE model_id = ? AND key IN ({','.join('?' * len(chunk))})",
                (mid, *chunk),
            )
            for key, *row in rows:
                pred = stored_prediction(row)
                if pred is None:  # not served: computed again, and overwritten when stored
                    self.bad_rows += 1
                    continue
                for i in where[bytes(key)]:
                    found[i] = pred
        return found

    @_guarded
    def put_many(self, identity: str, pairs: Sequence[Pair], preds: Sequence[Prediction]) -> None:
        """Store one batch and commit it."""
        mid = self.model_id(identity)
        rows = []
        for (p, h), pred in zip(pairs, preds, strict=True):
            probs = (
                [None, None, None] if pred.probs is None else [float(pred.probs[k]) for k in LABELS]
            )
            rows.append((mid, pair_key(p, h), p, h, pred.label, *probs))
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO labels VALUES (?,?,?,?,?,?,?,?)", rows)

    @_guarded
    def count(self, identity: str | None = None) -> int:
        if identity is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0])
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM labels WHERE model_id = ?", (self.model_id(identity),)
            ).fetchone()[0]
        )

    # ------------------------------------------------------------------ file digests
    @_guarded
    def hash_file(self, path: str | Path) -> str:
        """sha256 of a file, memoised by (resolved path, size, mtime_ns, inode, ctime_ns): a file
        replaced by another of the same size and mtime has a new inode or a new ctime, so its
        content is hashed again."""
        path = Path(path).resolve()
        if path.is_dir():  # a folder's mtime misses edits inside it: never memoised
            return sha256_file(path)
        st = path.stat()
        stamp = _stamp(st)
        row = self.conn.execute(
            "SELECT sha256 FROM file_digests WHERE path = ? AND size = ? AND mtime_ns = ? "
            "AND inode = ? AND ctime_ns = ?",
            (str(path), *stamp),
        ).fetchone()
        if row:
            return str(row[0])
        digest = sha256_file(path)
        self.files_hashed += 1
        if _stamp(path.stat()) != stamp:
            return digest  # changed while it was read: the digest may mix two versions, not kept
        try:
            with self.conn:
                self.conn.execute(
                    "INSERT OR REPLACE INTO file_digests VALUES (?,?,?,?,?,?)",
                    (str(path), *stamp, digest),
                )
        except sqlite3.OperationalError as e:
            if "full" not in str(e):
                raise
            # A digest not remembered is only computed again next time.
        return digest

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> LabelCache:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class CachedBackend(NLIBackend):
    """Wraps a backend: serves stored labels, sends only misses to it, stores each batch."""

    def __init__(self, inner: NLIBackend, cache: LabelCache):
        self.inner = inner
        self.cache = cache
        self.spec = inner.spec
        self.batch_size = inner.batch_size
        self.hits = 0
        self.computed = 0
        self.writable = True  # False once the disk is full
        self.warned_bad_rows = False  # one warning per model, not one per window

    @property
    def identity(self) -> str:
        return self.inner.identity

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def check_available(self, pairs: Sequence[Pair]) -> None:
        self.inner.check_available(pairs)

    def predict(self, pairs: Sequence[Pair]) -> list[Prediction]:
        return collect_batches(self, pairs)

    def predict_batches(
        self, pairs: Sequence[Pair]
    ) -> Iterator[tuple[list[int], list[Prediction]]]:
        identity = self.identity
        bad_before = self.cache.bad_rows
        found = self.cache.get_many(identity, pairs)
        bad = self.cache.bad_rows - bad_before
        if bad and not self.warned_bad_rows:
            self.warned_bad_rows = True
            log.warning(
                "the label cache %s holds %d unreadable row%s for %s (an unknown label, a "
                "probability that is not a number, or a row cut short); labelling %s again",
                self.cache.path,
                bad,
                "" if bad == 1 else "s",
                self.spec or identity,
                "it" if bad == 1 else "them",
            )
        if found:
            self.hits += len(found)
            idx = sorted(found)
            yield idx, [found[i] for i in idx]
        misses = [i for i in range(len(pairs)) if i not in found]
        if not misses:
            return
        # Labels are stored in large transactions (a commit per batch cost more than a small
        # model's forward pass), at the latest every WRITE_SECONDS, and whatever is computed
        # is stored when labelling stops, finished or not.
        buffer: tuple[list[Pair], list[Prediction]] = ([], [])
        since = time.monotonic()
        try:
            for local, preds in self.inner.predict_batches([pairs[i] for i in misses]):
                idx = [misses[j] for j in local]
                if self.writable:
                    buffer[0].extend(pairs[i] for i in idx)
                    buffer[1].extend(preds)
                    if len(buffer[0]) >= WRITE_PAIRS or time.monotonic() - since >= WRITE_SECONDS:
                        self._store(identity, *buffer)
                        buffer, since = ([], []), time.monotonic()
                self.computed += len(idx)
                yield idx, preds
        finally:
            if buffer[0]:
                self._store(identity, *buffer)

    def _store(self, identity: str, pairs: list[Pair], preds: list[Prediction]) -> None:
        if not self.writable:
            return
        try:
            self.cache.put_many(identity, pairs, preds)
        except CacheFullError as e:
            # The labels are in hand: go on without storing more rather than lose them.
            self.writable = False
            log.warning("%s; labels from here on are not cached", e)

    def close(self) -> None:
        self.inner.close()
