"""What a caller chooses about the language model (`LMSettings`), its one error (`LMError`), and
where transnli keeps what it makes of a model (converted weights, the score cache)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_LM = "gemma3-270m"
CACHE_ENV = "TRANSNLI_CACHE"
DTYPES = ("float32", "bfloat16", "float16")


class LMError(Exception):
    """A language model that cannot be loaded or used; the message is one line for the user."""


@dataclass(frozen=True)
class LMSettings:
    spec: str = DEFAULT_LM
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 16
    cache_dir: Path | None = None  # converted weights and the score cache; None: transnli's cache
    use_cache: bool = True

    def validate(self) -> None:
        if self.batch_size < 1:
            raise LMError(f"language model batch size must be at least 1, not {self.batch_size}")
        if self.dtype not in DTYPES:
            raise LMError(
                f"language model dtype must be one of {', '.join(DTYPES)}, not {self.dtype}"
            )


def default_cache_dir() -> Path:
    from transnli.resources.provision import cache_dir

    return cache_dir()


def torch_dtype(name: str):
    """The torch dtype one of DTYPES names."""
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
