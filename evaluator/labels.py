"""The three NLI labels, their normalisation by name, and what the family logic (families.py,
repair.py) shares about them: the label graph type and FLIP.

Models and label files spell labels in many ways (ENTAILMENT, entailment, entail, ent, "e",
contradiction, CONTRADICT, "c", ...). Everything inside the evaluator uses the three lowercase
names below; `normalize_label` is the only place that reads other spellings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .errors import LabelError

ENTAILMENT = E = "entailment"
NEUTRAL = N = "neutral"
CONTRADICTION = C = "contradiction"
LABELS: tuple[str, str, str] = (E, N, C)
SHORT = {E: "E", N: "N", C: "C"}
# What M(P,H¬) must be given M(P,H) for the negation H¬ of H (contradiction read as "P implies
# not H"): the sneg metric of families.py and the repair of repair.py.
FLIP = {E: C, C: E, N: N}
# A label graph over the members of a sentence family: graph[i][j] = M(member i, member j), None
# on the diagonal and where the model gave no label.
Graph = Sequence[Sequence[str | None]]

_ALIASES = {
    E: ("entailment", "entailed", "entails", "entail", "ent", "e"),
    N: ("neutral", "neut", "neu", "n"),
    C: ("contradiction", "contradictory", "contradicts", "contradict", "contra", "con", "c"),
}
_LOOKUP = {alias: label for label, aliases in _ALIASES.items() for alias in aliases}
_GENERIC = re.compile(r"^label[_\s-]?\d+$")


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "_", name.strip().lower()).strip("_")


def normalize_label(name: object) -> str | None:
    """The canonical label for `name` ("ENTAILMENT" -> "entailment"), or None if it names none."""
    if not isinstance(name, str):
        return None
    return _LOOKUP.get(_key(name))


def parse_label(name: object, where: str = "") -> str:
    """Like `normalize_label`, but an unknown name raises LabelError (prefixed with `where`)."""
    label = normalize_label(name)
    if label is None:
        prefix = f"{where}: " if where else ""
        raise LabelError(
            f"{prefix}{name!r} is not an NLI label (expected entailment, neutral or contradiction, "
            "or a spelling such as ENTAILMENT, entail, e, contradict, c, n)"
        )
    return label


def is_generic_label(name: object) -> bool:
    """True for placeholder names such as LABEL_0 that carry no meaning."""
    return isinstance(name, str) and bool(_GENERIC.match(name.strip().lower()))


def parse_label_map(spec: str) -> dict[int, str]:
    """Read a label map such as "0=contradiction,1=neutral,2=entailment" (also "0:c 1:n 2:e").

    Returns {class index: canonical label}; the three labels must each appear exactly once.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise LabelError("empty label map; expected e.g. 0=contradiction,1=neutral,2=entailment")
    mapping: dict[int, str] = {}
    for item in re.split(r"[,;\s]+", spec.strip()):
        if not item:
            continue
        m = re.fullmatch(r"(?:label_?)?(\d+)\s*[=:]\s*(.+)", item, flags=re.IGNORECASE)
        if not m:
            raise LabelError(
                f"label map item {item!r} is not INDEX=LABEL (e.g. "
                "0=contradiction,1=neutral,2=entailment)"
            )
        index = int(m.group(1))
        if index in mapping:
            raise LabelError(f"label map gives index {index} twice")
        mapping[index] = parse_label(m.group(2), where=f"label map item {item!r}")
    if sorted(mapping.values()) != sorted(LABELS):
        raise LabelError(
            f"label map {spec!r} must name entailment, neutral and contradiction exactly once each"
        )
    return mapping


def format_label_map(mapping: dict[int, str]) -> str:
    return ",".join(f"{i}={mapping[i]}" for i in sorted(mapping))
