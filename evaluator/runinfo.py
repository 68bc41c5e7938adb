"""run_info.json: the facts of one evaluation run that are not results.

summary.json is a pure function of the triples, the models and the settings that can change a
label, so that two runs (on two machines, a month apart) that computed the same labels write the
same bytes and can be compared with `diff`. What differs from run to run - the date, the command
line, the library versions, the device the model actually ran on, how many labels came from the
cache, the time taken - goes into run_info.json beside it instead.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .formatting import write_json

#: distributions whose versions are recorded (importlib.metadata: nothing is imported)
VERSIONED = (
    "transnli",
    "torch",
    "transformers",
    "tokenizers",
    "datasets",
    "spacy",
    "numpy",
    "pandas",
    "scipy",
)
MEMORY_SOURCE = "<memory>"


def run_clock() -> float:
    return time.perf_counter()


def dist_versions(names: Sequence[str] = VERSIONED) -> dict[str, str | None]:
    from transnli.common.versions import dist_version

    return {name: dist_version(name) for name in names}


def memory_source(triples: Sequence[Any]) -> dict[str, Any]:
    """The `triples_files` entry for triples handed over in memory (the Python API): a digest of
    their content stands where a file's sha256 would."""
    h = hashlib.sha256()
    for t in triples:
        h.update(
            json.dumps(
                [t.id, t.dataset, t.premise, t.hypothesis, t.modified, t.gold_label],
                ensure_ascii=False,
            ).encode("utf-8")
            + b"\n"
        )
    return {"path": MEMORY_SOURCE, "sha256": h.hexdigest(), "n_triples": len(triples)}


def _device_name(device: Any) -> str | None:
    """The GPU's name for a CUDA device (torch is loaded by then), else None."""
    if getattr(device, "type", None) != "cuda" or "torch" not in sys.modules:
        return None
    try:
        return sys.modules["torch"].cuda.get_device_name(device)
    except Exception:  # noqa: BLE001 - a name is a nicety
        return None


def model_run_info(model: Any, backend: Any, stats: Any, seconds: float) -> dict[str, Any]:
    """What one model's run used: device and dtype as resolved (not as asked), cache use, time."""
    device = getattr(backend, "device", None)
    dtype = getattr(backend, "dtype", None)
    return {
        "name": model.name,
        "spec": model.canonical,
        "device": str(device) if device is not None else None,
        "device_name": _device_name(device),
        "dtype": str(dtype).replace("torch.", "") if dtype is not None else None,
        "pairs": stats.pairs,
        "from_cache": stats.from_cache,
        "computed": stats.computed,
        "seconds": round(seconds, 3),
    }


def run_info(
    command_line: Sequence[str] | None, models: list[dict[str, Any]], seconds: float
) -> dict[str, Any]:
    torch = sys.modules.get("torch")
    return {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command_line": shlex.join(command_line) if command_line else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": dist_versions(),
        "cuda": getattr(getattr(torch, "version", None), "cuda", None) if torch else None,
        "models": models,
        "seconds": round(seconds, 3),
    }


def write_run_info(out_dir: Path, info: dict[str, Any]) -> Path:
    path = Path(out_dir) / "run_info.json"
    write_json(path, info)
    return path
