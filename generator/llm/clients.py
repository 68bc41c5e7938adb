"""LLM clients: one small interface and three backends, plus a persistent reply cache.

    client = make_client("openai", model="gpt-4o-mini", base_url="http://localhost:8000/v1")
    replies = client.complete_many(["prompt 1", "prompt 2"])   # one LLMReply per prompt, in order

Backends:
- `OpenAIChatClient`: any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, Ollama,
  llama.cpp, LM Studio ...) over `requests`, with a thread pool (bounded concurrency), a timeout
  per request, and retries with exponential backoff on 429, 5xx, timeouts and connections
  dropped mid-reply (a server's Retry-After is honoured). A server that refuses connections is
  given a few seconds in all (`CONNECT_GRACE`), shared by every prompt, then the client stops
  sending. The API key is checked before any request and never appears in an error.
- `HFSeq2SeqClient` / `HFCausalClient`: a local transformers model (flan-t5, a chat model ...),
  greedy decoding in batches.

`CachedClient` puts a SQLite cache in front of any of them, keyed by (backend, model, generation
parameters, exact prompt): a rerun costs nothing, and a run that crashed resumes where it was,
because every reply is stored the moment it arrives. Failed requests are never cached.

A client never raises for a failed request: the reply carries `error` (and `error_kind`), so one
bad prompt does not sink a batch. Callers decide what a failure means (`all_unreachable`).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from transnli.common.devices import resolve_device

BACKENDS = ("openai", "hf-seq2seq", "hf-causal")
DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENVS = ("TRANSNLI_LLM_BASE_URL", "OPENAI_BASE_URL")
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# Hosted APIs that answer nothing without a key: a missing key is reported before any request.
HOSTED_API_HOSTS = frozenset(
    {
        "api.openai.com",
        "api.anthropic.com",
        "api.mistral.ai",
        "api.groq.com",
        "api.together.xyz",
        "api.deepseek.com",
        "api.fireworks.ai",
        "openrouter.ai",
        "generativelanguage.googleapis.com",
    }
)
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# Error kinds after which going on is pointless: the server is not there, or refuses us.
FATAL_KINDS = frozenset({"connection", "auth", "not_found"})
# Seconds a server may refuse connections (a server restarting) before the client gives up on it.
CONNECT_GRACE = 3.0
CONNECT_RETRY_WAIT = 0.5
_BEARER = re.compile(r"(Bearer\s+)[^\s\"',;]+", re.I)


def redact(text: str, secret: str | None = None) -> str:
    """`text` without the API key: the key's value (when it is long enough to be one) and any
    ``Bearer <token>`` become ***. Every error a client reports goes through here, because servers
    echo request headers in error bodies."""
    if secret and len(secret) >= 8:
        text = text.replace(secret, "***")
    return _BEARER.sub(r"\1***", text)


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


def check_api_key(base_url: str, api_key_env: str | None) -> None:
    """Raise LLMError when a key is needed and missing: the variable was named explicitly (not
    the default) and is unset, or the server is a hosted API that answers nothing without one."""
    if not api_key_env or os.environ.get(api_key_env):
        return
    if api_key_env != DEFAULT_KEY_ENV:
        raise LLMError(
            f"--llm-api-key-env names ${api_key_env}, which is not set; export it with "
            "your API key (a local server needs no key: leave the option out)"
        )
    host = (urlparse(base_url).hostname or "").lower()
    if host in HOSTED_API_HOSTS or host.endswith(".openai.azure.com"):
        raise LLMError(
            f"{base_url} needs an API key and ${api_key_env} is not set; export it, name "
            "another variable with --llm-api-key-env, or give --llm-base-url of a local server"
        )


class ConnectBreaker:
    """Shared by a client's threads. Connection failures are retried quickly while the server
    has refused for less than `grace` seconds in all (any reply that gets through starts the clock
    again); after that, or once retries run out, it opens and every request fails at once, so an
    absent server costs seconds, not a backoff per prompt."""

    def __init__(self, grace: float = CONNECT_GRACE):
        self.grace = grace
        self.reason: str | None = None
        self._since: float | None = None
        self._lock = threading.Lock()

    def failed(self, reason: str, give_up: bool = False) -> bool:
        """Record a refused connection; True when the breaker is (now) open."""
        with self._lock:
            now = time.monotonic()
            if self._since is None:
                self._since = now
            if self.reason is None and (give_up or now - self._since >= self.grace):
                self.reason = reason
            return self.reason is not None

    def succeeded(self) -> None:
        with self._lock:
            self._since = None


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


# -- OpenAI-compatible HTTP ------------------------------------------------------------------------
def resolve_base_url(base_url: str | None) -> str:
    if base_url:
        return base_url
    for env in BASE_URL_ENVS:
        if os.environ.get(env):
            return os.environ[env]
    return DEFAULT_BASE_URL


def chat_completions_url(base_url: str) -> str:
    """The endpoint for a base URL given as for the OpenAI SDK (``http://host:8000/v1``); a full
    ``.../chat/completions`` URL is used as is."""
    url = base_url.rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:200] if text else type(e).__name__


def _errno_text(e: BaseException) -> str:
    """'connection refused' out of urllib3's long chain of wrapped messages."""
    m = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", str(e))
    return m.group(1).strip().lower() if m else _first_line(e)


def _refused(e: BaseException) -> bool:
    """Whether a requests ConnectionError failed to open the connection (refused, no route, name
    not resolved), as opposed to one that broke after the request was sent."""
    from urllib3.exceptions import NewConnectionError

    seen = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, (NewConnectionError, ConnectionRefusedError)):
            return True
        stack.extend(
            [
                getattr(x, "reason", None),
                x.__cause__,
                x.__context__,
                *(a for a in getattr(x, "args", ()) if isinstance(a, BaseException)),
            ]
        )
    return False


def _truncated_json(body: str) -> bool:
    """A body that is the start of a JSON document cut short (as opposed to one that is not
    JSON)."""
    body = body.strip()
    if not body.startswith(("{", "[")):
        return False
    try:
        json.loads(body)
    except json.JSONDecodeError as e:
        rest = body[e.pos :]
        return (
            e.pos >= len(body)
            or e.msg.startswith("Unterminated string")
            or any(word.startswith(rest) for word in ("true", "false", "null"))
        )
    return False


class _Retry(Exception):
    def __init__(self, kind: str, message: str, wait: float | None = None):
        super().__init__(message)
        self.kind, self.message, self.wait = kind, message, wait


class OpenAIChatClient(LLMClient):
    """An OpenAI-compatible chat-completions endpoint.

    The API key is read from the environment variable named by `api_key_env` (never stored or
    logged); local servers that need no key work without it. `max_tokens=None` sends no limit
    (use it for reasoning models that reject `max_tokens`).
    """

    backend = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 5,
        temperature: float = 0.0,
        max_tokens: int | None = 512,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        system_prompt: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ):
        super().__init__()
        if not model:
            raise LLMError("the openai backend needs a model name (--llm-model)")
        self.model = model
        self.base_url = resolve_base_url(base_url)
        self.url = chat_completions_url(self.base_url)
        self.api_key_env = api_key_env
        self.concurrency = max(1, int(concurrency))
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.temperature = float(temperature)
        self.max_tokens = max_tokens if max_tokens and max_tokens > 0 else None
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.system_prompt = system_prompt
        self.extra_body = dict(extra_body or {})
        self._local = threading.local()
        self.breaker = ConnectBreaker()
        check_api_key(self.base_url, api_key_env)

    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def _redact(self, text: str) -> str:
        return redact(text, self._key())

    def _excerpt(self, resp, n: int) -> str:
        return self._redact(resp.text)[:n]

    def params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.system_prompt:
            p["system"] = self.system_prompt
        if self.extra_body:
            p["extra_body"] = self.extra_body
        return p

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url, "api_key_env": self.api_key_env}

    def _session(self):
        import requests

        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = requests.Session()
        return s

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _body(self, prompt: str) -> dict[str, Any]:
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    def _attempt(self, prompt: str) -> LLMReply:
        import requests

        try:
            resp = self._session().post(
                self.url,
                json=self._body(prompt),
                headers=self._headers(),
                timeout=(min(self.timeout, 10.0), self.timeout),
            )
        except requests.ConnectTimeout as e:
            raise _Retry("connection", f"no connection within {min(self.timeout, 10.0):g} s") from e
        except requests.Timeout as e:
            raise _Retry(
                "timeout", f"no reply within {self.timeout:g} s ({type(e).__name__})"
            ) from e
        except requests.ConnectionError as e:
            if _refused(e):
                raise _Retry("connection", _errno_text(e)) from e
            raise _Retry(
                "dropped", f"the connection to {self.url} broke before the reply ({_first_line(e)})"
            ) from e
        except (
            requests.exceptions.ChunkedEncodingError,
            requests.exceptions.ContentDecodingError,
        ) as e:
            raise _Retry(
                "dropped", f"the connection to {self.url} broke during the reply ({_first_line(e)})"
            ) from e
        except requests.RequestException as e:  # an unusable URL: no request can succeed
            return LLMReply(
                None, error=f"cannot send to {self.url}: {_first_line(e)}", error_kind="not_found"
            )
        if resp.status_code in RETRY_STATUS:
            raise _Retry(
                "http",
                f"HTTP {resp.status_code} from {self.url}: {self._excerpt(resp, 200)}",
                parse_retry_after(resp.headers.get("Retry-After")),
            )
        if resp.status_code != 200:
            kind = {401: "auth", 403: "auth", 404: "not_found"}.get(resp.status_code, "http")
            hint = f" (is ${self.api_key_env} set?)" if kind == "auth" else ""
            return LLMReply(
                None,
                error=f"HTTP {resp.status_code} from {self.url}{hint}: {self._excerpt(resp, 300)}",
                error_kind=kind,
            )
        try:
            data = resp.json()
        except ValueError as e:
            if _truncated_json(resp.text):  # the body ended early: the connection broke
                raise _Retry("dropped", f"the reply from {self.url} ended mid-JSON") from e
            return self._malformed(resp, e)
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
            if text is None:  # some servers put everything in reasoning_content
                text = choice["message"].get("reasoning_content") or ""
            if not isinstance(text, str):
                raise TypeError("message.content is not a string")
        except (KeyError, IndexError, TypeError) as e:
            return self._malformed(resp, e)
        usage = data.get("usage") or {}
        return LLMReply(
            text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
        )

    def _malformed(self, resp, e: Exception) -> LLMReply:
        return LLMReply(
            None,
            error=f"malformed response from {self.url}: {type(e).__name__}: "
            f"{str(e)[:100]}; body starts {self._excerpt(resp, 120)!r}",
            error_kind="malformed",
        )

    def _unreachable(self) -> LLMReply:
        return LLMReply(
            None,
            error=f"cannot reach LLM server at {self.base_url} ({self.breaker.reason}); "
            "check that it is running and that --llm-base-url points at it",
            error_kind="connection",
        )

    def complete_one(self, prompt: str) -> LLMReply:
        t0 = time.perf_counter()
        attempt = 0
        while True:
            if self.breaker.reason is not None:  # the server refuses connections: send nothing more
                reply = self._unreachable()
                break
            attempt += 1
            self.usage.add(requests=1)
            try:
                reply = self._attempt(prompt)
            except _Retry as r:
                if r.kind == "connection":
                    if self.breaker.failed(
                        self._redact(r.message), give_up=attempt > self.max_retries
                    ):
                        reply = self._unreachable()
                        break
                    self.usage.add(retries=1)
                    time.sleep(CONNECT_RETRY_WAIT)
                    continue
                if attempt > self.max_retries:
                    reply = LLMReply(
                        None,
                        error=f"{r.message} (gave up after {attempt} attempts)",
                        error_kind=r.kind,
                    )
                else:
                    wait = r.wait if r.wait is not None else self.backoff * 2 ** (attempt - 1)
                    self.usage.add(retries=1)
                    time.sleep(min(self.max_backoff, wait))
                    continue
            self.breaker.succeeded()
            break
        reply.attempts = attempt
        reply.seconds = time.perf_counter() - t0
        if reply.ok:
            self.usage.add(
                prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens
            )
        else:
            reply.error = self._redact(reply.error or "")
            self.usage.add(errors=1)
        return reply

    def complete_iter(self, prompts: Sequence[str]) -> Iterator[tuple[int, LLMReply]]:
        if not prompts:
            return
        if len(prompts) == 1 or self.concurrency == 1:
            for i, p in enumerate(prompts):
                yield i, self.complete_one(p)
            return
        with ThreadPoolExecutor(
            max_workers=min(self.concurrency, len(prompts)), thread_name_prefix="transnli-llm"
        ) as pool:
            futures = {pool.submit(self.complete_one, p): i for i, p in enumerate(prompts)}
            try:
                for fut in as_completed(futures):
                    yield futures[fut], fut.result()
            finally:  # an interrupted consumer should not wait for queued requests
                for fut in futures:
                    fut.cancel()


# -- local transformers models ---------------------------------------------------------------------
def model_fingerprint(name_or_path: str) -> str:
    """Pins the weights a name refers to: for a local folder, a digest of its files' names and
    sizes plus the first and last MiB of each (cheap, yet changes when the weights do); for a hub
    id, the id itself (the resolved revision is added once the model is loaded)."""
    p = Path(name_or_path).expanduser()
    if not p.is_dir():
        return name_or_path
    h = hashlib.sha256()
    for f in sorted(p.rglob("*")):
        if not f.is_file():
            continue
        size = f.stat().st_size
        h.update(f"{f.relative_to(p)}\0{size}\0".encode())
        with open(f, "rb") as fh:
            h.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(-(1 << 20), os.SEEK_END)
                h.update(fh.read())
    return f"{p.name}@{h.hexdigest()[:16]}"


class _HFClient(LLMClient):
    auto_model = ""

    def __init__(
        self,
        model: str,
        device: str = "auto",
        batch_size: int = 8,
        max_new_tokens: int = 128,
        dtype: str = "auto",
    ):
        super().__init__()
        if not model:
            raise LLMError(
                f"the {self.backend} backend needs a model: a hub id or a local folder "
                "(--llm-model)"
            )
        self.model = model
        self.device_name = device
        self.batch_size = max(1, int(batch_size))
        self.max_new_tokens = int(max_new_tokens)
        self.dtype = dtype
        self._fingerprint = model_fingerprint(model)
        self._model = self._tokenizer = None
        self._lock = threading.Lock()

    @property
    def model_identity(self) -> str:
        return self._fingerprint

    def params(self) -> dict[str, Any]:
        return {"decoding": "greedy", "max_new_tokens": self.max_new_tokens}

    def prepare(self) -> None:
        with self._lock:
            self._load()

    def _load(self):
        if self._model is not None:
            return
        import torch
        import transformers

        auto = getattr(transformers, self.auto_model)
        kwargs: dict[str, Any] = {}
        if self.dtype != "auto":
            kwargs["dtype"] = getattr(torch, self.dtype)
        from safetensors import SafetensorError
        from transnli.common.lm.conversion import quiet_transformers

        try:
            with quiet_transformers():  # its "Loading weights" bar is not ours: the labelling's is
                tok = transformers.AutoTokenizer.from_pretrained(self.model)
                model = auto.from_pretrained(self.model, **kwargs)
        except SafetensorError as e:
            raise LLMError(
                f"{self.model}: a weights file is corrupt or truncated ({e}); download or save "
                "the model again"
            ) from e
        except (OSError, ValueError) as e:
            raise LLMError(
                f"cannot load {self.model!r} with {self.auto_model}: {str(e).rstrip('.')}. Give a "
                "local folder or a hub id that is in the Hugging Face cache."
            ) from e
        self.device = resolve_device(self.device_name)
        self._model = model.to(self.device).eval()
        self._tokenizer = tok
        self._prepare_tokenizer(tok)
        commit = getattr(model.config, "_commit_hash", None)
        if commit and "@" not in self._fingerprint:
            self._fingerprint = f"{self.model}@{commit}"

    def _prepare_tokenizer(self, tok) -> None:
        pass

    def _encode_prompts(self, prompts: list[str]) -> list[str]:
        return prompts

    def _new_tokens(self, output, enc):
        raise NotImplementedError

    def _complete_batch(self, prompts: list[str]) -> list[LLMReply]:
        import torch

        with self._lock:
            self._load()
            tok, model = self._tokenizer, self._model
            out: list[LLMReply | None] = [None] * len(prompts)
            order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))  # less padding
            eos = {t for t in (tok.eos_token_id, tok.pad_token_id) if t is not None}
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                t0 = time.perf_counter()
                try:
                    enc = tok(
                        self._encode_prompts([prompts[i] for i in idx]),
                        return_tensors="pt",
                        padding=True,
                        truncation=True,
                    ).to(self.device)
                    with torch.inference_mode():
                        gen = model.generate(
                            **enc,
                            do_sample=False,
                            num_beams=1,
                            max_new_tokens=self.max_new_tokens,
                            pad_token_id=tok.pad_token_id,
                        )
                    new = self._new_tokens(gen, enc)
                except (RuntimeError, ValueError) as e:
                    for i in idx:
                        out[i] = LLMReply(None, error=f"generation failed: {e}", error_kind="local")
                    self.usage.add(errors=len(idx))
                    continue
                per = (time.perf_counter() - t0) / len(idx)
                for row, i in enumerate(idx):
                    ids = new[row].tolist()
                    n = len(ids)
                    for k, t in enumerate(ids):  # completion = up to the first end token
                        if t in eos:
                            n = k + 1 if t == tok.eos_token_id else k
                            break
                    text = tok.decode(ids[:n], skip_special_tokens=True).strip()
                    out[i] = LLMReply(
                        text,
                        prompt_tokens=int(enc["attention_mask"][row].sum()),
                        completion_tokens=n,
                        seconds=per,
                    )
                self.usage.add(
                    requests=len(idx),
                    prompt_tokens=sum(out[i].prompt_tokens for i in idx),
                    completion_tokens=sum(out[i].completion_tokens for i in idx),
                )
            return [
                r if r is not None else LLMReply(None, error="no reply", error_kind="local")
                for r in out
            ]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "device": self.device_name}

    def close(self) -> None:
        self._model = self._tokenizer = None


class HFSeq2SeqClient(_HFClient):
    """An encoder-decoder model (T5, flan-t5, BART ...) through AutoModelForSeq2SeqLM."""

    backend = "hf-seq2seq"
    auto_model = "AutoModelForSeq2SeqLM"

    def _new_tokens(self, output, enc):
        start = self._model.generation_config.decoder_start_token_id
        if start is None:
            start = self._model.config.decoder_start_token_id
        # generate() returns the decoder start token first; drop it.
        return (
            output[:, 1:] if start is not None and bool((output[:, 0] == start).all()) else output
        )


class HFCausalClient(_HFClient):
    """A decoder-only model through AutoModelForCausalLM; the tokenizer's chat template is used
    when it has one (set `chat_template=False` to send the raw prompt)."""

    backend = "hf-causal"
    auto_model = "AutoModelForCausalLM"

    def __init__(self, *args, chat_template: bool | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.chat_template = chat_template

    def params(self) -> dict[str, Any]:
        return {**super().params(), "chat_template": self.chat_template}

    def _prepare_tokenizer(self, tok) -> None:
        tok.padding_side = "left"  # generation continues from the right end
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        if self.chat_template is None:
            self.chat_template = bool(getattr(tok, "chat_template", None))

    def _encode_prompts(self, prompts: list[str]) -> list[str]:
        if not self.chat_template:
            return prompts
        return [
            self._tokenizer.apply_chat_template(
                [{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True
            )
            for p in prompts
        ]

    def _new_tokens(self, output, enc):
        return output[:, enc["input_ids"].shape[1] :]


# -- the reply cache -------------------------------------------------------------------------------
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


def make_client(
    backend: str,
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    concurrency: int = 8,
    timeout: float = 60.0,
    max_retries: int = 5,
    temperature: float = 0.0,
    max_tokens: int | None = 512,
    device: str = "auto",
    cache: bool | str | Path = True,
) -> LLMClient:
    """Build a client by backend name; `cache` True uses the default cache file, a path another
    file, False none. For the local backends `concurrency` is the generation batch size and
    `max_tokens` the number of new tokens (temperature is ignored: decoding is greedy)."""
    if backend == "openai":
        client: LLMClient = OpenAIChatClient(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout=timeout,
            max_retries=max_retries,
            temperature=temperature,
            max_tokens=max_tokens,
        )
    elif backend in ("hf-seq2seq", "hf-causal"):
        cls = HFSeq2SeqClient if backend == "hf-seq2seq" else HFCausalClient
        client = cls(model, device=device, batch_size=concurrency, max_new_tokens=max_tokens or 128)
    else:
        raise LLMError(f"unknown LLM backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if cache is False:
        return client
    return CachedClient(client, ReplyCache(None if cache is True else cache))
