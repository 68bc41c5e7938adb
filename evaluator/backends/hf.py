"""Any transformers sequence-classification checkpoint as an NLI backend.

Labels come from the checkpoint's own ``config.id2label``, normalised by name, never by index
(roberta/bart/deberta-large-mnli say 0=CONTRADICTION, ModernBERT-base-nli says 0=entailment).
Checkpoints with placeholder labels (LABEL_0..2) need an explicit label map; anything without
three NLI labels is refused.

Work is scheduled for throughput: pairs are tokenised once, sorted by length (longest first, so
that an out-of-memory batch shows up at once), padded per batch to that batch's longest pair, run
under ``torch.inference_mode``, and handed back in input order.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import BackendError, LabelError
from ..labels import LABELS, format_label_map, is_generic_label, normalize_label, parse_label_map
from .base import BackendOptions, NLIBackend, Pair, Prediction, collect_batches, sha256_file

log = logging.getLogger("transnli")

#: pairs tokenised and sorted together; bounds memory on very large runs
SORT_CHUNK = 16384
_TEXT_SUFFIXES = (".json", ".txt", ".model")
_WEIGHT_SETS = (
    ("model.safetensors", None),
    (None, "model.safetensors.index.json"),
    ("pytorch_model.bin", None),
    (None, "pytorch_model.bin.index.json"),
)
DTYPES = ("auto", "float32", "float16", "bfloat16")


# --------------------------------------------------------------------------- pure helpers
def resolve_label_order(
    id2label: Mapping[Any, str] | None, num_labels: int, label_map: str | None = None,
    model_name: str = "model",
) -> tuple[tuple[str, ...], str]:
    """The canonical label of each class index, and where it came from ("config" or "label-map").

    Names in ``id2label`` win; `label_map` ("0=contradiction,1=neutral,2=entailment") is for
    checkpoints whose names carry no meaning. Raises BackendError for anything else.
    """
    id2label = {int(k): v for k, v in (id2label or {}).items()}
    names = [id2label.get(i, f"LABEL_{i}") for i in range(num_labels)]
    shown = ", ".join(f"{i}={n}" for i, n in enumerate(names))
    if num_labels != 3:
        raise BackendError(
            f"{model_name} has {num_labels} output labels ({shown}); an NLI model needs exactly "
            "three: entailment, neutral, contradiction"
        )
    normalised = [normalize_label(n) for n in names]
    if None not in normalised and sorted(normalised) == sorted(LABELS):
        if label_map:
            try:
                given = parse_label_map(label_map)
            except LabelError as e:
                raise BackendError(str(e)) from e
            if tuple(given.get(i) for i in range(3)) != tuple(normalised):
                log.warning(
                    "%s names its labels (%s); the label map %r is ignored for it",
                    model_name, shown, label_map,
                )
        return tuple(normalised), "config"
    if label_map:
        try:
            mapping = parse_label_map(label_map)
        except LabelError as e:
            raise BackendError(str(e)) from e
        if sorted(mapping) != [0, 1, 2]:
            raise BackendError(
                f"label map {label_map!r} must give indices 0, 1 and 2 for {model_name} ({shown})"
            )
        return tuple(mapping[i] for i in range(3)), "label-map"
    if all(is_generic_label(n) for n in names):
        raise BackendError(
            f"{model_name} has placeholder labels ({shown}), so which class is entailment cannot be "
            "read from it; pass --label-map, e.g. --label-map 0=contradiction,1=neutral,2=entailment "
            "(check the model card)"
        )
    raise BackendError(
        f"{model_name} labels ({shown}) are not the three NLI labels entailment, neutral, "
        "contradiction; pass --label-map if you know which index is which"
    )


def _available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def resolve_device(name: str | None):
    import torch

    name = (name or "auto").strip().lower()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as e:
        raise BackendError(f"unknown device {name!r} (use auto, cpu, cuda, cuda:N or mps)") from e
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BackendError("device cuda was asked for, but torch sees no CUDA GPU here")
    if device.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise BackendError("device mps was asked for, but it is not available here")
    return device


def resolve_dtype(name: str | None, device) -> Any:
    """auto: float32 on CPU, float16 on CUDA and MPS."""
    import torch

    name = (name or "auto").strip().lower()
    if name not in DTYPES:
        raise BackendError(f"unknown dtype {name!r} (use {', '.join(DTYPES)})")
    if name == "auto":
        return torch.float32 if device.type == "cpu" else torch.float16
    return getattr(torch, name)


def model_files(folder: Path) -> list[Path]:
    """The files whose content decides a checkpoint's outputs: the weights transformers loads
    (safetensors preferred, shards included) plus config and tokenizer files."""
    weights: list[Path] = []
    for single, index in _WEIGHT_SETS:
        if single and (folder / single).is_file():
            weights = [folder / single]
            break
        if index and (folder / index).is_file():
            try:
                shards = sorted(set(json.loads((folder / index).read_text("utf-8"))["weight_map"].values()))
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise BackendError(f"{folder / index}: unreadable weight index ({e})") from e
            weights = [folder / index] + [folder / s for s in shards]
            break
    extra = [p for p in folder.iterdir() if p.is_file() and p.suffix in _TEXT_SUFFIXES]
    return sorted(set(weights) | set(extra), key=lambda p: p.name)


def folder_digest(folder: Path, hash_file=None) -> str:
    hash_file = hash_file or sha256_file
    h = hashlib.sha256()
    for path in model_files(folder):
        h.update(f"{path.name}\0{hash_file(path)}\n".encode())
    return h.hexdigest()


def safetensors_problem(path: Path) -> str | None:
    """Why a .safetensors file cannot be what its header says (cut short, garbled header), or
    None. Reads only the header: a safetensors file is an 8-byte header length, a JSON header
    giving each tensor's byte range, then the data, so its size is known from the header."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return f"{size} bytes, too short for a safetensors header"
            n = int.from_bytes(head, "little")
            if n > size - 8:
                return f"its header length says {n} bytes, the file has {size}"
            header = json.loads(fh.read(n))
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
    except OSError as e:
        return f"cannot be read: {e.strerror or e}"
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return "its header is not a valid safetensors header"
    expected = 8 + n + end
    if size < expected:
        return f"{size} bytes where its header describes {expected}: truncated"
    if size > expected:
        return f"{size} bytes where its header describes {expected}"
    return None


def check_weights(folder: Path) -> None:
    """Raise BackendError naming the first corrupt or truncated safetensors weights file."""
    for path in model_files(folder):
        if path.suffix == ".safetensors" and (why := safetensors_problem(path)):
            raise BackendError(f"model folder {folder}: weights file {path.name} is corrupt or truncated "
                               f"({why}); download or save the model again")


def _looks_like_path(arg: str) -> bool:
    """A spec that can only mean a folder: it starts like a path, has more than one separator, or
    its first part is a folder here (``models/nli`` when ./models exists; a hub id is ORG/NAME)."""
    if arg.startswith((".", "/", "~", "\\")) or arg.count("/") > 1 or arg.count(os.sep) > 1:
        return True
    head = arg.replace(os.sep, "/").split("/", 1)[0]
    return "/" in arg.replace(os.sep, "/") and Path(head).is_dir()


_TRUE = {"1", "true", "yes", "on"}


def hub_unreachable(timeout: float = 2.0) -> str | None:
    """Why the Hugging Face hub cannot be asked (offline mode, or no TCP connection to its endpoint
    within `timeout` seconds), or None. Asked only when a model is not in the local cache, so that
    an offline machine fails in seconds instead of after the hub client's retries."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"{var} is set"
    import socket
    from urllib.parse import urlparse

    endpoint = os.environ.get("HF_ENDPOINT")
    if not endpoint:
        try:
            from huggingface_hub import constants

            if constants.HF_HUB_OFFLINE:
                return "HF_HUB_OFFLINE is set"
            endpoint = constants.ENDPOINT
        except ImportError:
            endpoint = "https://huggingface.co"
    url = urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=timeout):
            return None
    except OSError as e:
        return f"no connection to {url.scheme}://{url.netloc}: {e.strerror or e}"


# --------------------------------------------------------------------------- backend
class HFBackend(NLIBackend):
    """A transformers AutoModelForSequenceClassification with its AutoTokenizer."""

    def __init__(self, model, tokenizer, labels: Sequence[str], *, name: str, source: str,
                 device, dtype, max_length: int, batch_size: int = 32, label_source: str = "config"):
        self.model = model
        self.tokenizer = tokenizer
        self.labels = tuple(labels)
        self.name = name
        self.source = source
        self.device = device
        self.dtype = dtype
        self.max_length = int(max_length)
        self.batch_size = max(1, int(batch_size))
        self.label_source = label_source
        accepted = set(inspect.signature(model.forward).parameters)
        self._input_names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in accepted]
        self.forward_calls = 0  # batches run through the model (tests and benchmarks read it)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_spec(cls, arg: str, options: BackendOptions) -> HFBackend:
        import torch  # noqa: F401 - fail here, clearly, if torch is missing
        from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # "Loading weights" bars; ours show the labelling

        local = Path(arg).expanduser()
        revision = None
        if local.is_dir():
            src, load_kw = str(local), {"local_files_only": True}
            name = str(local)
        elif local.exists():
            raise BackendError(
                f"hf model {arg!r} is a file, not a model folder"
                + (" (labels in a file? use precomputed:PATH)" if local.suffix in (".jsonl", ".json") else "")
            )
        elif _looks_like_path(arg):
            raise BackendError(f"hf model folder {arg!r} does not exist")
        else:
            src, _, revision = arg.partition("@")
            revision = revision or None
            if options.revision and revision and options.revision != revision:
                raise BackendError(f"hf model {arg!r}: two revisions given ({revision} after '@', "
                                   f"{options.revision} as an option); give one")
            revision = revision or options.revision
            name = src
            load_kw = {"revision": revision} if revision else {}
        if local.is_dir() and options.revision:
            raise BackendError(f"hf model {arg!r} is a local folder: a revision applies to hub models only")
        if options.trust_remote_code:  # the checkpoint's own modelling code runs: only when asked
            load_kw["trust_remote_code"] = True

        def load(fn, **kw):
            # A hub id is taken from the local Hugging Face cache when it is there (fast, offline,
            # reproducible); only then is the hub asked.
            if "local_files_only" in load_kw:
                return fn(src, **load_kw, **kw)
            try:
                return fn(src, local_files_only=True, **load_kw, **kw)
            except OSError as e:
                why = hub_unreachable()
                if why is not None:
                    raise BackendError(
                        f"cannot load hf model {arg!r}: it is neither a folder here nor in the Hugging Face "
                        f"cache, and the hub cannot be reached ({why}); give a model folder, or download "
                        "the model where there is network") from e
                return fn(src, **load_kw, **kw)

        try:
            config = load(AutoConfig.from_pretrained)
        except OSError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise BackendError(f"cannot load hf model {arg!r}: {first}") from e
        except ValueError as e:
            raise BackendError(f"cannot load hf model {arg!r}: {e}") from e

        num_labels = getattr(config, "num_labels", None) or len(getattr(config, "id2label", {}) or {})
        labels, label_source = resolve_label_order(
            getattr(config, "id2label", None), num_labels, options.label_map, model_name=name
        )
        device = resolve_device(options.device)
        dtype = resolve_dtype(options.dtype, device)
        _set_threads(device, options.threads)

        if local.is_dir():
            check_weights(local)
        from safetensors import SafetensorError

        try:
            tokenizer = load(AutoTokenizer.from_pretrained)
            model = load(AutoModelForSequenceClassification.from_pretrained, dtype=dtype)
        except SafetensorError as e:  # a file the header check passed, or a hub snapshot's
            raise BackendError(f"hf model {arg!r}: a weights file is corrupt or truncated ({e}); "
                               "download or save the model again") from e
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise BackendError(f"cannot load hf model {arg!r}: {first}") from e
        model.to(device)
        model.eval()
        if tokenizer.pad_token is None:  # batches need padding; any special token will do
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        if getattr(model.config, "pad_token_id", None) is None and tokenizer.pad_token_id is not None:
            model.config.pad_token_id = tokenizer.pad_token_id  # decoder-only classifiers need it

        max_length = options.max_length or _default_max_length(tokenizer, config)
        source = _model_source(src, local.is_dir(), config, revision, options.hash_file)
        return cls(model, tokenizer, labels, name=name, source=source, device=device, dtype=dtype,
                   max_length=max_length, batch_size=options.batch_size, label_source=label_source)

    # ------------------------------------------------------------------ interface
    @property
    def identity(self) -> str:
        dtype = str(self.dtype).replace("torch.", "")
        return (f"hf|{self.source}|labels={','.join(self.labels)}|dtype={dtype}"
                f"|max_length={self.max_length}")

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "backend": "hf",
            "model": self.name,
            "labels": {str(i): label for i, label in enumerate(self.labels)},
            "label_source": self.label_source,
            "label_map": format_label_map(dict(enumerate(self.labels))),
            "dtype": str(self.dtype).replace("torch.", ""),
            "max_length": self.max_length,
        }

    def predict(self, pairs: Sequence[Pair]) -> list[Prediction]:
        return collect_batches(self, pairs)

    def predict_batches(self, pairs: Sequence[Pair]) -> Iterator[tuple[list[int], list[Prediction]]]:
        for start in range(0, len(pairs), SORT_CHUNK):
            chunk = pairs[start:start + SORT_CHUNK]
            enc = self.tokenizer(
                [p for p, _ in chunk], [h for _, h in chunk],
                truncation=True, max_length=self.max_length,
            )
            columns = {k: enc[k] for k in self._input_names if k in enc}
            lengths = [len(ids) for ids in columns["input_ids"]]
            order = sorted(range(len(chunk)), key=lambda i: (-lengths[i], i))
            for b in range(0, len(order), self.batch_size):
                local = order[b:b + self.batch_size]
                yield [start + i for i in local], self._run(columns, local)

    def close(self) -> None:
        import gc

        import torch

        self.model = None
        if self.device.type == "cuda":
            # Free the GPU memory now, for the next model; on CPU dropping the reference is enough
            # (a full collection costs half a second after a run).
            gc.collect()
            torch.cuda.empty_cache()

    # ------------------------------------------------------------------ internals
    def _pad(self, columns: dict[str, list[list[int]]], rows: list[int]) -> dict[str, Any]:
        """Tensors for one batch, padded to its longest pair (on the tokenizer's padding side).
        Filled as numpy arrays and handed to torch without a copy (a tensor per row cost ten
        times as much)."""
        import numpy as np
        import torch

        width = max(len(columns["input_ids"][i]) for i in rows)
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        fill = {"input_ids": self.tokenizer.pad_token_id or 0, "token_type_ids": 0}
        batch = {}
        for name, col in columns.items():
            a = np.full((len(rows), width), fill.get(name, 0), dtype=np.int64)
            for r, i in enumerate(rows):
                seq = col[i]
                if left:
                    a[r, width - len(seq):] = seq
                else:
                    a[r, :len(seq)] = seq
            batch[name] = torch.from_numpy(a)
        if "attention_mask" in self._input_names and "attention_mask" not in batch:
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = len(columns["input_ids"][i])
                if left:
                    mask[r, width - n:] = 1
                else:
                    mask[r, :n] = 1
            batch["attention_mask"] = torch.from_numpy(mask)
        return batch

    def _run(self, columns: dict[str, list[list[int]]], rows: list[int]) -> list[Prediction]:
        import torch

        batch = {k: v.to(self.device) for k, v in self._pad(columns, rows).items()}
        oom = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
        try:
            with torch.inference_mode():
                logits = self.model(**batch).logits.float()
        except oom as e:
            raise BackendError(
                f"{self.name}: out of memory on a batch of {len(rows)} pairs; "
                "try a smaller --batch-size or --max-length"
            ) from e
        self.forward_calls += 1
        finite = torch.isfinite(logits).all(dim=-1)
        if not bool(finite.all()):  # argmax would call NaN the largest: every pair one label
            raise BackendError(
                f"{self.name}: the model output non-finite logits (NaN or infinity) for "
                f"{int((~finite).sum())} of {len(rows)} pairs in a batch; its weights hold NaN or "
                "infinite values, or the dtype overflows (try --dtype float32)"
            )
        probs = torch.softmax(logits, dim=-1).cpu().tolist()
        best = logits.argmax(dim=-1).cpu().tolist()
        return [
            Prediction(self.labels[k], {self.labels[j]: float(row[j]) for j in range(3)})
            for k, row in zip(best, probs, strict=True)
        ]


def _set_threads(device, threads: int | None) -> None:
    if device.type != "cpu":
        return
    import torch

    if threads:
        torch.set_num_threads(int(threads))
    elif torch.get_num_threads() > _available_cpus():
        # torch counts the host's cores, not the ones this process may use (containers)
        torch.set_num_threads(_available_cpus())


def _default_max_length(tokenizer, config) -> int:
    limit = getattr(tokenizer, "model_max_length", None)
    if not isinstance(limit, int) or limit <= 0 or limit > 100_000:
        limit = min(int(getattr(config, "max_position_embeddings", 512) or 512), 512)
    return limit


def _model_source(src: str, is_local: bool, config, revision, hash_file) -> str:
    """Name plus commit for a hub model; a digest of the files for a folder (or when no commit
    can be found)."""
    if is_local:
        return f"sha256:{folder_digest(Path(src), hash_file)}"
    commit = getattr(config, "_commit_hash", None)
    folder = None
    try:
        from transformers.utils import cached_file

        resolved = cached_file(src, "config.json", revision=revision, local_files_only=True)
        if resolved:
            folder = Path(resolved).parent
            if not commit and re.fullmatch(r"[0-9a-f]{40}", folder.name):
                commit = folder.name
    except (OSError, ValueError, ImportError):
        pass
    if commit:
        return f"{src}@{commit}"
    if folder is not None:
        return f"{src}|sha256:{folder_digest(folder, hash_file)}"
    return f"{src}@{revision or 'unknown-revision'}"
