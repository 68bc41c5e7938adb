"""`CachedClient` puts a SQLite cache (`ReplyCache`) in front of any client, keyed by (backend,
model, generation parameters, exact prompt): a rerun costs nothing, and a run that crashed resumes
where it was, because every reply is stored the moment it arrives. Failed requests are never
cached."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transnli.common.llm.base import LLMClient, LLMError, LLMReply

CACHE_ENV = "TRANSNLI_LLM_CACHE"


def default_cache_path() -> Path:
    """$TRANSNLI_LLM_CACHE (a file), else replies.sqlite3 under the transnli cache folder
    ($TRANSNLI_CACHE, else ~/.cache/transnli) in llm/."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    from transnli.resources.provision import cache_dir

    return cache_dir() / "llm" / "replies.sqlite3"


def cache_key(backend: str, model: str, params: dict[str, Any], prompt: str) -> str:
    doc = json.dumps([backend, model, params, prompt], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


class ReplyCache:
    """SQLite store of successful replies. Safe to share between processes (WAL, busy timeout);
    one connection per cache object, used from the thread that calls `CachedClient`."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_cache_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            with self.conn:
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, backend TEXT NOT "
                    "NULL, model TEXT NOT NULL, params TEXT NOT NULL, prompt TEXT NOT NULL, reply "
                    "TEXT NOT NULL, created REAL NOT NULL)"
                )
        except sqlite3.DatabaseError as e:
            raise self._problem(e) from e
        except (OSError, sqlite3.Error) as e:
            raise LLMError(
                f"cannot open the LLM reply cache {self.path}: {e} "
                "(set TRANSNLI_CACHE to a writable folder)"
            ) from e
        self.writable = True  # False once the disk is full

    def _problem(self, e: sqlite3.Error) -> LLMError:
        """One line naming the file, what is wrong and what to do."""
        msg = str(e)
        if "full" in msg:
            return LLMError(
                f"the LLM reply cache {self.path} cannot grow: the disk is full ({msg}); free some "
                "space"
            )
        if "malformed" in msg or "not a database" in msg or type(e) is sqlite3.DatabaseError:
            return LLMError(
                f"the LLM reply cache {self.path} is damaged ({msg}); delete it (replies will be "
                f"asked again) or point ${CACHE_ENV} at another file"
            )
        return LLMError(
            f"the LLM reply cache {self.path} cannot be used ({msg}); delete it or point "
            f"${CACHE_ENV} at another file"
        )

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        uniq = list(dict.fromkeys(keys))
        try:
            for start in range(0, len(uniq), 500):
                chunk = uniq[start : start + 500]
                rows = self.conn.execute(
                    f"SELECT key, reply FROM replies WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                found.update((k, json.loads(v)) for k, v in rows)
        except sqlite3.DatabaseError as e:
            raise self._problem(e) from e
        return found

    def put(
        self,
        key: str,
        backend: str,
        model: str,
        params: dict[str, Any],
        prompt: str,
        reply: LLMReply,
    ) -> None:
        """Store a reply. On a full disk the reply is kept by the caller and storing stops (with
        one warning): the run goes on, only a rerun will ask again."""
        if not self.writable:
            return
        try:
            with self.conn:
                self.conn.execute(
                    "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        backend,
                        model,
                        json.dumps(params, sort_keys=True),
                        prompt,
                        json.dumps(reply.cache_dict(), ensure_ascii=False),
                        time.time(),
                    ),
                )
        except sqlite3.OperationalError as e:
            if "full" not in str(e):
                raise self._problem(e) from e
            self.writable = False
            logging.getLogger("transnli").warning(
                "%s; replies from here on are not cached", self._problem(e)
            )
        except sqlite3.DatabaseError as e:
            raise self._problem(e) from e

    def __len__(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        self.conn.close()


class CachedClient(LLMClient):
    """A transparent cache in front of a client: hits come from SQLite, misses go to the client
    (each distinct prompt once) and are stored as they arrive. Replies served from the cache keep
    the tokens and seconds they cost when generated, so figures derived from them do not depend on
    what the cache held."""

    def __init__(self, inner: LLMClient, cache: ReplyCache):
        super().__init__()
        self.inner, self.cache = inner, cache
        self.backend, self.model = inner.backend, inner.model

    @property
    def model_identity(self) -> str:
        return self.inner.model_identity

    def params(self) -> dict[str, Any]:
        return self.inner.params()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def prepare(self) -> None:
        self.inner.prepare()

    def complete_many(self, prompts: Sequence[str]) -> list[LLMReply]:
        t0 = time.perf_counter()
        # Read once: a hub model's revision is only known once loaded (call prepare() first),
        # and lookups and stores must agree within this call.
        ident, params = self.inner.model_identity, self.inner.params()
        keys = [cache_key(self.backend, ident, params, p) for p in prompts]
        hits = self.cache.get_many(keys)
        out: list[LLMReply | None] = [None] * len(prompts)
        misses: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            if k in hits:
                out[i] = LLMReply(**hits[k], cached=True)
            else:
                misses.setdefault(k, []).append(i)
        todo = list(misses)
        if todo:
            for j, reply in self.inner.complete_iter([prompts[misses[k][0]] for k in todo]):
                k = todo[j]
                if reply.ok:
                    self.cache.put(k, self.backend, ident, params, prompts[misses[k][0]], reply)
                for i in misses[k]:
                    out[i] = reply
        n_hits = len(prompts) - sum(len(v) for v in misses.values())
        self.usage.add(prompts=len(prompts), cache_hits=n_hits, seconds=time.perf_counter() - t0)
        return [
            r if r is not None else LLMReply(None, error="no reply", error_kind="local")
            for r in out
        ]

    @property
    def run_usage(self) -> dict[str, Any]:
        """This process's figures: prompts and cache hits from the cache, the rest from the
        client."""
        inner = self.inner.usage.to_dict()
        return {
            **inner,
            "prompts": self.usage.prompts,
            "cache_hits": self.usage.cache_hits,
            "seconds": round(self.usage.seconds, 3),
        }

    def close(self) -> None:
        self.inner.close()
        self.cache.close()
