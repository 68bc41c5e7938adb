"""A model folder: its files, what identifies it, whether a conversion is whole, and whether what
loads from it is a causal LM with its own tokenizer.

What is loaded is checked to be what it says (docs/generation.md, "The model's files"): a local
folder must hold weights and its tokenizer's files, config.json must name a causal LM, the
checkpoint must hold every weight, and the tokenizer must know the model's vocabulary; anything
else is one LMError line. A model is identified by `model_digest`: its weights, tokenizer files and
configuration (without the keys that say how it was saved), so byte-identical weights saved under
another environment keep their digest, which keys the score cache and a finished run's reuse. A
conversion is whole when its files match the sizes and digest of its record
(`conversion_problem`)."""

from __future__ import annotations

import functools
import hashlib
import json
from contextlib import suppress
from pathlib import Path
from typing import Any

from transnli.common.digest import sha256_file
from transnli.common.folder import write_json_atomic
from transnli.common.lm.settings import LMError

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
