"""The transformers backend with small models built by the tests, one per label convention of the
paper's checkpoints, forced to a known class index so the index -> name mapping is really
checked."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from transnli.evaluator.backends import BackendOptions, create_backend  # noqa: E402
from transnli.evaluator.backends.hf import HFBackend, folder_digest, resolve_label_order  # noqa: E402
from transnli.evaluator.cache import LabelCache  # noqa: E402
from transnli.evaluator.errors import BackendError  # noqa: E402
from transnli.evaluator.labels import C, E, N  # noqa: E402

ROBERTA_MNLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
MODERNBERT_NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}
GENERIC_LABELS = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}

PAIRS = [
    ("a man is sleeping .", "a man is not running ."),
    ("the dog is big", "the dog is small"),
    ("people are eating inside", "a child is sad"),
    ("a", "the"),
    ("a woman is happy", "a woman is happy"),
]


def backend(folder, **options) -> HFBackend:
    return create_backend(f"hf:{folder}", BackendOptions(**{"batch_size": 2, **options}))


# ------------------------------------------------------------------ label conventions
@pytest.mark.parametrize("force,expected", [(0, C), (1, N), (2, E)])
def test_roberta_mnli_convention(tiny_nli_model_factory, force, expected):
    folder = tiny_nli_model_factory(
        f"roberta_force{force}", id2label=ROBERTA_MNLI_LABELS, force=force
    )
    preds = backend(folder).predict(PAIRS)
    assert [p.label for p in preds] == [expected] * len(PAIRS)
    assert all(p.probs[expected] > 0.99 for p in preds)
    assert all(set(p.probs) == {E, N, C} for p in preds)


@pytest.mark.parametrize("force,expected", [(0, E), (2, C)])
def test_modernbert_nli_convention(tiny_nli_model_factory, force, expected):
    # ModernBERT-base-nli: 0 entailment, 1 neutral, 2 contradiction (index 2 means the opposite
    # of what it means for roberta-large-mnli); a ModernBERT model, which takes no token_type_ids
    folder = tiny_nli_model_factory(
        f"modernbert_force{force}", id2label=MODERNBERT_NLI_LABELS, force=force, arch="modernbert"
    )
    b = backend(folder)
    assert b.labels == (E, N, C)
    preds = b.predict(PAIRS)
    assert [p.label for p in preds] == [expected] * len(PAIRS)
    assert all(p.probs[expected] > 0.99 for p in preds)


def test_generic_labels_need_a_label_map(tiny_nli_model_factory):
    folder = tiny_nli_model_factory("generic_force2", id2label=GENERIC_LABELS, force=2)
    with pytest.raises(BackendError, match="--label-map"):
        backend(folder)
    b = backend(folder, label_map="0=contradiction,1=neutral,2=entailment")
    assert {p.label for p in b.predict(PAIRS)} == {E}
    assert b.label_source == "label-map"
    b = backend(folder, label_map="0=e, 1=n, 2=c")
    assert {p.label for p in b.predict(PAIRS)} == {C}
    with pytest.raises(BackendError, match="exactly once"):
        backend(folder, label_map="0=e,1=e,2=c")


def test_two_label_model_refused(tiny_nli_model_factory):
    folder = tiny_nli_model_factory("two_labels", id2label={0: "entailment", 1: "not_entailment"})
    with pytest.raises(BackendError, match="2 output labels"):
        backend(folder)
    with pytest.raises(BackendError, match="2 output labels"):
        backend(folder, label_map="0=e,1=n,2=c")


def test_label_order_resolution_pure():
    assert resolve_label_order({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, 3) == (
        (C, N, E),
        "config",
    )
    assert resolve_label_order({"0": "entail", "1": "neutral", "2": "contradict"}, 3)[0] == (
        E,
        N,
        C,
    )
    with pytest.raises(BackendError, match="not the three NLI labels"):
        resolve_label_order({0: "positive", 1: "negative", 2: "neutral"}, 3)
    with pytest.raises(BackendError, match="not the three NLI labels"):
        resolve_label_order({0: "entailment", 1: "entailment", 2: "neutral"}, 3)
    assert resolve_label_order({0: "positive", 1: "negative", 2: "neutral"}, 3, "0=e,1=c,2=n") == (
        (E, C, N),
        "label-map",
    )
    with pytest.raises(BackendError, match="4 output labels"):
        resolve_label_order({i: f"LABEL_{i}" for i in range(4)}, 4)


def test_names_win_over_a_conflicting_label_map(tiny_nli_model_factory, caplog):
    folder = tiny_nli_model_factory("roberta_force2", id2label=ROBERTA_MNLI_LABELS, force=2)
    with caplog.at_level(logging.WARNING, logger="transnli"):
        b = backend(folder, label_map="0=entailment,1=neutral,2=contradiction")
    assert "ignored" in caplog.text
    assert {p.label for p in b.predict(PAIRS[:2])} == {E}


# ------------------------------------------------------------------ scheduling and numerics
def test_sorted_batches_come_back_in_input_order(tiny_nli_model_dir):
    b = backend(tiny_nli_model_dir, batch_size=2)
    together = b.predict(PAIRS)
    alone = [b.predict([pair])[0] for pair in PAIRS]
    for x, y in zip(together, alone, strict=True):
        assert x.label == y.label
        for k in (E, N, C):
            assert x.probs[k] == pytest.approx(y.probs[k], abs=1e-5)
    # batches go longest first, cover every index once, and are at most batch_size long
    batches = list(b.predict_batches(PAIRS))
    indices = [i for idx, _ in batches for i in idx]
    assert sorted(indices) == list(range(len(PAIRS)))
    assert all(len(idx) <= 2 for idx, _ in batches)
    assert batches[-1][0] == [3]  # ("a", "the") is the shortest pair
    assert b.predict([]) == []


def test_truncation_and_dtype(tiny_nli_model_dir):
    b = backend(tiny_nli_model_dir, max_length=8, dtype="bfloat16")
    assert "dtype=bfloat16" in b.identity and "max_length=8" in b.identity
    preds = b.predict(PAIRS + [(" ".join(["man"] * 200), "a dog")])
    assert len(preds) == len(PAIRS) + 1
    assert b.describe()["max_length"] == 8


def test_default_max_length_from_config(tiny_nli_model_dir):
    assert backend(tiny_nli_model_dir).max_length == 64  # max_position_embeddings of the tiny model


# ------------------------------------------------------------------ identity
def test_identity_hashes_weights_once(tiny_nli_model_dir, tmp_path):
    with LabelCache(tmp_path / "cache") as cache:
        b1 = create_backend(str(tiny_nli_model_dir), BackendOptions(hash_file=cache.hash_file))
        hashed = cache.files_hashed
        assert hashed >= 3  # weights, config, tokenizer files
        b2 = create_backend(f"hf:{tiny_nli_model_dir}", BackendOptions(hash_file=cache.hash_file))
        assert cache.files_hashed == hashed  # served from the (path, size, mtime) table
    assert b1.identity == b2.identity
    assert b1.identity.startswith("hf|sha256:" + folder_digest(tiny_nli_model_dir))
    assert "labels=contradiction,neutral,entailment" in b1.identity


def test_identity_changes_with_weights(tiny_nli_model_factory):
    a = tiny_nli_model_factory("id_a", force=0)
    b = tiny_nli_model_factory("id_b", force=1)
    assert backend(a).identity != backend(b).identity


def test_identity_of_a_hub_style_cache_uses_the_commit(
    tiny_nli_entailing_model_dir, tmp_path, monkeypatch
):
    # a model in the Hugging Face cache layout: models--org--name/snapshots/<commit>/...
    import shutil

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--transnli-test--tiny-nli"
    shutil.copytree(tiny_nli_entailing_model_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    try:
        b = backend("transnli-test/tiny-nli")
    except BackendError as e:  # a transformers version that pins the cache path elsewhere
        pytest.skip(f"hub cache layout not honoured here: {e}")
    assert b.identity.startswith(f"hf|transnli-test/tiny-nli@{commit}|")
    assert {p.label for p in b.predict(PAIRS[:2])} == {E}


# ------------------------------------------------------------------ clear errors
def test_bad_specs(tmp_path):
    with pytest.raises(BackendError, match="does not exist"):
        create_backend(f"hf:{tmp_path}/no/such/model")
    f = tmp_path / "labels.jsonl"
    f.write_text("")
    with pytest.raises(BackendError, match="precomputed:PATH"):
        create_backend(str(f))
    with pytest.raises(BackendError, match="unknown backend 'nosuch'"):
        create_backend("nosuch:thing")
    with pytest.raises(BackendError, match="nothing after"):
        create_backend("hf:")


def test_bad_device_and_dtype(tiny_nli_model_dir):
    import torch

    with pytest.raises(BackendError, match="unknown dtype"):
        backend(tiny_nli_model_dir, dtype="int8")
    with pytest.raises(BackendError, match="unknown device"):
        backend(tiny_nli_model_dir, device="toaster")
    if not torch.cuda.is_available():
        with pytest.raises(BackendError, match="no CUDA"):
            backend(tiny_nli_model_dir, device="cuda")


def test_dynamic_padding_either_side(tiny_nli_model_dir):
    b = backend(tiny_nli_model_dir)
    columns = {
        "input_ids": [[2, 5, 3], [2, 5, 6, 7, 3]],
        "attention_mask": [[1, 1, 1], [1, 1, 1, 1, 1]],
    }
    right = b._pad(columns, [0, 1])
    assert right["input_ids"].tolist() == [[2, 5, 3, 0, 0], [2, 5, 6, 7, 3]]
    assert right["attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    b.tokenizer.padding_side = "left"
    try:
        left = b._pad({"input_ids": columns["input_ids"]}, [1, 0])  # mask built when absent
    finally:
        b.tokenizer.padding_side = "right"
    assert left["input_ids"].tolist() == [[2, 5, 6, 7, 3], [0, 0, 2, 5, 3]]
    assert left["attention_mask"].tolist() == [[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]]
