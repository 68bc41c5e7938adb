"""A model's labels for the pairs of a run, held compactly.

A dict of Prediction objects (the Prediction, its dict of three probabilities, the dict's slot)
costs several times what the packed arrays do, and a large run asks for millions of pairs, so the
labels were most of a large run's memory (docs/speed.md, 'A million triples'). LabelTable keeps
only the pair -> row index as a dict and packs each row's label (a one-byte code) and its three
probabilities (doubles, exactly as the model gave them) into arrays. It reads like the dict it
replaces (`Mapping[Pair, Prediction]`); a lookup builds the Prediction.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping

from .backends.base import Pair, Prediction
from .labels import LABELS

_LABELS = LABELS
_E, _N, _C = LABELS
_CODE = {label: i for i, label in enumerate(LABELS)}
_NO_LABEL, _OTHER = -1, -2  # no label (an LLM judge's unparseable reply); kept whole in _other
_NAN3 = (float("nan"),) * 3


class LabelTable(Mapping):
    """{(premise, hypothesis): Prediction}, about a third of a dict's memory."""

    __slots__ = ("_index", "_codes", "_probs", "_other")

    def __init__(self, items: Mapping[Pair, Prediction] | Iterable[tuple[Pair, Prediction]] = ()):
        self._index: dict[Pair, int] = {}
        self._codes = array("b")
        self._probs = array("d")  # three a row, in LABELS order; NaN when the backend gave none
        self._other: dict[int, Prediction] = {}  # rows the arrays cannot hold exactly
        self.update(items)

    def __setitem__(self, pair: Pair, pred: Prediction) -> None:
        code, probs = self._pack(pred)
        row = self._index.get(pair)
        if row is None:
            self._index[pair] = len(self._codes)
            self._codes.append(code)
            self._probs.extend(probs)
            row = len(self._codes) - 1
        else:
            self._codes[row] = code
            self._probs[3 * row : 3 * row + 3] = array("d", probs)
        if code == _OTHER:
            self._other[row] = pred
        else:
            self._other.pop(row, None)

    def update(self, items: Mapping[Pair, Prediction] | Iterable[tuple[Pair, Prediction]]) -> None:
        for pair, pred in items.items() if isinstance(items, Mapping) else items:
            self[pair] = pred

    def __getitem__(self, pair: Pair) -> Prediction:
        row = self._index[pair]
        code = self._codes[row]
        if code == _OTHER:
            return self._other[row]
        probs = self._probs
        e = probs[3 * row]
        if e != e:  # NaN: the backend gave no probabilities
            return Prediction(None if code == _NO_LABEL else _LABELS[code])
        return Prediction(
            None if code == _NO_LABEL else _LABELS[code],
            {_E: e, _N: probs[3 * row + 1], _C: probs[3 * row + 2]},
        )

    def label(self, pair: Pair) -> str | None:
        """The pair's label alone (no Prediction built): what the rules and schedules read."""
        row = self._index[pair]
        code = self._codes[row]
        if code >= 0:
            return _LABELS[code]
        return None if code == _NO_LABEL else self._other[row].label

    def unlabelled(self) -> int:
        """How many pairs have no label (an LLM judge's failed or unparseable replies)."""
        return self._codes.count(_NO_LABEL) + sum(
            1 for p in self._other.values() if p.label is None
        )

    def __iter__(self) -> Iterator[Pair]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, pair: object) -> bool:
        return pair in self._index

    @staticmethod
    def _pack(pred: Prediction) -> tuple[int, tuple[float, float, float]]:
        code = _NO_LABEL if pred.label is None else _CODE.get(pred.label, _OTHER)
        probs = pred.probs
        if probs is None:
            return code, _NAN3
        if code == _OTHER or len(probs) != 3:
            return _OTHER, _NAN3
        e, n, c = probs.get(_E), probs.get(_N), probs.get(_C)
        # exactly as given (Python floats, not NaN), or the Prediction is kept whole
        if (
            type(e) is float
            and type(n) is float
            and type(c) is float
            and e == e
            and n == n
            and c == c
        ):
            return code, (e, n, c)
        return _OTHER, _NAN3
