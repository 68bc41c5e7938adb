"""Which torch device "auto" means on this machine."""

from __future__ import annotations


def resolve_device(device: str | None = "auto") -> str:
    """`device` itself, unless it is "auto" (or empty): then CUDA, else Apple's MPS, else CPU."""
    if device and device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def attention_implementation(device: str) -> str | None:
    """How a causal LM attends on `device` (transformers' `attn_implementation`).

    On the CPU, transformers' own choice (None: SDPA where the model has it), which every pinned
    score was read with and which any architecture loads with. Elsewhere, eager attention
    (plain matrix products): on CUDA, SDPA's memory-efficient kernel reads a right-padded batch
    wrongly when the key length is 1 mod 32 and the keys and values are broadcast (stride 0),
    which Gemma 3's single key-value head gives (pytorch/pytorch#191937). On an H200 with torch
    2.11 it moved 14 of 9,859 pair-judge probabilities by up to 0.27, every one in a batch padded
    to 33 or 65 tokens (benchmarks/data/pair_judge_gpu_agreement.json)."""
    return None if device == "cpu" else "eager"
