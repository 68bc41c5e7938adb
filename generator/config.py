"""Generator configuration: presets (TOML files in resources/presets) plus command-line
overrides."""

from __future__ import annotations

import difflib
import os
import sys
import types
import typing
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from transnli.generator.errors import ConfigError
from transnli.resources import resource_path

ANTONYM_MODES = ("broad", "direct")
POS_CHOICES = ("VERB", "ADJ", "ADV", "NOUN")

PIPELINES = ("wordnet", "llm", "wordnet+llm", "negation", "wordnet+negation")
LLM_PIPELINES = ("llm", "wordnet+llm")
# Pipelines that run without an LLM and can run on several worker processes.
LOCAL_PIPELINES = ("wordnet", "negation", "wordnet+negation")
LLM_BACKENDS = ("openai", "hf-seq2seq", "hf-causal")
# The lm acceptability check's minimum d (docs/generation.md, "The language-model check").
DEFAULT_LM_THRESHOLD = -9.5
# Acceptability backends that read the language model (and can choose among candidates).
LM_CHECKS = ("lm", "judge", "pair-judge")
# Acceptability backends that decide by a trained judge's probability (--judge-model and
# --judge-threshold).
JUDGE_CHECKS = ("judge", "pair-judge")


@dataclass
class GeneratorConfig:
    preset: str = "default"
    description: str = ""
    pipeline: str = "wordnet"
    antonyms: str = "direct"
    pos: list[str] = field(default_factory=lambda: list(POS_CHOICES))
    include_aux: bool = False
    # Candidate filters (transnli.generator.filters.filter_names()), run before the checks.
    filters: list[str] = field(default_factory=list)
    # The quality_model filter: minimum learned quality score, and its model file (None: the shipped
    # resources/models/quality_model.json). See docs/quality-model.md.
    quality_threshold: float = 0.3
    quality_model: str | None = None
    grammar: str = "harper"
    languagetool_url: str | None = None
    acceptability: str = "link-grammar"
    cola_model: str = "textattack/bert-base-uncased-CoLA"
    cola_threshold: float = 0.5
    # The lm acceptability backend: a causal LM (transnli.common.lm spec: "gemma3-270m", a local
    # folder, a .gguf file or a hub id), the minimum d = log p(H') - log p(H), and the weights'
    # dtype. See generator/checks/lm_acceptability.py.
    lm: str = "gemma3-270m"
    lm_threshold: float = DEFAULT_LM_THRESHOLD
    lm_dtype: str = "float32"
    # The language model chooses among candidates (transnli.generator.lm_choice; both need
    # acceptability "lm"): realise up to `lm_antonyms` of a word's antonyms and keep the one with
    # the best d (1: the vector ranker's best only); keep at most `max_per_sentence` triples of a
    # sentence, best d first (0: no limit).
    lm_antonyms: int = 1
    max_per_sentence: int = 0
    # The judge acceptability backend (generator/checks/judge_acceptability.py): a trained judge
    # over the language model's forward pass; its file (None: the shipped one for gemma3-270m) and
    # the minimum probability that H' is good (None: the file's own threshold).
    judge_model: str | None = None
    judge_threshold: float | None = None
    vectors: str | None = None
    spacy_model: str | None = None
    max_chars: int = 400
    device: str = "auto"
    batch_size: int = 256
    seed: int = 0
    limit: int | None = None
    # LLM pipelines (pipeline "llm" / "wordnet+llm"); see generator/llm/
    llm_backend: str = "openai"
    llm_model: str | None = None
    llm_base_url: str | None = None  # None: $TRANSNLI_LLM_BASE_URL, $OPENAI_BASE_URL, else OpenAI's
    llm_api_key_env: str = "OPENAI_API_KEY"  # the *name* of the variable; the key is never stored
    llm_concurrency: int = 8  # parallel requests (openai); generation batch size (hf-*)
    llm_timeout: float = 60.0
    llm_max_retries: int = 5
    llm_temperature: float = 0.0
    llm_max_tokens: int = 512  # 0: send no limit

    def validate(self) -> GeneratorConfig:
        def one_of(name: str, choices) -> None:
            if getattr(self, name) not in choices:
                raise ConfigError(
                    f"{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}"
                )

        one_of("antonyms", ANTONYM_MODES)
        one_of("pipeline", PIPELINES)
        from transnli.generator.checks.registry import check_backends

        one_of("grammar", check_backends("grammar"))
        one_of("acceptability", check_backends("acceptability"))
        from transnli.generator.filters import filter_names

        known = filter_names()
        unknown = [f for f in self.filters if f not in known]
        if unknown:
            raise ConfigError(
                f"unknown filter(s) {', '.join(unknown)}; choose from {', '.join(known)}"
            )
        if not 0.0 <= self.quality_threshold <= 1.0:
            raise ConfigError(
                f"quality_threshold must be between 0 and 1, got {self.quality_threshold}"
            )
        if "quality_model" in self.filters:
            # A bad model file fails here, as a one-line configuration error, before slow loads.
            from transnli.generator.filters.quality_model import QualityModelError, check_model

            try:
                check_model(self.quality_model)
            except QualityModelError as e:
                raise ConfigError(f"quality_model: {e}") from e
        from transnli.common.lm.settings import DTYPES

        one_of("lm_dtype", DTYPES)
        if self.judge_threshold is not None and not 0.0 <= self.judge_threshold <= 1.0:
            raise ConfigError(
                f"judge_threshold must be between 0 and 1, got {self.judge_threshold}"
            )
        self.validate_lm_choice()
        bad = [p for p in self.pos if p not in POS_CHOICES]
        if bad or not self.pos:
            raise ConfigError(
                f"pos must be a non-empty subset of {','.join(POS_CHOICES)}, got {self.pos}"
            )
        if self.max_chars < 1 or self.batch_size < 1:
            raise ConfigError("max_chars and batch_size must be positive")
        if self.limit is not None and self.limit < 0:
            raise ConfigError("limit must be >= 0")
        one_of("llm_backend", LLM_BACKENDS)
        if self.acceptability == "llm" and not self.llm_model:
            raise ConfigError(
                "acceptability llm needs an LLM: give --llm-model (and --llm-base-url for a local "
                "server, or --llm-backend hf-causal / hf-seq2seq for a local model)"
            )
        if self.pipeline in LLM_PIPELINES and not self.llm_model:
            raise ConfigError(
                f"pipeline {self.pipeline} needs an LLM: give --llm-model (a model name for the "
                "openai backend, a hub id or local folder for hf-seq2seq / hf-causal)"
            )
        if (
            self.llm_concurrency < 1
            or self.llm_timeout <= 0
            or self.llm_max_retries < 0
            or self.llm_max_tokens < 0
        ):
            raise ConfigError(
                "llm_concurrency and llm_timeout must be positive, llm_max_retries and "
                "llm_max_tokens >= 0"
            )
        if not 0 <= self.llm_temperature <= 2:
            raise ConfigError("llm_temperature must be between 0 and 2")
        return self

    def validate_lm_choice(self) -> None:
        self.validate_lm_use()
        if self.lm_antonyms < 1 or self.max_per_sentence < 0:
            raise ConfigError("lm_antonyms must be >= 1 and max_per_sentence >= 0")
        if self.lm_antonyms == 1 and not self.max_per_sentence:
            return
        if self.acceptability not in LM_CHECKS or self.pipeline != "wordnet":
            raise ConfigError(
                "lm_antonyms > 1 and max_per_sentence need the wordnet pipeline with "
                "--acceptability lm, judge or pair-judge (the language model's scores choose)"
            )

    def validate_lm_use(self, given: Sequence[str] = ()) -> None:
        """The language model's settings are refused where nothing uses them: a --lm that is
        silently ignored would let a user believe their model judged the run. The lm and judge
        checks use the model (lm, lm_dtype); the threshold is the lm check's. `given`: the
        settings a user named, refused even at their default values."""
        from transnli.common.lm.settings import DEFAULT_LM

        users = {
            "lm": (DEFAULT_LM, LM_CHECKS),
            "lm_dtype": ("float32", ("lm", "judge")),
            "lm_threshold": (DEFAULT_LM_THRESHOLD, ("lm",)),
            "judge_model": (None, JUDGE_CHECKS),
            "judge_threshold": (None, JUDGE_CHECKS),
        }
        unused = [
            name
            for name, (default, checks) in users.items()
            if self.acceptability not in checks
            and (name in given or getattr(self, name) != default)
        ]
        if unused:
            raise ConfigError(
                f"{', '.join(unused)} given, but nothing uses it with --acceptability "
                f"{self.acceptability}: the language model scores only with --acceptability lm "
                "(--lm, --lm-threshold, --lm-dtype), judge (--lm, --lm-dtype, --judge-model, "
                "--judge-threshold) or pair-judge (--lm, --judge-model, --judge-threshold)"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def fingerprint_dict(self) -> dict[str, Any]:
        """The settings that decide the output (resuming is refused when these differ)."""
        d = self.to_dict()
        for volatile in ("device", "batch_size", "description"):
            d.pop(volatile)
        for volatile in ("llm_api_key_env", "llm_concurrency", "llm_timeout", "llm_max_retries"):
            d.pop(volatile)
        return d


def preset_names() -> list[str]:
    return sorted(
        p.name[: -len(".toml")]
        for p in resource_path("presets").iterdir()
        if p.name.endswith(".toml")
    )


def load_preset(name_or_path: str, source: str = "") -> dict[str, Any]:
    """A preset's settings, by name or from a .toml file. `source` says where the name came from
    when the user did not type it (e.g. "$TRANSNLI_PRESET"), so a refusal names it."""
    path = Path(name_or_path)
    where = f" (from {source})" if source else ""
    if path.suffix == ".toml":
        if not path.is_file():
            raise ConfigError(f"preset file {name_or_path}{where}: no such file")
        text = path.read_text(encoding="utf-8")
    else:
        res = resource_path("presets", f"{name_or_path}.toml")
        if not res.is_file():
            raise ConfigError(
                f"unknown preset {name_or_path!r}{where}; choose one of "
                f"{', '.join(preset_names())} or pass a .toml file"
            )
        text = res.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"preset {name_or_path}: {e}") from e
    return check_preset_values(name_or_path, data)


def _expected_type(annotation: Any) -> tuple[str, Any]:
    """(wording, test) for a GeneratorConfig field's type; an optional field is checked as its
    non-None type, since TOML cannot write None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if annotation is bool:
        return "true or false", lambda v: isinstance(v, bool)
    if annotation is int:
        return "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)
    if annotation is float:
        return "a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if typing.get_origin(annotation) is list:
        return (
            "a list of strings",
            lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        )
    return "a string", lambda v: isinstance(v, str)


def check_preset_values(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """Refuse unknown settings (with the nearest known name) and values of the wrong type."""
    types_of = typing.get_type_hints(GeneratorConfig)
    for key in sorted(data):
        if key not in types_of:
            near = difflib.get_close_matches(key, types_of, n=1)
            hint = (
                f"; did you mean {near[0]!r}?"
                if near
                else f"; known settings: {', '.join(types_of)}"
            )
            raise ConfigError(f"preset {name}: unknown setting {key!r}{hint}")
        wording, ok = _expected_type(types_of[key])
        if not ok(data[key]):
            raise ConfigError(f"preset {name}: {key} must be {wording}, got {data[key]!r}")
        if types_of[key] is float:
            data[key] = float(data[key])
    return data


def apply_filter_spec(current: list[str], spec: str) -> list[str]:
    """`--filters`: "a,b" replaces the list, "none" empties it, "+a,-b" adds to / removes from
    it."""
    items = [x.strip() for x in spec.split(",") if x.strip()]
    if items == ["none"]:
        return []
    if not items or all(x[0] in "+-" for x in items):
        out = list(current)
        for x in items:
            name = x[1:]
            if x[0] == "+" and name not in out:
                out.append(name)
            elif x[0] == "-" and name in out:
                out.remove(name)
        return out
    if any(x[0] in "+-" for x in items):
        raise ConfigError(
            f"--filters {spec!r}: either list the filters or give +name/-name changes, not both"
        )
    return items


def default_preset() -> str:
    """The preset a run uses when none is named: $TRANSNLI_PRESET (e.g. "fast" on a machine where
    the language model is too slow), else "default"."""
    return os.environ.get("TRANSNLI_PRESET") or "default"


def resolve_config(preset: str | None = None, **overrides: Any) -> GeneratorConfig:
    """Preset values (None: `default_preset()`), then every override that is not None
    (`filters` may be a --filters spec)."""
    source = "$TRANSNLI_PRESET" if not preset and os.environ.get("TRANSNLI_PRESET") else ""
    preset = preset or default_preset()
    values = load_preset(preset, source)
    values["preset"] = preset
    spec = overrides.pop("filters", None)
    values.update({k: v for k, v in overrides.items() if v is not None})
    if spec is not None:
        values["filters"] = (
            apply_filter_spec(list(values.get("filters", [])), spec)
            if isinstance(spec, str)
            else list(spec)
        )
    config = GeneratorConfig(**values).validate()
    config.validate_lm_use(given=[k for k, v in overrides.items() if v is not None])
    return config
