"""LabelTable: a model's labels held compactly, read back exactly as they were given."""

from __future__ import annotations

from transnli.evaluator.backends.base import Prediction
from transnli.evaluator.label_table import LabelTable

E, N, C = "entailment", "neutral", "contradiction"


def test_predictions_come_back_exactly():
    given = {
        ("p", "h"): Prediction(E, {C: 0.1, E: 0.7000000000000001, N: 0.19999999999999996}),
        ("p", "h2"): Prediction(C),  # no probabilities (an LLM judge)
        ("h", "h2"): Prediction(None),  # no label (an unparseable reply)
        ("h2", "h"): Prediction("maybe", {"maybe": 1.0}),  # anything else is kept whole
        ("q", "r"): Prediction(N, {E: 0, N: 1, C: 0}),  # ints stay ints
    }
    table = LabelTable(given)
    assert len(table) == 5 and dict(table) == given
    assert list(table) == list(given)  # insertion order, like a dict
    for pair, pred in given.items():
        assert table[pair] == pred
        if pred.label != "maybe":
            assert table[pair].to_dict(6) == pred.to_dict(6)
    assert table.get(("x", "y")) is None and ("p", "h") in table and ("x", "y") not in table


def test_overwriting_and_updating_keep_one_row_per_pair():
    table = LabelTable()
    table[("a", "b")] = Prediction(E, {E: 0.5, N: 0.25, C: 0.25})
    table[("a", "b")] = Prediction("odd")
    table.update({("a", "b"): Prediction(C, {E: 0.0, N: 0.0, C: 1.0})})
    table.update([(("c", "d"), Prediction(N))])
    assert len(table) == 2
    assert table[("a", "b")] == Prediction(C, {E: 0.0, N: 0.0, C: 1.0})
    assert table[("c", "d")] == Prediction(N)


def test_labels_alone_and_the_unlabelled_count():
    table = LabelTable(
        {
            ("a", "b"): Prediction(E, {E: 0.5, N: 0.25, C: 0.25}),
            ("c", "d"): Prediction(None),
            ("e", "f"): Prediction("odd"),
            ("g", "h"): Prediction(None, {"x": 1.0}),
        }
    )
    assert [table.label(p) for p in table] == [E, None, "odd", None]
    assert {p: table.label(p) for p in table} == {
        ("a", "b"): E,
        ("c", "d"): None,
        ("e", "f"): "odd",
        ("g", "h"): None,
    }
    assert ("a", "b") in table and len(table) == 4
    assert table.unlabelled() == 2
