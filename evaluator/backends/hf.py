"""Any transformers sequence-classification checkpoint as an NLI backend.

Labels come from the checkpoint's own ``config.id2label``, normalised by name, never by index
(roberta/bart/deberta-large-mnli say 0=CONTRADICTION, ModernBERT-base-nli says 0=entailment).
Checkpoints with placeholder labels (LABEL_0..2) need an explicit label map; anything without
three NLI labels is refused, and so is a checkpoint whose labels would mean nothing: a folder
without tokenizer files, weights transformers had to complete at random (no classification head,
another architecture's config), weights of another shape than the config's, a tokenizer larger
than the embedding, a --max-length beyond the model's positions (docs/models.md).

Work is scheduled for throughput (docs/speed.md): pairs are tokenised in chunks of SORT_CHUNK by
the fast tokenizer in one call (the next chunk on a helper thread while the model works on this
one), sorted by length (longest first, so that an out-of-memory batch shows up at once), cut into
batches of --batch-size pairs (and at most --batch-tokens padded tokens), padded per batch to its
longest pair, run under ``torch.inference_mode`` on one or several devices, and handed back in
input order. Outputs stay on the device: softmax, argmax and the finiteness check run there, and
results come back to the host in one copy per group of batches (FLUSH_PAIRS pairs or
FLUSH_SECONDS), not one synchronisation per batch.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transnli.common.digest import sha256_file

from ..errors import BackendError, LabelError
from ..labels import LABELS, format_label_map, is_generic_label, normalize_label, parse_label_map
from .base import BackendOptions, NLIBackend, Pair, Prediction, collect_batches
from .batching import AUTO_CANDIDATES, CPU_AUTO_BATCH, Packed, PairTemplate, plan_batches

log = logging.getLogger("transnli")

#: pairs tokenised and sorted together; bounds memory on very large runs
SORT_CHUNK = 16384
#: results come back from the device when this many pairs are waiting, or after FLUSH_SECONDS
FLUSH_PAIRS = 4096
FLUSH_SECONDS = 0.5
_TEXT_SUFFIXES = (".json", ".txt", ".model")
_WEIGHT_SETS = (
    ("model.safetensors", None),
    (None, "model.safetensors.index.json"),
    ("pytorch_model.bin", None),
    (None, "pytorch_model.bin.index.json"),
)
DTYPES = ("auto", "float32", "float16", "bfloat16")
#: a model folder needs at least one of these: without any, transformers still builds a tokenizer,
#: from nothing (a handful of special tokens), and every word becomes [UNK]
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "spm.model",
    "tokenizer.model",
    "sentencepiece.bpe.model",
)


# --------------------------------------------------------------------------- pure helpers
def resolve_label_order(
    id2label: Mapping[Any, str] | None,
    num_labels: int,
    label_map: str | None = None,
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
                    model_name,
                    shown,
                    label_map,
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
            f"{model_name} has placeholder labels ({shown}), so which class is entailment cannot "
            "be read from it; pass --label-map, e.g. --label-map "
            "0=contradiction,1=neutral,2=entailment (check the model card)"
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


def resolve_devices(name: str | None) -> list:
    """The devices to run on: "cuda" (and "auto" when there is CUDA) means every visible GPU,
    "cuda:0,cuda:1" a list (any devices, comma-separated, all of one type), anything else one."""
    import torch

    text = (name or "auto").strip().lower()
    if "," in text:
        devices = [resolve_device(part) for part in text.split(",") if part.strip()]
        if not devices:
            raise BackendError(
                f"unknown device {name!r} (use auto, cpu, cuda, cuda:N, cuda:0,cuda:1 or mps)"
            )
        if len({d.type for d in devices}) > 1:
            raise BackendError(
                f"devices {name!r} mix kinds; list devices of one kind, e.g. cuda:0,cuda:1"
            )
        if len(set(devices)) < len(devices) and devices[0].type == "cuda":
            raise BackendError(f"device list {name!r} names a GPU twice")
        return devices
    device = resolve_device(text)
    if device.type == "cuda" and device.index is None:
        return [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    return [device]


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
                shards = sorted(
                    set(json.loads((folder / index).read_text("utf-8"))["weight_map"].values())
                )
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
        end = max(
            (int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0
        )
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
            raise BackendError(
                f"model folder {folder}: weights file {path.name} is corrupt or truncated "
                f"({why}); download or save the model again"
            )


def tokenizer_problem(folder: Path) -> str | None:
    """Why a model folder's tokenizer cannot be the model's own (no tokenizer file at all), or
    None. `transnli doctor` and the hf backend share this check."""
    if any((folder / name).is_file() for name in TOKENIZER_FILES):
        return None
    return (
        f"model folder {folder} has no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...): "
        "transformers would build an empty vocabulary and read every word as unknown; save the "
        "tokenizer the model was trained with into it (tokenizer.save_pretrained(FOLDER))"
    )


def loading_problem(
    info: Mapping[str, Any], base_prefix: str, model_type: str, folder: str
) -> str | None:
    """What transformers' loading info (`from_pretrained(..., output_loading_info=True)`) says is
    wrong with a checkpoint for labelling, or None. Missing keys are weights transformers
    initialised at random: only in the head (outside the `base_prefix` encoder) when the folder
    holds a bare encoder, in the encoder too when config.json is another architecture's.
    Mismatched keys are weights of another shape than the config's (loaded with
    ignore_mismatched_sizes, so they are reported here instead of raised). Unexpected keys alone
    are harmless (roberta-large-mnli ships a pooler its classifier does not use)."""
    missing = sorted(info.get("missing_keys") or ())
    mismatched = sorted(info.get("mismatched_keys") or ())
    unexpected = sorted(info.get("unexpected_keys") or ())
    if mismatched:
        key, in_file, in_model = mismatched[0]
        more = f" (and {len(mismatched) - 1} more)" if len(mismatched) > 1 else ""
        return (
            f"model folder {folder}: weights of the wrong shape: {key} is "
            f"{list(in_file)} in the weights file but {list(in_model)} for the {model_type} "
            f"model config.json describes{more}; save the config and the weights together again"
        )
    if not missing:
        return None
    encoder = [k for k in missing if base_prefix and k.startswith(base_prefix + ".")]
    if not encoder:
        return (
            f"model folder {folder} has no classification head ({', '.join(missing[:4])} are not "
            "in the weights file, so transformers would initialise them at random and every run "
            "would label differently): it is a base encoder, not an NLI model; give a checkpoint "
            "fine-tuned for NLI"
        )
    unused = f", {len(unexpected)} in the file unused (e.g. {unexpected[0]})" if unexpected else ""
    return (
        f"model folder {folder}: the weights do not fit the {model_type} architecture config.json "
        f"names: {len(missing)} weights missing from the file (e.g. {encoder[0]}){unused}; "
        "config.json and the weights come from different models: save them together again"
    )


def vocabulary_problem(tokens: int, embedding_rows: int, folder: str) -> str | None:
    """A tokenizer that hands out ids the model's embedding has no row for, or None."""
    if tokens <= embedding_rows:
        return None
    return (
        f"model folder {folder}: its tokenizer has {tokens} tokens but the model's embedding "
        f"only {embedding_rows} rows, so ids from {embedding_rows} on cannot be looked up: the "
        "tokenizer is not this model's; save the tokenizer the model was trained with into it"
    )


def positions_problem(max_length: int, config, name: str) -> str | None:
    """A --max-length longer than the positions the model has (config.max_position_embeddings),
    or None: longer pairs would fail in the middle of a run."""
    positions = getattr(config, "max_position_embeddings", None)
    if not isinstance(positions, int) or max_length <= positions:
        return None
    return (
        f"{name}: --max-length {max_length} is longer than the {positions} positions the model "
        f"has (max_position_embeddings in config.json); give --max-length {positions} or less"
    )


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
@dataclass(frozen=True)
class _ModelLocation:
    """Where an hf model spec points: a local folder, or a hub id (with a revision)."""

    arg: str  # the spec's argument, as given
    path: Path  # the argument as a path (a folder when the model is local)
    src: str  # what from_pretrained is given
    name: str
    revision: str | None
    load_kw: dict[str, Any]

    def load(self, fn, **kw):
        """`fn(src, ...)`: a from_pretrained. A hub id is taken from the local Hugging Face cache
        when it is there (fast, offline, reproducible); only then is the hub asked."""
        if "local_files_only" in self.load_kw:
            return fn(self.src, **self.load_kw, **kw)
        try:
            return fn(self.src, local_files_only=True, **self.load_kw, **kw)
        except OSError as e:
            why = hub_unreachable()
            if why is not None:
                raise BackendError(
                    f"cannot load hf model {self.arg!r}: it is neither a folder here nor in the "
                    f"Hugging Face cache, and the hub cannot be reached ({why}); give a model "
                    "folder, or download the model where there is network"
                ) from e
            return fn(self.src, **self.load_kw, **kw)


def _locate(arg: str, options: BackendOptions) -> _ModelLocation:
    """Read an hf spec's argument: a model folder, or a hub id with an optional "@revision"."""
    local = Path(arg).expanduser()
    revision = None
    if local.is_dir():
        src, load_kw = str(local), {"local_files_only": True}
        name = str(local)
    elif local.exists():
        raise BackendError(
            f"hf model {arg!r} is a file, not a model folder"
            + (
                " (labels in a file? use precomputed:PATH)"
                if local.suffix in (".jsonl", ".json")
                else ""
            )
        )
    elif _looks_like_path(arg):
        raise BackendError(f"hf model folder {arg!r} does not exist")
    else:
        src, _, revision = arg.partition("@")
        revision = revision or None
        if options.revision and revision and options.revision != revision:
            raise BackendError(
                f"hf model {arg!r}: two revisions given ({revision} after '@', "
                f"{options.revision} as an option); give one"
            )
        revision = revision or options.revision
        name = src
        load_kw = {"revision": revision} if revision else {}
    if local.is_dir() and options.revision:
        raise BackendError(
            f"hf model {arg!r} is a local folder: a revision applies to hub models only"
        )
    if options.trust_remote_code:  # the checkpoint's own modelling code runs: only when asked
        load_kw["trust_remote_code"] = True
    return _ModelLocation(arg, local, src, name, revision, load_kw)


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _load_model(where: _ModelLocation, dtype, device):
    """The tokenizer and the model, on `device` in eval mode, both with a pad token. A folder
    without tokenizer files, a checkpoint transformers had to complete with random weights (no
    classification head, another architecture's config, weights of another shape) and a tokenizer
    larger than the embedding are refused here, before any pair is labelled."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if where.path.is_dir():
        check_weights(where.path)
    from safetensors import SafetensorError

    try:
        tokenizer = where.load(AutoTokenizer.from_pretrained)
        # A hub model's snapshot holds its tokenizer files once the tokenizer has been loaded
        folder = where.path if where.path.is_dir() else cached_snapshot(where.src, where.revision)
        if folder is not None and (why := tokenizer_problem(folder)):
            raise BackendError(why)
        with _quiet_transformers():  # its load report is read below, and said in one line
            model, info = where.load(
                AutoModelForSequenceClassification.from_pretrained,
                dtype=dtype,
                output_loading_info=True,
                ignore_mismatched_sizes=True,
            )
    except SafetensorError as e:  # a file the header check passed, or a hub snapshot's
        raise BackendError(
            f"hf model {where.arg!r}: a weights file is corrupt or truncated ({e}); "
            "download or save the model again"
        ) from e
    except (OSError, ValueError, RuntimeError) as e:
        raise BackendError(f"cannot load hf model {where.arg!r}: {_first_line(e)}") from e
    shown = str(folder or where.name)
    model_type = getattr(model.config, "model_type", "?")
    why = loading_problem(info, getattr(model, "base_model_prefix", ""), model_type, shown)
    if why is None:
        why = vocabulary_problem(len(tokenizer), model.get_input_embeddings().num_embeddings, shown)
    if why is not None:
        raise BackendError(why)
    model.to(device)
    model.eval()
    if tokenizer.pad_token is None:  # batches need padding; any special token will do
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    if getattr(model.config, "pad_token_id", None) is None and tokenizer.pad_token_id is not None:
        model.config.pad_token_id = tokenizer.pad_token_id  # decoder-only classifiers need it
    return model, tokenizer


def cached_snapshot(src: str, revision: str | None) -> Path | None:
    """The Hugging Face cache folder a hub model is read from, when it is there already."""
    try:
        from transformers.utils import cached_file

        resolved = cached_file(src, "config.json", revision=revision, local_files_only=True)
    except (OSError, ValueError, ImportError):
        return None
    return Path(resolved).parent if resolved else None


@contextmanager
def _quiet_transformers():
    """transformers' own warnings off for one call (its multi-line load report among them)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


class HFBackend(NLIBackend):
    """A transformers AutoModelForSequenceClassification with its AutoTokenizer."""

    def __init__(
        self,
        model,
        tokenizer,
        labels: Sequence[str],
        *,
        name: str,
        source: str,
        device,
        dtype,
        max_length: int,
        batch_size: int | str = 32,
        label_source: str = "config",
        batch_tokens: int | None = None,
        devices: Sequence | None = None,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.labels = tuple(labels)
        self.name = name
        self.source = source
        self.device = device
        self.devices = list(devices or [device])
        self.dtype = dtype
        self.max_length = int(max_length)
        # "auto": CPU_AUTO_BATCH on a CPU; on CUDA the largest that fits, found on the first chunk
        self.auto_batch = batch_size == "auto"
        self.batch_size = CPU_AUTO_BATCH if self.auto_batch else max(1, int(batch_size))
        self.batch_tokens = int(batch_tokens) if batch_tokens else None
        self.label_source = label_source
        accepted = set(inspect.signature(model.forward).parameters)
        self._input_names = [
            k for k in ("input_ids", "attention_mask", "token_type_ids") if k in accepted
        ]
        self.forward_calls = 0  # batches run through the model (tests and benchmarks read it)
        # One replica per device; replicas[0] is the model itself (already on devices[0]).
        self.replicas = [model] + [_replica(model, d) for d in self.devices[1:]]
        self._fast = bool(getattr(tokenizer, "is_fast", False)) and hasattr(tokenizer, "_tokenizer")
        self._probed = False
        self._by_sentence = self._fast  # until a tokenizer's pairs turn out not to be joins

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_spec(cls, arg: str, options: BackendOptions) -> HFBackend:
        from ..gcpolicy import loading

        with loading():  # torch, transformers and the model: millions of long-lived objects
            return cls._load(arg, options)

    @classmethod
    def _load(cls, arg: str, options: BackendOptions) -> HFBackend:
        import torch  # noqa: F401 - fail here, clearly, if torch is missing
        from transformers import AutoConfig
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # "Loading weights" bars; ours show the labelling

        where = _locate(arg, options)
        try:
            config = where.load(AutoConfig.from_pretrained)
        except OSError as e:
            raise BackendError(f"cannot load hf model {arg!r}: {_first_line(e)}") from e
        except ValueError as e:
            raise BackendError(f"cannot load hf model {arg!r}: {e}") from e

        num_labels = getattr(config, "num_labels", None) or len(
            getattr(config, "id2label", {}) or {}
        )
        labels, label_source = resolve_label_order(
            getattr(config, "id2label", None), num_labels, options.label_map, model_name=where.name
        )
        devices = resolve_devices(options.device)
        device = devices[0]
        dtype = resolve_dtype(options.dtype, device)
        _set_threads(device, options.threads)

        model, tokenizer = _load_model(where, dtype, device)
        max_length = options.max_length or _default_max_length(tokenizer, config)
        if why := positions_problem(max_length, config, where.name):
            raise BackendError(why)
        source = _model_source(
            where.src, where.path.is_dir(), config, where.revision, options.hash_file
        )
        backend = cls(
            model,
            tokenizer,
            labels,
            name=where.name,
            source=source,
            device=device,
            dtype=dtype,
            max_length=max_length,
            label_source=label_source,
            batch_size="auto" if options.batch_auto else options.batch_size,
            batch_tokens=options.batch_tokens,
            devices=devices,
        )
        if options.compile:
            backend.compile()
        return backend

    # ------------------------------------------------------------------ interface
    @property
    def identity(self) -> str:
        dtype = str(self.dtype).replace("torch.", "")
        return (
            f"hf|{self.source}|labels={','.join(self.labels)}|dtype={dtype}"
            f"|max_length={self.max_length}"
        )

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

    def unknown_token_share(self, sentences: Sequence[str]) -> float | None:
        unk = getattr(self.tokenizer, "unk_token_id", None)
        if unk is None or not sentences:
            return None
        ids = self.tokenizer(list(sentences), add_special_tokens=False)["input_ids"]
        total = sum(len(x) for x in ids)
        return sum(x.count(unk) for x in ids) / total if total else None

    def predict_batches(
        self, pairs: Sequence[Pair]
    ) -> Iterator[tuple[list[int], list[Prediction]]]:
        """Batches in length order; yields (indices, predictions) per batch, a group of batches at
        a time (those whose results came back from the device together)."""
        from concurrent.futures import ThreadPoolExecutor

        starts = range(0, len(pairs), SORT_CHUNK)
        # The next chunk is tokenised on a helper thread while this one runs (the fast tokenizer
        # releases the GIL), so on a GPU the device does not wait for the tokenizer.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="transnli-tokenize") as pool:
            ahead = None
            for start in starts:
                packed = (
                    ahead or pool.submit(self._tokenize, pairs[start : start + SORT_CHUNK])
                ).result()
                ahead = None
                if start + SORT_CHUNK < len(pairs):
                    nxt = start + SORT_CHUNK
                    ahead = pool.submit(self._tokenize, pairs[nxt : nxt + SORT_CHUNK])
                yield from self._label_chunk(packed, start)

    def close(self) -> None:
        import gc

        import torch

        self.model = None
        self.replicas = []
        if self.device.type == "cuda":
            # Free the GPU memory now, for the next model; on CPU dropping the reference is enough
            # (a full collection costs half a second after a run).
            gc.collect()
            torch.cuda.empty_cache()

    def compile(self) -> None:
        """torch.compile every replica (opt-in: --compile). Shapes vary per batch, so it compiles
        with dynamic shapes; the first batches pay for the compilation."""
        import torch

        self.replicas = [torch.compile(m, dynamic=True) for m in self.replicas]

    # ------------------------------------------------------------------ internals
    def _tokenize(self, chunk: Sequence[Pair]) -> Packed:
        """Token columns of a chunk of pairs, in one call of the tokenizer."""
        if self._fast and chunk:
            # The Rust tokenizer straight away: transformers' own call would turn every pair into
            # Python dicts and lists first (about half the host time per pair with a small model).
            # One ordinary call on the first pair sets truncation and special tokens on the Rust
            # tokenizer exactly as a full call would; its ids are checked against it.
            probe = self.tokenizer(
                [chunk[0][0]], [chunk[0][1]], truncation=True, max_length=self.max_length
            )
            if self._by_sentence:
                packed = self._tokenize_sentences(chunk, probe)
                if packed is not None:
                    return packed
            encodings = self.tokenizer._tokenizer.encode_batch(list(chunk))
            if encodings[0].ids == probe["input_ids"][0]:
                columns = {"input_ids": [e.ids for e in encodings]}
                if "token_type_ids" in self._input_names and "token_type_ids" in probe:
                    columns["token_type_ids"] = [e.type_ids for e in encodings]
                return Packed.from_lists(columns)
        enc = self.tokenizer(
            [p for p, _ in chunk],
            [h for _, h in chunk],
            truncation=True,
            max_length=self.max_length,
        )
        return Packed.from_lists(
            {k: enc[k] for k in self._input_names if k in enc and k != "attention_mask"}
        )

    def _tokenize_sentences(self, chunk: Sequence[Pair], probe) -> Packed | None:
        """Each distinct sentence tokenised once, pairs joined from them with the tokenizer's pair
        template (a premise shared by many pairs, H and H' in three pairs each: a third of the
        tokenising work). None, and the pair-by-pair path, when the tokenizer's pairs are not such
        joins, when a pair needs truncating, or when a sample of pairs differs from the
        tokenizer's own pair encoding."""
        import numpy as np

        rust = self.tokenizer._tokenizer
        with_types = "token_type_ids" in self._input_names and "token_type_ids" in probe
        # The template is read off a pair whose sentences both have tokens: with an empty one,
        # where the special tokens go would be ambiguous.
        k = next((i for i, (p, h) in enumerate(chunk[:256]) if p.strip() and h.strip()), None)
        if k is None:
            return None
        (whole,) = rust.encode_batch([chunk[k]])
        first_a, first_b = rust.encode_batch(list(chunk[k]), add_special_tokens=False)
        template = PairTemplate.infer(
            whole.ids, whole.type_ids if with_types else None, first_a.ids, first_b.ids
        )
        if template is None:
            self._by_sentence = False
            return None
        index: dict[str, int] = {}
        a = np.fromiter(
            (index.setdefault(p, len(index)) for p, _ in chunk), dtype=np.int64, count=len(chunk)
        )
        b = np.fromiter(
            (index.setdefault(h, len(index)) for _, h in chunk), dtype=np.int64, count=len(chunk)
        )
        encodings = rust.encode_batch(list(index), add_special_tokens=False)
        sentences = Packed.from_lists({"input_ids": [e.ids for e in encodings]})
        if (
            int((sentences.lengths[a] + sentences.lengths[b]).max()) + template.extra
            > self.max_length
        ):
            return None  # some pair is truncated: the tokenizer's own rule decides how
        packed = template.join(sentences, a, b, with_types)
        if packed.flat["input_ids"][: int(packed.lengths[0])].tolist() != probe["input_ids"][0]:
            # transformers' own call is the reference, as on the pair-by-pair path
            self._by_sentence = False
            return None
        sample = sorted({0, k, len(chunk) - 1, *range(0, len(chunk), max(1, len(chunk) // 16))})
        for i, enc in zip(sample, rust.encode_batch([chunk[i] for i in sample]), strict=True):
            o, n = int(packed.offsets[i]), int(packed.lengths[i])
            if packed.flat["input_ids"][o : o + n].tolist() != enc.ids or (
                with_types and packed.flat["token_type_ids"][o : o + n].tolist() != enc.type_ids
            ):
                log.debug(
                    "%s: pairs are not joined sentences for this tokenizer; tokenising pairs",
                    self.name,
                )
                self._by_sentence = False
                return None
        return packed

    def _label_chunk(
        self, packed: Packed, start: int
    ) -> Iterator[tuple[list[int], list[Prediction]]]:
        if self.auto_batch and not self._probed:
            self._probed = True
            self.batch_size = self._probe_batch_size(packed)
        batches = plan_batches(packed.lengths, self.batch_size, self.batch_tokens)
        pending: list[tuple[Any, Any, int]] = []  # (rows, logits on the device, device index)
        waiting, since = 0, time.perf_counter()
        for k, rows in enumerate(batches):
            d = k % len(self.devices)
            pending.append(
                (rows, self._forward(d, self._to_device(self._pad_packed(packed, rows), d)), d)
            )
            waiting += len(rows)
            if waiting >= FLUSH_PAIRS or time.perf_counter() - since >= FLUSH_SECONDS:
                yield from self._fetch(pending, start)
                pending, waiting, since = [], 0, time.perf_counter()
        if pending:
            yield from self._fetch(pending, start)

    def _pad_packed(self, packed: Packed, rows) -> dict[str, Any]:
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        fill = {"input_ids": self.tokenizer.pad_token_id or 0, "token_type_ids": 0}
        mask = "attention_mask" if "attention_mask" in self._input_names else None
        return packed.pad(rows, fill, left=left, mask_name=mask)

    def _pad(self, columns: dict[str, list[list[int]]], rows: list[int]) -> dict[str, Any]:
        """Tensors for one batch, padded to its longest pair (on the tokenizer's padding side)."""
        import torch

        packed = Packed.from_lists(columns)
        return {k: torch.from_numpy(v) for k, v in self._pad_packed(packed, rows).items()}

    def _to_device(self, arrays: dict[str, Any], d: int) -> dict[str, Any]:
        """numpy -> tensors on device d: on CUDA through pinned memory without waiting (the copy
        is queued on the stream before the forward pass that reads it)."""
        import torch

        device = self.devices[d]
        if device.type == "cuda":
            return {
                k: torch.from_numpy(v).pin_memory().to(device, non_blocking=True)
                for k, v in arrays.items()
            }
        return {k: torch.from_numpy(v).to(device) for k, v in arrays.items()}

    def _forward(self, d: int, batch: dict[str, Any]):
        """Float logits of one batch, left on the device (no synchronisation here)."""
        import torch

        oom = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
        try:
            with torch.inference_mode():
                logits = self.replicas[d](**batch).logits.float()
        except oom as e:
            raise BackendError(
                f"{self.name}: out of memory on a batch of {len(next(iter(batch.values())))} "
                "pairs; try a smaller --batch-size, --batch-tokens or --max-length"
            ) from e
        except (IndexError, RuntimeError) as e:  # inputs the checks at loading did not foresee
            ids = batch["input_ids"]
            raise BackendError(
                f"{self.name}: the model failed on a batch of {ids.shape[0]} pairs of up to "
                f"{ids.shape[1]} tokens ({_first_line(e)}); an id or a length the model has no "
                "embedding for does this: check its tokenizer and --max-length"
            ) from e
        self.forward_calls += 1
        return logits

    def _fetch(self, pending: list, start: int) -> list[tuple[list[int], list[Prediction]]]:
        """Softmax, argmax and the finiteness check on the device, then one copy per device back
        to the host for a group of batches; (indices, Predictions) per batch, in batch order."""
        import numpy as np
        import torch

        host = {}
        with torch.inference_mode():
            for d in sorted({d for _, _, d in pending}):
                logits = torch.cat([x for _, x, dd in pending if dd == d])
                finite = torch.isfinite(logits).all(dim=-1, keepdim=True)
                packed = torch.cat(
                    [
                        torch.softmax(logits, dim=-1),
                        logits.argmax(dim=-1, keepdim=True).float(),
                        finite.float(),
                    ],
                    dim=1,
                )
                host[d] = packed.cpu().numpy()
        rows = []
        used = dict.fromkeys(host, 0)
        for r, _, d in pending:  # back to batch order: batch k came from device k mod D
            n = len(r)
            rows.append(host[d][used[d] : used[d] + n])
            used[d] += n
        table = np.concatenate(rows)
        bad = int((table[:, 4] == 0).sum())
        if bad:  # argmax would call NaN the largest: every pair one label
            raise BackendError(
                f"{self.name}: the model output non-finite logits (NaN or infinity) for "
                f"{bad} of {len(table)} pairs; its weights hold NaN or "
                "infinite values, or the dtype overflows (try --dtype float32)"
            )
        preds = self._predictions(table)
        out, at = [], 0
        for r, _, _ in pending:
            out.append(((r + start).tolist(), preds[at : at + len(r)]))
            at += len(r)
        return out

    def _predictions(self, table) -> list[Prediction]:
        names = self.labels
        best = table[:, 3].astype(int).tolist()
        probs = table[:, :3].tolist()
        return [
            Prediction(names[k], {names[0]: p[0], names[1]: p[1], names[2]: p[2]})
            for k, p in zip(best, probs, strict=True)
        ]

    def _probe_batch_size(self, packed: Packed) -> int:
        """--batch-size auto: CPU_AUTO_BATCH off CUDA; on CUDA the largest of AUTO_CANDIDATES whose
        batch of the chunk's widest pairs runs (the widest batch decides what fits)."""
        import torch

        if self.devices[0].type != "cuda" or not len(packed):
            return CPU_AUTO_BATCH
        order = plan_batches(packed.lengths, 1)
        widest = [int(order[0][0])]
        best = 1
        for size in AUTO_CANDIDATES:
            rows = (widest * size)[:size]
            try:
                for d in range(len(self.devices)):
                    self._forward(d, self._to_device(self._pad_packed(packed, rows), d))
                    torch.cuda.synchronize(self.devices[d])
            except BackendError:  # out of memory
                break
            finally:
                self.forward_calls = 0
            best = size
        torch.cuda.empty_cache()
        log.info("%s: --batch-size auto chose %d", self.name, best)
        return max(1, best)


def _replica(model, device):
    import copy

    return copy.deepcopy(model).to(device).eval()


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
    folder = cached_snapshot(src, revision)
    if folder is not None and not commit and re.fullmatch(r"[0-9a-f]{40}", folder.name):
        commit = folder.name
    if commit:
        return f"{src}@{commit}"
    if folder is not None:
        return f"{src}|sha256:{folder_digest(folder, hash_file)}"
    return f"{src}@{revision or 'unknown-revision'}"
