"""A client by backend name (`make_client`), with the reply cache in front unless asked not to:

client = make_client("openai", model="gpt-4o-mini", base_url="http://localhost:8000/v1")
replies = client.complete_many(["prompt 1", "prompt 2"])   # one LLMReply per prompt, in order
"""

from __future__ import annotations

from pathlib import Path

from transnli.common.llm.base import LLMClient, LLMError
from transnli.common.llm.hf import HFCausalClient, HFSeq2SeqClient
from transnli.common.llm.openai_chat import OpenAIChatClient
from transnli.common.llm.reply_cache import CachedClient, ReplyCache

BACKENDS = ("openai", "hf-seq2seq", "hf-causal")


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
