"""Precomputed labels (and the missing-pair error), the SQLite label cache, and the `pairs` export
-> `precomputed` import round trip."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from transnli.evaluator.backends import (
    BackendOptions,
    NLIBackend,
    Prediction,
    create_backend,
    register_backend,
)
from transnli.evaluator.backends.precomputed import read_labelled_pairs
from transnli.evaluator.cache import CachedBackend, LabelCache, default_cache_dir, pair_key
from transnli.evaluator.errors import BackendError, MissingPairsError
from transnli.evaluator.labels import C, E, N

from transnli.cli.evaluate import evaluate, pairs


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    """Never touch the user's ~/.cache/transnli from a test."""
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------ precomputed
def test_precomputed_reads_and_normalises(tmp_path):
    f = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {
                "premise": "p",
                "hypothesis": "h",
                "label": "ENTAILMENT",
                "probs": {"ENTAILMENT": 0.8, "neutral": 0.15, "c": 0.05},
            },
            {"premise": "h", "hypothesis": "p", "label": "contradict"},
            {"premise": "h", "hypothesis": "p", "label": "c"},  # same pair, same label: fine
        ],
    )
    b = create_backend(f"precomputed:{f}")
    assert b.cacheable is False
    preds = b.predict([("h", "p"), ("p", "h")])
    assert preds[0] == Prediction(C, None)
    assert preds[1].label == E and preds[1].probs == {E: 0.8, N: 0.15, C: 0.05}
    assert b.identity.startswith("precomputed|sha256:")


def test_precomputed_missing_pairs_error(tmp_path):
    f = write_jsonl(tmp_path / "labels.jsonl", [{"premise": "p", "hypothesis": "h", "label": "n"}])
    b = create_backend(f"precomputed:{f}")
    with pytest.raises(MissingPairsError) as info:
        b.check_available([("p", "h"), ("p", "x"), ("y", "z"), ("p", "x")])
    assert info.value.missing == [("p", "x"), ("y", "z")]
    assert "2 of the 3 pairs" in str(info.value)
    assert "premise='p' hypothesis='x'" in str(info.value)
    with pytest.raises(MissingPairsError):
        b.predict([("a", "b")])


@pytest.mark.parametrize(
    "line,message",
    [
        ("{not json", "not valid JSON"),
        ('["a"]', "expected a JSON object"),
        ('{"premise": "p", "label": "e"}', "field 'hypothesis'"),
        ('{"premise": "p", "hypothesis": "h"}', "field 'label' missing"),
        ('{"premise": "p", "hypothesis": "h", "label": "maybe"}', "'maybe' is not an NLI label"),
        ('{"premise": "p", "hypothesis": "h", "label": "e", "probs": [1, 0, 0]}', "field 'probs'"),
        ('{"premise": "p", "hypothesis": "h", "label": "e", "probs": {"e": 1}}', "field 'probs'"),
    ],
)
def test_precomputed_file_errors_name_file_and_line(tmp_path, line, message):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"premise": "a", "hypothesis": "b", "label": "e"}\n\n' + line + "\n")
    with pytest.raises(BackendError, match=message) as info:
        read_labelled_pairs(f)
    assert f"{f}:3" in str(info.value)


def test_precomputed_conflicting_duplicate(tmp_path):
    f = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"premise": "p", "hypothesis": "h", "label": "e"},
            {"premise": "p", "hypothesis": "h", "label": "n"},
        ],
    )
    with pytest.raises(BackendError, match="line 1"):
        read_labelled_pairs(f)
    with pytest.raises(BackendError, match="no such file"):
        create_backend(f"precomputed:{tmp_path / 'nope.jsonl'}")


# ------------------------------------------------------------------ cache
class CountingBackend(NLIBackend):
    """Labels by a rule on the texts and counts what reaches it; optionally fails mid-run."""

    instances: list[CountingBackend] = []

    def __init__(self, name: str, fail_after: int | None = None):
        self.name, self.fail_after = name, fail_after
        self.batch_size = 2
        self.seen: list[tuple[str, str]] = []
        CountingBackend.instances.append(self)

    @classmethod
    def from_spec(cls, arg, options: BackendOptions):
        return cls(arg, options.extra.get("fail_after"))

    @property
    def identity(self):
        return f"counting|{self.name}"

    def predict(self, pairs):
        if self.fail_after is not None and len(self.seen) >= self.fail_after:
            raise RuntimeError("simulated crash")
        self.seen.extend(pairs)
        return [Prediction((E, N, C)[len(p + h) % 3], {E: 0.5, N: 0.25, C: 0.25}) for p, h in pairs]


register_backend("counting", CountingBackend.from_spec)  # one line adds a backend

PAIRS = [(f"premise {i}", f"hypothesis {i * i}") for i in range(7)]


def test_cache_hits_on_second_run(tmp_path):
    with LabelCache(tmp_path) as cache:
        first = CachedBackend(create_backend("counting:m"), cache)
        labels1 = first.predict(PAIRS)
        assert (first.hits, first.computed, len(first.inner.seen)) == (0, 7, 7)
        second = CachedBackend(create_backend("counting:m"), cache)
        labels2 = second.predict(PAIRS + PAIRS[:2])
        assert (second.hits, second.computed, second.inner.seen) == (9, 0, [])
        assert labels2[:7] == labels1 and labels2[7:] == labels1[:2]
        assert cache.count("counting|m") == 7
        # another model identity shares nothing
        other = CachedBackend(create_backend("counting:other"), cache)
        other.predict(PAIRS[:3])
        assert other.computed == 3


def test_cache_persists_across_connections_and_resumes_after_a_crash(tmp_path):
    with LabelCache(tmp_path) as cache:
        crashing = CachedBackend(CountingBackend("m", fail_after=4), cache)
        with pytest.raises(RuntimeError, match="simulated crash"):
            crashing.predict(PAIRS)
    with LabelCache(tmp_path) as cache:  # a new process, say
        assert cache.count("counting|m") == 4  # two batches of two were committed
        resumed = CachedBackend(CountingBackend("m"), cache)
        resumed.predict(PAIRS)
        assert (resumed.hits, resumed.computed) == (4, 3)
        assert resumed.inner.seen == PAIRS[4:]


def test_cache_keeps_probabilities_and_texts(tmp_path):
    with LabelCache(tmp_path) as cache:
        cache.put_many("x", [("p", "h")], [Prediction(N, {E: 0.1, N: 0.7, C: 0.2})])
        cache.put_many("x", [("p", "h2")], [Prediction(C, None)])
        got = cache.get_many("x", [("p", "h2"), ("p", "h"), ("q", "h")])
        assert got == {0: Prediction(C, None), 1: Prediction(N, {E: 0.1, N: 0.7, C: 0.2})}
        row = cache.conn.execute(
            "SELECT premise, hypothesis FROM labels WHERE key = ?", (pair_key("p", "h"),)
        ).fetchone()
        assert row == ("p", "h")
        assert cache.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_pair_key_has_no_separator_collisions():
    assert pair_key("ab", "c") != pair_key("a", "bc")


def test_file_hash_memo_follows_changes(tmp_path):
    f = tmp_path / "weights.bin"
    f.write_bytes(b"one")
    with LabelCache(tmp_path / "c") as cache:
        h1 = cache.hash_file(f)
        assert cache.hash_file(f) == h1 and cache.files_hashed == 1
        f.write_bytes(b"two!")
        h2 = cache.hash_file(f)
        assert h2 != h1 and cache.files_hashed == 2


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "tc"))
    assert default_cache_dir() == tmp_path / "tc"
    monkeypatch.delenv("TRANSNLI_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "transnli"


def test_no_stale_hit_after_the_model_changes(
    tiny_nli_model_factory, tiny_nli_model_builder, tmp_path
):
    pytest.importorskip("torch")
    folder = tiny_nli_model_factory("changing", force=2)  # ENTAILMENT
    pairs_ = [("a man is happy", "a man is sad"), ("the dog is big", "the dog is small")]
    with LabelCache(tmp_path / "cache") as cache:
        opts = BackendOptions(hash_file=cache.hash_file)
        first = CachedBackend(create_backend(f"hf:{folder}", opts), cache)
        assert {p.label for p in first.predict(pairs_)} == {E}
        again = CachedBackend(create_backend(f"hf:{folder}", opts), cache)
        assert {p.label for p in again.predict(pairs_)} == {E}
        assert (again.hits, again.computed, again.inner.forward_calls) == (2, 0, 0)
        tiny_nli_model_builder(folder, force=0)  # same folder, new weights: CONTRADICTION
        changed = CachedBackend(create_backend(f"hf:{folder}", opts), cache)
        assert changed.identity != first.identity
        assert {p.label for p in changed.predict(pairs_)} == {C}
        assert (changed.hits, changed.computed) == (0, 2)


# ------------------------------------------------------------------ pairs round trip
TRIPLES = [
    {"premise": "P1", "hypothesis": "H1", "modified_hypothesis": "X1"},
    {"premise": "P1", "hypothesis": "H2", "modified_hypothesis": "X2"},  # shares P1
    {"premise": "P2", "hypothesis": "H1", "modified_hypothesis": "X1"},  # shares (H1, X1)
]


def oracle(premise, hypothesis):
    """Any labeller at all: mutual E for (H1,X1), mutual C for (H2,X2)."""
    if {premise, hypothesis} == {"H1", "X1"}:
        return "ENTAILMENT"
    if {premise, hypothesis} == {"H2", "X2"}:
        return "CONTRADICTION"
    return "neutral" if premise == "P1" else "entailment"


def test_pairs_export_then_precomputed_import(tmp_path):
    triples = write_jsonl(tmp_path / "t.jsonl", TRIPLES)
    runner = CliRunner()
    out = tmp_path / "pairs.jsonl"
    res = runner.invoke(pairs, [str(triples), "--out", str(out)])
    assert res.exit_code == 0, res.output
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(set(r) == {"premise", "hypothesis"} for r in exported)
    got = {(r["premise"], r["hypothesis"]) for r in exported}
    assert len(got) == len(exported)  # unique
    assert got == {
        ("P1", "H1"),
        ("H1", "X1"),
        ("X1", "H1"),
        ("P1", "X1"),
        ("P1", "H2"),
        ("H2", "X2"),
        ("X2", "H2"),
        ("P1", "X2"),
        ("P2", "H1"),
        ("P2", "X1"),
    }

    labelled = write_jsonl(
        tmp_path / "labelled.jsonl",
        [{**r, "label": oracle(r["premise"], r["hypothesis"])} for r in exported],
    )
    for extra in ([], ["--all-pairs"]):
        res = runner.invoke(
            evaluate,
            [
                str(triples),
                "--model",
                f"precomputed:{labelled}",
                "--out",
                str(tmp_path / f"ev{len(extra)}"),
                "--no-cache",
                "--no-progress",
                "--no-plots",
                *extra,
            ],
        )
        assert res.exit_code == 0, res.output
        rows = [
            json.loads(line)
            for line in (tmp_path / f"ev{len(extra)}" / "predictions.jsonl")
            .read_text()
            .splitlines()
        ]
        assert len(rows) == 3
        for row, t in zip(rows, TRIPLES, strict=True):
            assert row["labels"]["p_h"] == oracle(t["premise"], t["hypothesis"]).lower()
            assert row["labels"]["p_h2"] == oracle(t["premise"], t["modified_hypothesis"]).lower()


def test_pairs_two_stage_export(tmp_path):
    triples = write_jsonl(tmp_path / "t.jsonl", TRIPLES)
    runner = CliRunner()
    stage1 = tmp_path / "stage1.jsonl"
    res = runner.invoke(pairs, [str(triples), "--out", str(stage1), "--first-stage"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in stage1.read_text().splitlines()]
    assert len(rows) == 7  # (P1,H1) (H1,X1) (X1,H1) (P1,H2) (H2,X2) (X2,H2) (P2,H1)
    labelled = write_jsonl(
        tmp_path / "l1.jsonl", [{**r, "label": oracle(r["premise"], r["hypothesis"])} for r in rows]
    )
    stage2 = tmp_path / "stage2.jsonl"
    res = runner.invoke(pairs, [str(triples), "--out", str(stage2), "--labels", str(labelled)])
    assert res.exit_code == 0, res.output
    rows2 = [json.loads(line) for line in stage2.read_text().splitlines()]
    assert {(r["premise"], r["hypothesis"]) for r in rows2} == {
        ("P1", "X1"),
        ("P1", "X2"),
        ("P2", "X1"),
    }
    # stage 1 without its labels: clear error
    res = runner.invoke(pairs, [str(triples), "--out", str(stage2), "--labels", str(stage1)])
    assert res.exit_code != 0 and "field 'label' missing" in res.output


def test_cache_writes_labels_in_large_transactions(tmp_path, monkeypatch):
    """One write per WRITE_PAIRS labels, not one per batch (a commit per batch cost more than a
    small model's forward pass); the rest is written when labelling stops."""
    from transnli.evaluator import cache as cache_module

    monkeypatch.setattr(cache_module, "WRITE_PAIRS", 3)
    monkeypatch.setattr(cache_module, "WRITE_SECONDS", 1e9)
    with LabelCache(tmp_path) as cache:
        writes = []
        real_put = cache.put_many
        monkeypatch.setattr(
            cache,
            "put_many",
            lambda identity, p, preds: writes.append(len(p)) or real_put(identity, p, preds),
        )
        backend = CachedBackend(CountingBackend("m"), cache)
        labels = backend.predict(PAIRS)  # 7 pairs in batches of 2
        assert writes == [4, 3]  # after the batch that reaches 3 labels, then the rest at the end
        assert cache.count("counting|m") == 7
        assert CachedBackend(CountingBackend("m"), cache).predict(PAIRS) == labels
