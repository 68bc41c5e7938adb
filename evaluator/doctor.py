"""`transnli doctor`: the generator's resources (transnli.generator.doctor) plus the evaluation
side: torch and the devices it sees, transformers, and any `--model SPEC` given, resolved
without loading weights.

torch's import is the one slow step the report needs (docs/speed.md, 'Doctor'), so it runs in a
child process started first, while this process does the file checks; the report waits for it at
the end. A CPU-only torch build is reported from its installed version alone unless --deep.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from transnli.common.versions import dist_version
from transnli.generator.doctor import ResourceStatus

TORCH_FIX = "pip install torch (CPU), or a CUDA build from pytorch.org"
# What the child process reports about torch: version, CUDA, MPS.
_TORCH_PROBE = (
    "import json, torch\n"
    "cuda = torch.cuda.is_available()\n"
    "mps = getattr(torch.backends, 'mps', None)\n"
    "print(json.dumps({'version': torch.__version__, 'cuda_version': torch.version.cuda,\n"
    "  'cuda': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda "
    "else [],\n"
    "  'mps': bool(mps is not None and mps.is_available())}))\n"
)


class TorchProbe:
    """torch's facts from a child process (started at construction, read by `status`). A CPU-only
    build (its version ends in "+cpu") can only see the CPU, so without `deep` no child is started
    for it: importing torch is most of doctor's time on such a machine."""

    def __init__(self, deep: bool = False) -> None:
        self.proc = None
        self.version = dist_version("torch")
        self.cpu_only = bool(self.version) and self.version.endswith("+cpu") and not deep
        if self.version is not None and not self.cpu_only:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _TORCH_PROBE],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )

    def status(self, timeout: float = 120.0) -> ResourceStatus:
        if self.cpu_only:
            return ResourceStatus(
                "torch",
                True,
                self.version,
                "devices: cpu (a CPU-only build; --deep imports it)",
                TORCH_FIX,
            )
        if self.proc is None:
            return ResourceStatus("torch", False, None, "torch is not installed", TORCH_FIX)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return ResourceStatus(
                "torch", False, self.version, f"import torch took over {timeout:.0f} s", TORCH_FIX
            )
        try:
            facts = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            last = (err.strip().splitlines() or ["no output"])[-1]
            return ResourceStatus(
                "torch", False, self.version, f"import torch failed: {last}", TORCH_FIX
            )
        devices = (
            ["cpu"]
            + [f"cuda:{i} ({name})" for i, name in enumerate(facts["cuda"])]
            + (["mps"] if facts["mps"] else [])
        )
        detail = "devices: " + ", ".join(devices)
        if facts["cuda"]:
            detail += f"; CUDA {facts['cuda_version']}; --device auto uses cuda"
        return ResourceStatus("torch", True, facts["version"], detail, TORCH_FIX)


def _transformers() -> ResourceStatus:
    version = dist_version("transformers")
    fix = "pip install 'transformers>=4.45'"
    if version is None:
        return ResourceStatus(
            "transformers", False, None, "not installed: hf: models cannot be loaded", fix
        )
    return ResourceStatus(
        "transformers",
        True,
        version,
        "hf: models load through AutoModelForSequenceClassification",
        fix,
    )


# --------------------------------------------------------------------------- --model
def _hf_folder(folder: Path, spec, shown: str) -> str:
    """What a model folder holds, checked without loading it; raises BackendError when unusable."""
    from .backends.hf import (
        check_weights,
        model_files,
        resolve_label_order,
        tokenizer_problem,
        vocabulary_problem,
    )
    from .errors import BackendError

    config_path = folder / "config.json"
    if not config_path.is_file():
        raise BackendError(f"{folder} has no config.json: not a transformers model folder")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BackendError(f"{config_path}: unreadable ({e})") from e
    id2label = config.get("id2label") or {}
    num_labels = len(id2label) or int(config.get("num_labels", 0) or 0)
    labels, source = resolve_label_order(
        id2label, num_labels, dict(spec.options).get("label_map"), model_name=shown
    )
    check_weights(folder)
    weights = [p.name for p in model_files(folder) if p.suffix in (".safetensors", ".bin")]
    if not weights:
        raise BackendError(f"{folder} has no weights file (model.safetensors or pytorch_model.bin)")
    if why := tokenizer_problem(folder):  # the same check `evaluate` refuses such a folder by
        raise BackendError(why)
    tokens, rows = _tokenizer_size(folder), config.get("vocab_size")
    known = tokens is not None and isinstance(rows, int)
    if known and (why := vocabulary_problem(tokens, rows, str(folder))):  # as `evaluate` does
        raise BackendError(why)
    order = ", ".join(f"{i}={label}" for i, label in enumerate(labels))
    return (
        f"{config.get('model_type', '?')} model, labels {order} (from the {source}), "
        f"weights {', '.join(weights)}; weights not loaded"
    )


def _tokenizer_size(folder: Path) -> int | None:
    """How many ids a folder's tokenizer.json hands out (its vocabulary and added tokens), read
    without loading it; None without a readable tokenizer.json."""
    try:
        data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
        vocab = data["model"]["vocab"]
        ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab)))
        ids += [t["id"] for t in data.get("added_tokens") or ()]
        return max(ids) + 1 if ids else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def check_model(text: str) -> ResourceStatus:
    """Whether a `--model` spec can be used here, decided without loading the model."""
    from .errors import EvaluatorError
    from .modelspec import parse_model_spec

    try:
        spec = parse_model_spec(text)
    except EvaluatorError as e:
        return ResourceStatus(
            f"model: {text}", False, None, str(e), "fix the spec (see `transnli evaluate --help`)"
        )
    row = f"model: {spec.name}"
    prefix, _, arg = spec.target.partition(":")
    check = SPEC_CHECKS.get(prefix)
    try:
        if check is None:  # a backend registered by a plugin: its own from_spec checks it
            return ResourceStatus(row, True, None, f"backend {prefix}: not checked by doctor", "")
        return check(spec, arg, row)
    except (EvaluatorError, OSError) as e:
        fix = (
            "give an existing file of labelled pairs (see `transnli pairs`)"
            if prefix == "precomputed"
            else "see the detail"
        )
        detail = f"{arg}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
        return ResourceStatus(row, False, None, detail, fix)


def _check_hf(spec, arg: str, row: str) -> ResourceStatus:
    from .backends.hf import hub_unreachable

    if dist_version("transformers") is None:
        return ResourceStatus(
            row, False, None, "transformers is not installed", "pip install transformers"
        )
    local = Path(arg).expanduser()
    if local.is_dir():
        return ResourceStatus(row, True, None, "folder: " + _hf_folder(local, spec, spec.name), "")
    if local.exists() or arg.startswith((".", "/", "~")):
        problem = "is a file, not a model folder" if local.exists() else "does not exist"
        return ResourceStatus(
            row,
            False,
            None,
            f"{arg} {problem}",
            "give the folder holding config.json and the weights",
        )
    repo, _, revision = arg.partition("@")
    revision = revision or dict(spec.options).get("revision")
    fix = (
        f"on a machine with network: hf download {repo}"
        + (f" --revision {revision}" if revision else "")
        + " --local-dir MODEL_DIR; copy MODEL_DIR here and pass hf:MODEL_DIR"
    )
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(repo, "config.json", revision=revision)
    if isinstance(cached, str):
        return ResourceStatus(
            row,
            True,
            None,
            "Hugging Face cache: " + _hf_folder(Path(cached).parent, spec, spec.name),
            fix,
        )
    why = hub_unreachable()
    if why is not None:
        return ResourceStatus(
            row,
            False,
            None,
            f"{repo} is not in the Hugging Face cache and the hub cannot be reached ({why})",
            fix,
        )
    return ResourceStatus(
        row,
        True,
        None,
        f"{repo} is not in the Hugging Face cache; the hub is reachable, so it "
        "will be downloaded on first use",
        fix,
    )


def _check_precomputed(spec, arg: str, row: str) -> ResourceStatus:
    from .backends.precomputed import read_labelled_pairs

    pairs = read_labelled_pairs(arg)
    return ResourceStatus(row, True, None, f"{len(pairs)} labelled pairs in {arg}", "")


def _check_llm(spec, arg: str, row: str) -> ResourceStatus:
    """An LLM judge: a local model (hf-causal, hf-seq2seq) is checked as a folder or in the
    Hugging Face cache, as `evaluate` would load it; a server (openai) by connecting to it."""
    from .backends.llm import split_llm_spec

    backend, model = split_llm_spec(arg)
    if backend == "openai":
        return _check_llm_server(model, row)
    return _check_local_llm(backend, model, row)


def _check_local_llm(backend: str, model: str, row: str) -> ResourceStatus:
    from transnli.common.lm.model_folder import check_model_folder
    from transnli.common.lm.settings import LMError

    local = Path(model).expanduser()
    if local.is_dir():
        try:
            check_model_folder(local)
            config = json.loads((local / "config.json").read_text(encoding="utf-8"))
        except (LMError, OSError, ValueError) as e:
            detail = str(e) if isinstance(e, LMError) else f"{local}/config.json: unreadable"
            return ResourceStatus(
                row,
                False,
                None,
                detail,
                "give a model folder saved by transformers (config.json, weights, tokenizer files)",
            )
        kind = ", ".join(config.get("architectures") or []) or config.get("model_type", "?")
        return ResourceStatus(
            row, True, None, f"{backend} folder: {kind}; weights not loaded (runs locally)", ""
        )
    if local.exists() or model.startswith((".", "/", "~")):
        problem = "is a file, not a model folder" if local.exists() else "does not exist"
        return ResourceStatus(
            row, False, None, f"{model} {problem}", "give the folder holding the model"
        )
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(model, "config.json"), str):
        return ResourceStatus(
            row, True, None, f"{backend}: {model} is in the Hugging Face cache", ""
        )
    return ResourceStatus(
        row,
        False,
        None,
        f"{model} is not a folder and not in the Hugging Face cache",
        f"on a machine with network: hf download {model} --local-dir MODEL_DIR; copy MODEL_DIR "
        f"here and pass llm:{backend}:MODEL_DIR",
    )


def _check_llm_server(model: str, row: str) -> ResourceStatus:
    import socket
    from urllib.parse import urlparse

    from transnli.common.llm.openai_chat import resolve_base_url

    base = resolve_base_url(None)
    url = urlparse(base)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=2.0):
            pass
    except OSError as e:
        return ResourceStatus(
            row,
            False,
            None,
            f"{base}: no connection ({e.strerror or e})",
            "start the server, or set TRANSNLI_LLM_BASE_URL (evaluate: --llm-base-url); a local "
            "model runs as llm:hf-causal:FOLDER",
        )
    return ResourceStatus(
        row, True, None, f"{base} accepts connections (the model name {model!r} is not checked)", ""
    )


# How doctor checks each backend `evaluate` accepts, by spec prefix (evaluator/backends' registry;
# tests/test_doctor.py holds the two in step).
SPEC_CHECKS = {"hf": _check_hf, "precomputed": _check_precomputed, "llm": _check_llm}


def evaluation_checks(
    models: Sequence[str] = (), probe: TorchProbe | None = None
) -> list[ResourceStatus]:
    probe = probe or TorchProbe()
    rows = [_transformers(), *(check_model(m) for m in models)]
    return [probe.status(), *rows]
