"""`OpenAIChatClient`: any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, Ollama,
llama.cpp, LM Studio ...) over `requests`, with a thread pool (bounded concurrency), a timeout
per request, and retries with exponential backoff on 429, 5xx, timeouts and connections dropped
mid-reply (a server's Retry-After is honoured). A server that refuses connections is given a few
seconds in all (`CONNECT_GRACE`), shared by every prompt, then the client stops sending. The API
key is checked before any request and never appears in an error."""

from __future__ import annotations

import email.utils
import json
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any
from urllib.parse import urlparse

from transnli.common.llm.base import LLMClient, LLMError, LLMReply

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
