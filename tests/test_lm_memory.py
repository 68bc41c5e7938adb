"""Handing a memory-mapped output layer's pages back (transnli.common.lm.memory): the scores stay
those of the plain path, the pages leave the resident set, and nothing that is not a clean file
page is ever handed back."""

from __future__ import annotations

import mmap
import sys

import pytest
from tiny_lm import build_tiny_causal_lm
from transnli.common.lm.memory import (
    FilePages,
    Mapping,
    anonymous_kb,
    drop_build_tables,
    mapping_of,
)
from transnli.common.lm.output_layer import OutputLayer
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMSettings

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")

SENTENCES = [
    ("the soup is hot .", "the soup is cold ."),
    ("a dog runs .", "a dog walks ."),
    ("he changed his mind .", "he stayed his mind ."),
    ("the big dog is warm .", "the small dog is warm ."),
]


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"))


def load(folder, tmp_path, name, **kw):
    return CausalLMScorer.load(
        LMSettings(spec=str(folder), cache_dir=tmp_path / name, use_cache=False, **kw)
    )


def resident_kb(mapping: Mapping) -> int:
    with open("/proc/self/smaps", encoding="utf-8") as fh:
        inside = False
        for line in fh:
            if "-" in line.split(maxsplit=1)[0]:
                inside = line.startswith(f"{mapping.start:x}-")
            elif inside and line.startswith("Rss:"):
                return int(line.split()[1])
    raise AssertionError("mapping not found")


@linux
def test_a_loaded_checkpoints_output_layer_is_file_backed(tiny_lm_dir, tmp_path):
    lm = load(tiny_lm_dir, tmp_path, "c")
    pages = lm._output.pages
    assert pages is not None
    assert pages.mapping.path.endswith("model.safetensors")
    assert pages.rows == lm.model.config.vocab_size


@linux
def test_handing_pages_back_leaves_every_score_as_the_plain_path_gives_it(
    tiny_lm_dir, tmp_path, monkeypatch
):
    """With the vocabulary in 5 chunks (so pages are handed back between chunks) and in batches
    of 1 and 16: readings (log-probabilities and hidden states) equal those without the hand-back
    to the last digit, and again after it (the pages are read back from the file)."""
    monkeypatch.setattr(OutputLayer, "CHUNK", 5)
    for batch_size in (1, 16):
        plain = load(tiny_lm_dir, tmp_path, f"a{batch_size}", batch_size=batch_size)
        plain._output.pages = None
        expected = plain.read_pairs(SENTENCES, (1, 2))
        lm = load(tiny_lm_dir, tmp_path, f"b{batch_size}", batch_size=batch_size)
        assert lm._output.pages is not None
        assert lm.read_pairs(SENTENCES, (1, 2)) == expected
        assert lm.read_pairs(SENTENCES, (1, 2)) == expected
        assert lm.score_sentences([s for s, _ in SENTENCES]) == plain.score_sentences(
            [s for s, _ in SENTENCES]
        )


def test_a_tensor_in_ordinary_memory_is_left_alone():
    import torch

    assert FilePages.of(torch.ones(64, 1024)) is None
    assert FilePages.of(torch.ones(0)) is None
    assert FilePages.of(torch.ones(64, 1024).T) is None  # not contiguous


def mapped(path, rows: int, width: int):
    """A float32 [rows, width] tensor over a private (copy-on-write) mapping of `path`, as
    safetensors maps a checkpoint."""
    import torch

    fh = open(path, "r+b")  # noqa: SIM115 - the mapping outlives the function
    view = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    return torch.frombuffer(view, dtype=torch.float32).reshape(rows, width), view, fh


@linux
def test_handed_back_pages_leave_the_resident_set_and_read_back_the_same(tmp_path):
    import torch

    rows, width = 256, 1024  # 1 MB: 256 pages of 4 kB
    values = torch.arange(rows * width, dtype=torch.float32).reshape(rows, width)
    path = tmp_path / "weights.bin"
    path.write_bytes(values.numpy().tobytes())
    tensor, view, fh = mapped(path, rows, width)
    try:
        pages = FilePages.of(tensor)
        assert pages is not None and pages.rows == rows
        total = float(tensor.sum())  # every page read: all resident
        before = resident_kb(pages.mapping)
        pages.release(0, rows // 2)
        half = resident_kb(pages.mapping)
        pages.release()
        after = resident_kb(pages.mapping)
        assert before >= 1000 and half <= before // 2 + 8 and after <= 8
        assert float(tensor.sum()) == total and torch.equal(tensor, values)
    finally:
        del tensor, pages
        view.close()
        fh.close()


@linux
def test_a_mapping_with_written_pages_is_never_handed_back(tmp_path):
    """A page written since the file was mapped is a private copy that holds what the file does
    not: handing it back would silently restore the file's bytes."""
    import torch

    path = tmp_path / "weights.bin"
    path.write_bytes(torch.zeros(64, 1024).numpy().tobytes())
    tensor, view, fh = mapped(path, 64, 1024)
    try:
        mapping = mapping_of(tensor.data_ptr(), 64 * 1024 * 4)
        assert mapping is not None and mapping.file_backed and anonymous_kb(mapping) == 0
        tensor[3, 5] = 1.0
        assert anonymous_kb(mapping) > 0
        assert FilePages.of(tensor) is None
    finally:
        del tensor
        view.close()
        fh.close()


def gemma_style_tokenizer():
    """A GemmaTokenizer built from a small BPE vocabulary and merges, as transformers builds
    Gemma 3's from its tokenizer.json."""
    from transformers import GemmaTokenizer

    letters = sorted(set("".join(w for w, _ in SENTENCES)) - {" "}) + ["▁"]
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", *letters])}
    merges = []
    for a, b in [("▁", "t"), ("h", "e"), ("▁t", "he"), ("o", "g"), ("d", "og"), ("▁", "dog")]:
        merges.append((a, b))
        vocab.setdefault(a + b, len(vocab))
    return GemmaTokenizer(vocab=vocab, merges=merges)


def test_a_fast_tokenizer_encodes_the_same_without_its_build_tables():
    tokenizer = gemma_style_tokenizer()
    texts = [s for pair in SENTENCES for s in pair] + ["the dog", "Ünïcode café 🙂"]
    before = [tokenizer(t, add_special_tokens=True)["input_ids"] for t in texts]
    size, text = len(tokenizer), tokenizer.decode(before[0])
    assert drop_build_tables(tokenizer) == ["_vocab", "_merges"]
    assert [tokenizer(t, add_special_tokens=True)["input_ids"] for t in texts] == before
    assert len(tokenizer) == size and tokenizer.decode(before[0]) == text
    assert any(len(ids) < len(t) for ids, t in zip(before, texts, strict=True))  # merges applied


def test_a_tokenizer_without_a_rust_core_keeps_its_tables():
    class Slow:
        is_fast = False
        _vocab = {"a": 0}

    slow = Slow()
    assert drop_build_tables(slow) == [] and slow._vocab == {"a": 0}


@pytest.mark.parametrize("positions", [1, 7, 640])
def test_logsumexp_in_place_gives_torchs_own_bits(positions):
    import math

    import torch
    from transnli.common.lm.memory import logsumexp_in_place

    torch.manual_seed(positions)
    hidden, weight = torch.randn(positions, 64), torch.randn(4096, 64) * 0.3
    for logits in (hidden @ weight.T, torch.randn(positions, 4096) * 40):
        logits[0, :10] = -math.inf
        if positions > 1:
            logits[1] = -math.inf  # a row with nothing possible: -inf, as torch says
        expected = torch.logsumexp(logits, -1)
        assert torch.equal(logsumexp_in_place(logits.clone()), expected)
