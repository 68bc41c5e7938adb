"""`HFSeq2SeqClient` / `HFCausalClient`: a local transformers model (flan-t5, a chat model ...),
greedy decoding in batches; `model_fingerprint` pins the weights a name refers to."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from transnli.common.devices import attention_implementation, resolve_device
from transnli.common.llm.base import LLMClient, LLMError, LLMReply


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
        self.device = resolve_device(self.device_name)
        # off the CPU, eager attention: SDPA's CUDA kernel misreads some padded batches
        kwargs: dict[str, Any] = {"attn_implementation": attention_implementation(self.device)}
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
