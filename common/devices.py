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
