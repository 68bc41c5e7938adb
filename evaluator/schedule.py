"""Which sentence pairs a run must label.

Per triple (P, H, H') there are four pairs; each *unique* pair is labelled once per model (a
premise shared by many triples costs one call). (P,H') matters only where (H,H') is mutual E or
mutual C — every rule, the paper's and the extras, needs nothing else — so by default it is asked
for in a second stage, only there. `all_pairs=True` asks for it everywhere.

What a triple's record shows follows the same rule (`shows_ph2`): its (P,H') label only where the
rules need it (or everywhere with `all_pairs`), even when that pair was labelled for another
triple, so that a triple's record depends on its own pairs alone and never on which triples were
labelled together (docs/outputs.md, "Which pairs get a label").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from .backends.base import Pair
from .rules import needs_ph2
from .triples import Triple

#: Triples labelled together: a run is labelled block by block, the blocks cut at the same
#: positions of the run whatever `--window` is (a window holds whole blocks), so the pairs asked
#: together, hence the batches and every probability, do not depend on the window.
LABEL_BLOCK = 20_000

PH, HH2, H2H, PH2 = "p_h", "h_h2", "h2_h", "p_h2"
KINDS: tuple[str, str, str, str] = (PH, HH2, H2H, PH2)
KIND_TITLES = {PH: "(P,H)", HH2: "(H,H')", H2H: "(H',H)", PH2: "(P,H')"}

_PAIR: dict[str, Callable[[Triple], Pair]] = {
    PH: lambda t: (t.premise, t.hypothesis),
    HH2: lambda t: (t.hypothesis, t.modified),
    H2H: lambda t: (t.modified, t.hypothesis),
    PH2: lambda t: (t.premise, t.modified),
}


def window_size(window: int | None) -> int | None:
    """`--window` as the run reads it: None (held whole), or rounded up to whole blocks."""
    if not window:
        return None
    return -(-window // LABEL_BLOCK) * LABEL_BLOCK


def blocks(triples: Sequence[Triple]) -> Iterator[Sequence[Triple]]:
    """A window's triples in labelling blocks (a window starts at a block boundary)."""
    for start in range(0, len(triples), LABEL_BLOCK):
        yield triples[start : start + LABEL_BLOCK]


def pair_for(triple: Triple, kind: str) -> Pair:
    """The (premise, hypothesis) the model sees for one kind of pair of a triple."""
    return _PAIR[kind](triple)


def pairs_of(triple: Triple) -> tuple[Pair, Pair, Pair, Pair]:
    """The four pairs of a triple, in KINDS order: (P,H), (H,H'), (H',H), (P,H')."""
    p, h, h2 = triple.premise, triple.hypothesis, triple.modified
    return (p, h), (h, h2), (h2, h), (p, h2)


def unique_pairs(triples: Iterable[Triple], kinds: Sequence[str] = KINDS) -> list[Pair]:
    """The distinct pairs of the given kinds, in first-seen order (triple by triple)."""
    out: dict[Pair, None] = {}
    for t in triples:
        for kind in kinds:
            out.setdefault(_PAIR[kind](t), None)
    return list(out)


def first_stage(triples: Sequence[Triple], all_pairs: bool = False) -> list[Pair]:
    """Pairs needed before anything is known: (P,H), (H,H'), (H',H) (and (P,H') if all_pairs)."""
    return unique_pairs(triples, KINDS if all_pairs else (PH, HH2, H2H))


def shows_ph2(hh2: str | None, h2h: str | None, all_pairs: bool = False) -> bool:
    """Whether a triple's record carries its (P,H') label, given its (H,H') and (H',H) labels:
    where the rules need it (mutual E or C; None labels never are), or always with all_pairs."""
    return all_pairs or (hh2 is not None and h2h is not None and needs_ph2(hh2, h2h))


def second_stage(triples: Sequence[Triple], label_of: Callable[[Pair], str | None]) -> list[Pair]:
    """(P,H') for the triples whose (H,H') is mutual E or C; `label_of(pair)` gives a first-stage
    pair's label."""
    out: dict[Pair, None] = {}
    for t in triples:
        if shows_ph2(label_of(pair_for(t, HH2)), label_of(pair_for(t, H2H))):
            out.setdefault(pair_for(t, PH2), None)
    return list(out)
