"""Reading a `--model` value: an optional name, the backend spec, and per-model options.

    [NAME=]SPEC[?KEY=VALUE&KEY=VALUE...]

    base=hf:/models/roberta-mnli
    hf:/models/generic?label_map=0=contradiction,1=neutral,2=entailment&dtype=bfloat16
    big=org/model?revision=3f2a...&trust_remote_code=1&max_length=256

The query syntax is a URL's (`?` then `&`-separated items), because a model spec already reads
like one (`hf:` is a scheme, the rest a path) and shells leave `?`, `&` and `=` alone inside
quotes. An item splits at its first `=`, so a label map keeps its own `=` and `,`. Options
override the global flags (--label-map, --dtype, ...) for that model only.

The NAME is what every output calls the model (columns, predictions, summary). Without one the
name is the spec with its default `hf:` prefix dropped and a path normalised, so `hf:/tmp/x`,
`/tmp/x` and `/tmp/x/` are one model, not three columns.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backends.base import DEFAULT_PREFIX, BackendOptions, split_spec
from .backends.hf import DTYPES as DTYPE_CHOICES  # a light import: torch loads in from_spec
from .errors import BackendError, LabelError
from .labels import parse_label_map

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
# A name: no path separator, colon, '?' or '=' (so no spec or path can be read as one).
_NAMED = re.compile(r"^([^:/\\?=~.\s][^:/\\?=]*?)\s*=(.*)$", re.DOTALL)


def _int_at_least(low: int):
    def parse(key: str, value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"{key} must be a whole number, got {value!r}") from None
        if n < low:
            raise ValueError(f"{key} must be at least {low}, got {n}")
        return n

    return parse


def _bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"{key} must be 1/0 (or true/false), got {value!r}")


def _dtype(key: str, value: str) -> str:
    if value not in DTYPE_CHOICES:
        raise ValueError(f"{key} must be one of {', '.join(DTYPE_CHOICES)}, got {value!r}")
    return value


def _label_map(key: str, value: str) -> str:
    try:
        parse_label_map(value)
    except LabelError as e:
        raise ValueError(str(e)) from None
    return value


def _text(key: str, value: str) -> str:
    if not value.strip():
        raise ValueError(f"{key} needs a value")
    return value.strip()


#: option -> value parser; each is a field of BackendOptions
OPTION_PARSERS = {
    "label_map": _label_map,
    "dtype": _dtype,
    "max_length": _int_at_least(8),
    "batch_size": _int_at_least(1),
    "revision": _text,
    "trust_remote_code": _bool,
}
#: which options each backend reads (others would be silently ignored, so they are refused)
BACKEND_OPTIONS = {
    "hf": tuple(OPTION_PARSERS),
    "llm": ("batch_size",),
    "precomputed": (),
}


@dataclass(frozen=True)
class ModelSpec:
    """One `--model` value, read. `target` is the backend spec (`prefix:arg`, normalised) and
    `options` the per-model overrides, in the order given."""

    name: str
    target: str
    options: tuple[tuple[str, Any], ...] = ()
    raw: str = ""

    @property
    def canonical(self) -> str:
        """The spec without the name, options sorted: what decides the labels (run identity)."""
        if not self.options:
            return self.target
        return self.target + "?" + "&".join(f"{k}={_show(v)}" for k, v in sorted(self.options))

    def backend_options(self, base: BackendOptions) -> BackendOptions:
        """The global options with this model's overrides applied."""
        if not self.options:
            return base
        options = dict(self.options)
        if "batch_size" in options:
            options["batch_auto"] = False  # a model's own batch size wins over --batch-size auto
        return dataclasses.replace(base, **options)


def _show(value: Any) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


def _normalise_arg(prefix: str, arg: str) -> str:
    """A local path loses trailing slashes and `./` segments; a hub id or URL stays as given."""
    if prefix in ("hf", "precomputed"):
        expanded = Path(arg).expanduser()
        if expanded.exists() or arg.startswith((".", "/", "~")) or prefix == "precomputed":
            return os.path.normpath(arg)
    return arg


def parse_options(query: str, spec: str) -> list[tuple[str, Any]]:
    """`label_map=0=c,1=n,2=e&dtype=float16` -> [("label_map", ...), ("dtype", "float16")]."""
    out: dict[str, Any] = {}
    for item in query.split("&"):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip().lower().replace("-", "_")
        if key not in OPTION_PARSERS:
            raise BackendError(
                f"model spec {spec!r}: unknown option {key!r} (known: {', '.join(OPTION_PARSERS)})"
            )
        if not sep:
            raise BackendError(f"model spec {spec!r}: option {key!r} needs a value ({key}=VALUE)")
        if key in out:
            raise BackendError(f"model spec {spec!r}: option {key!r} is given twice")
        try:
            out[key] = OPTION_PARSERS[key](key, value.strip())
        except ValueError as e:
            raise BackendError(f"model spec {spec!r}: {e}") from None
    return list(out.items())


def parse_model_spec(text: str) -> ModelSpec:
    """Read one `--model` value; raises BackendError naming the spec for anything wrong."""
    if not isinstance(text, str) or not text.strip():
        raise BackendError("empty model spec")
    raw = text.strip()
    rest, name = raw, None
    m = _NAMED.match(raw)
    if m and not Path(raw).expanduser().exists():
        name, rest = m.group(1).strip(), m.group(2).strip()
        if not rest:
            raise BackendError(f"model spec {raw!r}: nothing after '{name}='")
    options: list[tuple[str, Any]] = []
    if "?" in rest and not Path(rest).expanduser().exists():
        rest, _, query = rest.partition("?")
        options = parse_options(query, raw)
    prefix, arg = split_spec(rest)
    allowed = BACKEND_OPTIONS.get(prefix, ())
    for key, _ in options:
        if key not in allowed:
            where = (
                f"{prefix}: models take {', '.join(allowed)}"
                if allowed
                else f"{prefix}: models take none"
            )
            raise BackendError(f"model spec {raw!r}: option {key!r} does not apply ({where})")
    target = f"{prefix}:{_normalise_arg(prefix, arg)}"
    spec = ModelSpec(name=name or "", target=target, options=tuple(options), raw=raw)
    if not name:
        shown = target[len(DEFAULT_PREFIX) + 1 :] if prefix == DEFAULT_PREFIX else target
        default = shown if not options else shown + spec.canonical[len(target) :]
        spec = dataclasses.replace(spec, name=default)
    return spec


def parse_model_specs(texts) -> list[ModelSpec]:
    """Every `--model` value, read; the same model given twice is kept once, two different models
    under one name are an error."""
    by_name: dict[str, ModelSpec] = {}
    for text in texts:
        if not text or not str(text).strip():
            continue
        spec = parse_model_spec(str(text))
        seen = by_name.get(spec.name)
        if seen is None:
            by_name[spec.name] = spec
        elif seen.canonical != spec.canonical:
            raise BackendError(
                f"two models are named {spec.name!r} ({seen.raw!r} and {spec.raw!r}); "
                "name them apart with NAME=SPEC"
            )
    return list(by_name.values())
