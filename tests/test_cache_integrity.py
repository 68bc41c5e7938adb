"""A label cache that cannot lie (issue 27, defect 4): a weights file replaced by another of the
same size and mtime is hashed again, and a stored row that cannot be read back is a miss,
recomputed with one warning and no traceback."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3

import pytest
from click.testing import CliRunner
from transnli.evaluator.backends import BackendOptions, NLIBackend, Prediction, create_backend
from transnli.evaluator.cache import DB_NAME, CachedBackend, LabelCache, stored_prediction
from transnli.evaluator.labels import C, E, N

from transnli.cli.evaluate import evaluate


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    """Never touch the user's ~/.cache/transnli from a test."""
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def same_size_and_mtime(path, content: bytes, *, rename: bool) -> None:
    """Put `content` (as long as the old content) at `path` and set its mtime back: in place (the
    inode stays, ctime moves) or through a rename (a new inode), as `cp -p` and unpackers do."""
    st = path.stat()
    assert len(content) == st.st_size
    if rename:
        tmp = path.with_name(path.name + ".new")
        tmp.write_bytes(content)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, path)
    else:
        path.write_bytes(content)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


# ------------------------------------------------------------------ file digests
@pytest.mark.parametrize("rename", [False, True], ids=["in-place", "renamed"])
def test_file_replaced_with_same_size_and_mtime_is_hashed_again(tmp_path, rename):
    f = tmp_path / "weights.bin"
    f.write_bytes(b"first content")
    with LabelCache(tmp_path / "c") as cache:
        old = cache.hash_file(f)
        assert cache.hash_file(f) == old and cache.files_hashed == 1  # memoised
        same_size_and_mtime(f, b"other content", rename=rename)
        new = cache.hash_file(f)
        assert new != old and cache.files_hashed == 2
        assert cache.hash_file(f) == new and cache.files_hashed == 2  # memoised again


def test_old_file_digest_table_is_replaced(tmp_path):
    """A cache written by an earlier version (digests keyed by size and mtime only) is not trusted:
    its table is dropped, so every file is hashed once more."""
    folder = tmp_path / "c"
    folder.mkdir()
    f = tmp_path / "weights.bin"
    f.write_bytes(b"content")
    st = f.stat()
    with sqlite3.connect(folder / DB_NAME) as conn:
        conn.execute(
            "CREATE TABLE file_hashes (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
            "mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL)"
        )
        conn.execute(
            "INSERT INTO file_hashes VALUES (?,?,?,?)",
            (str(f.resolve()), st.st_size, st.st_mtime_ns, "0" * 64),
        )
    with LabelCache(folder) as cache:
        assert cache.hash_file(f) != "0" * 64 and cache.files_hashed == 1


def test_replaced_weights_are_not_served_old_labels(tiny_nli_model_builder, tmp_path):
    """End to end: same folder, weights file swapped for one of the same size and mtime (another
    forced class): new labels, a new identity, and provenance records the new digest."""
    pytest.importorskip("torch")
    folder = tiny_nli_model_builder(tmp_path / "model", force=2)  # ENTAILMENT
    other = tiny_nli_model_builder(tmp_path / "other", force=0)  # CONTRADICTION
    pairs = [("a man is happy", "a man is sad"), ("the dog is big", "the dog is small")]
    with LabelCache(tmp_path / "cache") as cache:
        opts = BackendOptions(hash_file=cache.hash_file)
        first = CachedBackend(create_backend(f"hf:{folder}", opts), cache)
        assert {p.label for p in first.predict(pairs)} == {E}
        weights = folder / "model.safetensors"
        same_size_and_mtime(weights, (other / "model.safetensors").read_bytes(), rename=False)
        changed = CachedBackend(create_backend(f"hf:{folder}", opts), cache)
        assert changed.identity != first.identity
        assert {p.label for p in changed.predict(pairs)} == {C}
        assert (changed.hits, changed.computed) == (0, 2)


# ------------------------------------------------------------------ bad rows
class RuleBackend(NLIBackend):
    """Labels by a rule on the texts and records what reaches it."""

    def __init__(self, name: str):
        self.name = name
        self.batch_size = 4
        self.seen: list[tuple[str, str]] = []

    @classmethod
    def from_spec(cls, arg, options):
        return cls(arg)

    @property
    def identity(self):
        return f"rule|{self.name}"

    def predict(self, pairs):
        self.seen.extend(pairs)
        return [Prediction((E, N, C)[len(p + h) % 3], {E: 0.5, N: 0.25, C: 0.25}) for p, h in pairs]


PAIRS = [(f"premise {i}", f"hypothesis {i * i}") for i in range(6)]
# (what is written into one stored row, why it cannot be served)
DAMAGE = [
    ("UPDATE labels SET label = 'maybe' WHERE premise = 'premise 1'", "unknown label"),
    ("UPDATE labels SET p_neutral = 'lots' WHERE premise = 'premise 2'", "text probability"),
    ("UPDATE labels SET p_contradiction = NULL WHERE premise = 'premise 3'", "row cut short"),
    ("UPDATE labels SET p_entailment = 7.5 WHERE premise = 'premise 4'", "not a probability"),
]


def damage(cache_dir) -> None:
    with sqlite3.connect(cache_dir / DB_NAME) as conn:
        for statement, _ in DAMAGE:
            assert conn.execute(statement).rowcount == 1


def test_bad_rows_are_misses_recomputed_with_one_warning(tmp_path, caplog):
    with LabelCache(tmp_path) as cache:
        expected = CachedBackend(RuleBackend("m"), cache).predict(PAIRS)
    damage(tmp_path)
    with LabelCache(tmp_path) as cache, caplog.at_level(logging.WARNING, logger="transnli"):
        again = CachedBackend(RuleBackend("m"), cache)
        assert again.predict(PAIRS) == expected
        assert (again.hits, again.computed) == (2, 4)
        assert again.inner.seen == PAIRS[1:5]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "4 unreadable rows" in warnings[0] and str(tmp_path / DB_NAME) in warnings[0]
    with LabelCache(tmp_path) as cache:  # the rows were overwritten with good ones
        third = CachedBackend(RuleBackend("m"), cache)
        assert third.predict(PAIRS) == expected and third.computed == 0


@pytest.mark.parametrize(
    "row",
    [
        ("maybe", 0.1, 0.2, 0.7),
        (E, "lots", 0.2, 0.7),
        (E, 0.1, 0.2, None),
        (E, 0.1, 0.2),
        (E, float("nan"), 0.2, 0.7),
        (E, True, 0.2, 0.7),
        (None, None, None, None),
    ],
)
def test_stored_prediction_refuses_what_it_cannot_read(row):
    assert stored_prediction(row) is None


def test_stored_prediction_reads_good_rows():
    assert stored_prediction((N, None, None, None)) == Prediction(N, None)
    assert stored_prediction((C, 0, 0.25, 1)) == Prediction(C, {E: 0.0, N: 0.25, C: 1.0})


def test_cli_with_damaged_rows_recomputes_without_a_traceback(tmp_path):
    """`transnli evaluate` over a cache with damaged rows: exit 0, one warning line, and the same
    outputs as a run without the cache."""
    from transnli.evaluator.backends import register_backend

    register_backend("rulebackend", RuleBackend.from_spec)
    triples = tmp_path / "t.jsonl"
    rows = [
        {"premise": f"premise {i}", "hypothesis": f"hyp {i}", "modified_hypothesis": f"mod {i}"}
        for i in range(5)
    ]
    triples.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cache = tmp_path / "cache"
    args = [str(triples), "--model", "rulebackend:m", "--no-progress", "--no-plots"]
    first = CliRunner().invoke(
        evaluate, [*args, "--out", str(tmp_path / "a"), "--cache-dir", cache]
    )
    assert first.exit_code == 0, first.output
    with sqlite3.connect(cache / DB_NAME) as conn:
        assert conn.execute("UPDATE labels SET label = 'maybe'").rowcount > 0
        conn.execute("UPDATE labels SET p_neutral = 'lots'")
    second = CliRunner().invoke(
        evaluate, [*args, "--out", str(tmp_path / "b"), "--cache-dir", cache]
    )
    assert second.exit_code == 0, second.output
    assert "Traceback" not in second.output and second.exception is None
    assert second.output.count("unreadable row") == 1
    plain = CliRunner().invoke(evaluate, [*args, "--out", str(tmp_path / "c"), "--no-cache"])
    assert plain.exit_code == 0, plain.output
    for name in ("summary.json", "predictions.jsonl"):
        b = (tmp_path / "b" / name).read_bytes()
        assert b == (tmp_path / "c" / name).read_bytes(), name
    shutil.rmtree(cache)
