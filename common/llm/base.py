"""The LLM client interface: a batch of prompts in, one `LLMReply` per prompt out, in order.

A client never raises for a failed request: the reply carries `error` (and `error_kind`), so one
bad prompt does not sink a batch. Callers decide what a failure means (`all_unreachable`,
`none_answered`)."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

# Error kinds after which going on is pointless: the server is not there, or refuses us.
FATAL_KINDS = frozenset({"connection", "auth", "not_found"})


class LLMError(RuntimeError):
    """A client that cannot be built or used (missing model, unreachable server for a whole
    batch)."""


@dataclass
class LLMReply:
    """One completion. `text` is None when the request failed; `error` then says why and
    `error_kind` is one of: timeout, connection (the server cannot be reached), dropped (the
    connection broke during the reply), http, auth, not_found, malformed, local."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0  # time the request took (retries included) when it was generated
    error: str | None = None
    error_kind: str | None = None
    attempts: int = 1
    cached: bool = False
    finish_reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None

    def cache_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": self.seconds,
            "finish_reason": self.finish_reason,
        }


@dataclass
class Usage:
    """What this process spent (not what cached replies once cost)."""

    prompts: int = 0
    cache_hits: int = 0
    requests: int = 0  # HTTP requests / generate() rows actually sent, retries included
    retries: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0  # wall time spent inside complete_many
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: float) -> None:
        with self._lock:
            for k, v in counts.items():
                setattr(self, k, getattr(self, k) + v)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        d["seconds"] = round(d["seconds"], 3)
        return d


def all_unreachable(replies: Sequence[LLMReply]) -> LLMReply | None:
    """A reply that says going on is pointless, else None: the first one whose server cannot be
    reached (the client has stopped sending), or the first when *every* reply failed for a reason
    that will not go away by itself (bad key, unknown model or URL)."""
    for r in replies:
        if r.error_kind == "connection":
            return r
    if replies and all(r.error_kind in FATAL_KINDS for r in replies):
        return replies[0]
    return None


def none_answered(replies: Sequence[LLMReply], answered_before: int) -> LLMReply | None:
    """The first reply when every request of a batch failed and no earlier one was answered
    either: the server (or the settings) cannot work, and a run should stop and say so rather than
    record every prompt as a failure."""
    if replies and answered_before == 0 and not any(r.ok for r in replies):
        return replies[0]
    return None


class LLMClient(ABC):
    """The interface: a batch of prompts in, one reply per prompt out, in order."""

    backend: str = ""
    model: str = ""

    def __init__(self) -> None:
        self.usage = Usage()

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """Generation parameters that can change a reply (they key the cache)."""

    @property
    def model_identity(self) -> str:
        """The model's name, plus whatever pins its weights (local models: a fingerprint)."""
        return self.model

    def complete_iter(self, prompts: Sequence[str]) -> Iterator[tuple[int, LLMReply]]:
        """Yield (index, reply) as replies complete (any order). Backends that can stream
        results override this; the default runs `_complete_batch` once."""
        yield from enumerate(self._complete_batch(list(prompts)))

    def _complete_batch(self, prompts: list[str]) -> list[LLMReply]:
        raise NotImplementedError

    def complete_many(self, prompts: Sequence[str]) -> list[LLMReply]:
        t0 = time.perf_counter()
        out: list[LLMReply | None] = [None] * len(prompts)
        for i, reply in self.complete_iter(prompts):
            out[i] = reply
        self.usage.add(prompts=len(prompts), seconds=time.perf_counter() - t0)
        return [
            r if r is not None else LLMReply(None, error="no reply", error_kind="local")
            for r in out
        ]

    def describe(self) -> dict[str, Any]:
        """Provenance (config.json / summary.json): no secrets, nothing that varies per run."""
        return {"backend": self.backend, "model": self.model_identity, "params": self.params()}

    def prepare(self) -> None:  # noqa: B027 - optional hook
        """Load what the client needs (a local model), so that a missing one fails at start."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
