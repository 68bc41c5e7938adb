"""The hf backend's batching (issue 17): the batch plan, vectorised padding, the fast tokenizer
path, grouped copies back from the device, several devices, and the --batch-size/--batch-tokens
flags. The rule that matters: however pairs are batched, each gets the label it gets alone."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from click.testing import CliRunner  # noqa: E402
from transnli.evaluator.backends import BackendOptions, batching, create_backend  # noqa: E402
from transnli.evaluator.backends import hf as hf_module  # noqa: E402
from transnli.evaluator.backends.batching import Packed, assign_devices, plan_batches  # noqa: E402
from transnli.evaluator.errors import BackendError  # noqa: E402

from transnli.cli import main  # noqa: E402

WORDS = (
    "a",
    "the",
    "man",
    "woman",
    "dog",
    "cat",
    "child",
    "people",
    "is",
    "are",
    "was",
    "not",
    "sleeping",
    "running",
    "eating",
    "happy",
    "sad",
    "big",
    "small",
    "old",
    "young",
    "inside",
)


def random_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """Pairs of 1 to 40 words (so batches mix very different lengths), some repeated."""
    rng = np.random.default_rng(seed)

    def sentence():
        return " ".join(rng.choice(WORDS, size=int(rng.integers(1, 40))))

    pairs = [(sentence(), sentence()) for _ in range(n)]
    return pairs + pairs[: n // 10]


@pytest.fixture(scope="module")
def varied_model_dir(tiny_nli_model_builder, tmp_path_factory):
    """The tests' tiny random BERT with larger random weights, so that its labels vary with the
    input (as initialised, it calls everything neutral) and no two classes tie."""
    import torch
    from transformers import AutoModelForSequenceClassification

    folder = tiny_nli_model_builder(tmp_path_factory.mktemp("varied") / "m", seed=7)
    model = AutoModelForSequenceClassification.from_pretrained(folder)
    torch.manual_seed(7)
    with torch.no_grad():  # weights of std 0.5 instead of 0.02: the input decides the label
        for param in model.parameters():
            if param.dim() == 2:
                param.normal_(0.0, 0.5)
    model.save_pretrained(folder)
    return folder


def backend(folder, **options):
    return create_backend(f"hf:{folder}", BackendOptions(**options))


# ------------------------------------------------------------------ the plan (pure)
def test_plan_without_budget_is_sort_and_slice():
    lengths = [5, 9, 5, 1, 9, 3, 7]
    batches = plan_batches(lengths, 3)
    # longest first, equal lengths in input order, slices of 3: the batches of earlier versions
    assert [b.tolist() for b in batches] == [[1, 4, 6], [0, 2, 5], [3]]
    expected = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    assert [i for b in batches for i in b.tolist()] == expected


@pytest.mark.parametrize("budget", [1, 10, 25, 64, 1000])
def test_plan_with_a_token_budget(budget):
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 60, size=500)
    batches = plan_batches(lengths, 32, budget)
    flat = [i for b in batches for i in b.tolist()]
    assert sorted(flat) == list(range(500))  # every pair once
    assert flat == np.argsort(-lengths, kind="stable").tolist()  # in length order
    for b in batches:
        assert 1 <= len(b) <= 32
        assert len(b) == 1 or len(b) * int(lengths[b].max()) <= budget
    # short pairs share batches: fewer forward passes than pairs when the budget allows it
    if budget >= 64:
        assert len(batches) < 500


def test_plan_rejects_nonsense():
    with pytest.raises(ValueError):
        plan_batches([1, 2], 0)
    with pytest.raises(ValueError):
        plan_batches([1, 2], 4, 0)
    assert plan_batches([], 4) == [] and plan_batches([], 4, 10) == []


def test_assign_devices_round_robin():
    assert assign_devices(5, 2) == [0, 1, 0, 1, 0]
    assert assign_devices(3, 1) == [0, 0, 0]
    with pytest.raises(ValueError):
        assign_devices(3, 0)


@pytest.mark.parametrize("left", [False, True])
def test_packed_pad_matches_a_row_by_row_pad(left):
    rows_ids = [[2, 5, 3], [2, 5, 6, 7, 3], [2, 3], [2, 9, 9, 9, 9, 9, 3]]
    types = [[0] * len(r) for r in rows_ids]
    packed = Packed.from_lists({"input_ids": rows_ids, "token_type_ids": types})
    rows = [1, 3, 0]
    out = packed.pad(
        rows, {"input_ids": 0, "token_type_ids": 0}, left=left, mask_name="attention_mask"
    )
    width = max(len(rows_ids[i]) for i in rows)
    for r, i in enumerate(rows):
        seq, pad = rows_ids[i], [0] * (width - len(rows_ids[i]))
        assert out["input_ids"][r].tolist() == (pad + seq if left else seq + pad)
        mask = [1] * len(seq)
        assert out["attention_mask"][r].tolist() == (pad + mask if left else mask + pad)
    assert out["input_ids"].dtype == np.int64


# ------------------------------------------------------------------ the backend
def test_batched_labels_equal_one_pair_at_a_time(varied_model_dir):
    pairs = random_pairs(120)
    alone_backend = backend(varied_model_dir, batch_size=1)
    alone = [alone_backend.predict([p])[0] for p in pairs]
    assert len({p.label for p in alone}) > 1  # a random model: the labels depend on the input
    for options in (
        {"batch_size": 32},
        {"batch_size": 7},
        {"batch_size": 64, "batch_tokens": 200},
        {"batch_size": 1000, "batch_tokens": 50},
        {"batch_auto": True},
    ):
        together = backend(varied_model_dir, **options).predict(pairs)
        # labels identical: a tie (two classes within float noise) would be the only excuse, and
        # this random model has none
        assert [p.label for p in together] == [p.label for p in alone], options
        for x, y in zip(together, alone, strict=True):
            for k in x.probs:
                assert x.probs[k] == pytest.approx(y.probs[k], abs=1e-5)


def test_same_batches_give_bitwise_the_same_output(varied_model_dir):
    pairs = random_pairs(60, seed=3)
    a = backend(varied_model_dir, batch_size=16).predict(pairs)
    b = backend(varied_model_dir, batch_size=16).predict(pairs)
    assert [(p.label, dict(p.probs)) for p in a] == [(p.label, dict(p.probs)) for p in b]


def test_fast_tokenizer_path_gives_the_tokenizers_ids(varied_model_dir):
    b = backend(varied_model_dir, max_length=12)
    pairs = random_pairs(40, seed=2)
    packed = b._tokenize(pairs)
    enc = b.tokenizer([p for p, _ in pairs], [h for _, h in pairs], truncation=True, max_length=12)
    got = [
        packed.flat["input_ids"][o : o + n].tolist()
        for o, n in zip(packed.offsets, packed.lengths, strict=True)
    ]
    assert got == enc["input_ids"]
    assert max(packed.lengths) == 12  # truncated like the tokenizer's own call
    if "token_type_ids" in packed.flat:
        types = [
            packed.flat["token_type_ids"][o : o + n].tolist()
            for o, n in zip(packed.offsets, packed.lengths, strict=True)
        ]
        assert types == enc["token_type_ids"]


def test_sentences_tokenised_once_give_the_pairs_ids(varied_model_dir):
    b = backend(varied_model_dir)
    assert b._fast, "the tests' tokenizer loads as a fast one"
    pairs = random_pairs(200, seed=8) + [("a", ""), ("", "the dog")]
    joined = b._tokenize(pairs)
    assert b._by_sentence  # the joined path was taken, not abandoned
    b._by_sentence = False
    plain = b._tokenize(pairs)
    for name in plain.flat:
        assert joined.flat[name].tolist() == plain.flat[name].tolist(), name
    assert joined.lengths.tolist() == plain.lengths.tolist()


def test_pair_template_and_ragged_ranges():
    from transnli.evaluator.backends.batching import PairTemplate, ragged_ranges

    t = PairTemplate.infer([101, 5, 6, 102, 7, 102], [0, 0, 0, 0, 1, 1], [5, 6], [7])
    assert (t.prefix, t.middle, t.suffix, t.types) == ((101,), (102,), (102,), (0, 0, 0, 1, 1))
    roberta = PairTemplate.infer([0, 5, 2, 2, 7, 8, 2], None, [5], [7, 8])
    assert (roberta.prefix, roberta.middle, roberta.suffix) == ((0,), (2, 2), (2,))
    assert PairTemplate.infer([101, 5, 9, 102], [0, 0, 0, 0], [5, 6], [9]) is None  # not a join
    assert (
        PairTemplate.infer([1, 5, 6, 7, 2], [0, 0, 1, 1, 1], [5, 6], [7]) is None
    )  # types vary in A
    sentences = Packed.from_lists({"input_ids": [[5, 6], [7], []]})
    joined = t.join(sentences, np.array([0, 2, 1]), np.array([1, 0, 2]), with_types=True)
    rows = [
        joined.flat["input_ids"][o : o + n].tolist()
        for o, n in zip(joined.offsets, joined.lengths, strict=True)
    ]
    assert rows == [[101, 5, 6, 102, 7, 102], [101, 102, 5, 6, 102], [101, 7, 102, 102]]
    assert joined.flat["token_type_ids"][:6].tolist() == [0, 0, 0, 0, 1, 1]
    assert ragged_ranges(np.array([3, 10, 0]), np.array([2, 0, 3])).tolist() == [3, 4, 0, 1, 2]


def byte_level_bpe_tokenizer():
    """A RoBERTa-style tokenizer (byte-level BPE, where "dog" and " dog" are different tokens,
    <s> A </s></s> B </s>), trained here on the test words."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    rust = Tokenizer(models.BPE())
    rust.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    rust.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    rust.train_from_iterator(
        [" ".join(WORDS)] * 20 + [w for w in WORDS],
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    rust.post_processor = processors.RobertaProcessing(
        ("</s>", 2), ("<s>", 0), add_prefix_space=False
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=rust,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )


def test_sentences_tokenised_once_with_a_byte_level_bpe(varied_model_dir):
    b = backend(varied_model_dir)
    b.tokenizer = byte_level_bpe_tokenizer()
    assert (
        b.tokenizer("dog", add_special_tokens=False)["input_ids"]
        != b.tokenizer(" dog", add_special_tokens=False)["input_ids"]
    )  # the leading space matters
    pairs = random_pairs(150, seed=9) + [("dog", "the dog"), (" dog", "dog ")]
    joined = b._tokenize(pairs)
    assert b._by_sentence
    own = b.tokenizer(
        [p for p, _ in pairs], [h for _, h in pairs], truncation=True, max_length=b.max_length
    )
    rows = [
        joined.flat["input_ids"][o : o + n].tolist()
        for o, n in zip(joined.offsets, joined.lengths, strict=True)
    ]
    assert rows == own["input_ids"]


def test_sentence_join_falls_back_when_a_sample_differs(varied_model_dir, monkeypatch):
    pairs = random_pairs(120, seed=10)
    b = backend(varied_model_dir)
    b._by_sentence = False
    plain = b._tokenize(pairs)
    real_join = batching.PairTemplate.join

    def off_in_the_last_pair(self, sentences, a, bb, with_types):
        # one token differs in the last pair only (which the sample always holds): what a tokenizer
        # whose pairs are not plain joins of its sentences looks like to the check
        packed = real_join(self, sentences, a, bb, with_types)
        packed.flat["input_ids"][int(packed.offsets[-1]) + 1] += 1
        return packed

    monkeypatch.setattr(batching.PairTemplate, "join", off_in_the_last_pair)
    b = backend(varied_model_dir)
    got = b._tokenize(pairs)
    assert not b._by_sentence
    assert got.flat["input_ids"].tolist() == plain.flat["input_ids"].tolist()
    assert got.lengths.tolist() == plain.lengths.tolist()


def test_sentence_join_leaves_truncation_to_the_tokenizer(varied_model_dir):
    b = backend(varied_model_dir, max_length=12)
    pairs = random_pairs(80, seed=11)  # most pairs are longer than 12 tokens
    got = b._tokenize(pairs)
    assert b._by_sentence  # only this chunk went pair by pair
    own = b.tokenizer([p for p, _ in pairs], [h for _, h in pairs], truncation=True, max_length=12)
    rows = [
        got.flat["input_ids"][o : o + n].tolist()
        for o, n in zip(got.offsets, got.lengths, strict=True)
    ]
    assert rows == own["input_ids"] and max(len(r) for r in rows) == 12
    short = [("a dog", "the cat"), ("people", "a man is happy")]
    assert b._tokenize(short).lengths.tolist() == [
        len(x) for x in b.tokenizer([p for p, _ in short], [h for _, h in short])["input_ids"]
    ]


def test_results_come_back_in_groups_and_in_input_order(varied_model_dir, monkeypatch):
    pairs = random_pairs(100, seed=4)
    reference = backend(varied_model_dir, batch_size=8).predict(pairs)
    monkeypatch.setattr(hf_module, "FLUSH_PAIRS", 20)
    monkeypatch.setattr(hf_module, "SORT_CHUNK", 37)  # several chunks, tokenised ahead
    b = backend(varied_model_dir, batch_size=8)
    fetches = []
    real_fetch = b._fetch
    monkeypatch.setattr(
        b,
        "_fetch",
        lambda pending, start: fetches.append(len(pending)) or real_fetch(pending, start),
    )
    batches = list(b.predict_batches(pairs))
    assert len(fetches) > 3 and max(fetches) > 1  # several batches per copy back
    assert len(batches) == b.forward_calls == sum(fetches) and all(
        len(idx) <= 8 for idx, _ in batches
    )
    assert sorted(i for idx, _ in batches for i in idx) == list(range(len(pairs)))
    assert [p.label for p in b.predict(pairs)] == [p.label for p in reference]


def test_several_devices_split_batches_and_agree_with_one(varied_model_dir):
    pairs = random_pairs(90, seed=5)
    one = backend(varied_model_dir, batch_size=8)
    two = backend(varied_model_dir, batch_size=8, device="cpu,cpu")  # a fake pair of devices
    assert len(two.devices) == 2 and len(two.replicas) == 2 and two.replicas[1] is not two.model
    calls = [0, 0]
    for d, replica in enumerate(two.replicas):
        real = replica.forward

        def counted(*args, _d=d, _real=real, **kwargs):
            calls[_d] += 1
            return _real(*args, **kwargs)

        replica.forward = counted
    a, b = one.predict(pairs), two.predict(pairs)
    assert [(p.label, dict(p.probs)) for p in a] == [(p.label, dict(p.probs)) for p in b]
    assert calls[0] > 0 and calls[1] > 0 and abs(calls[0] - calls[1]) <= 1


def test_device_lists_are_checked(varied_model_dir):
    import torch

    with pytest.raises(BackendError, match="unknown device"):
        backend(varied_model_dir, device="cpu,toaster")
    if not torch.cuda.is_available():
        with pytest.raises(BackendError, match="no CUDA"):
            backend(varied_model_dir, device="cuda:0,cuda:1")


def test_auto_batch_size_on_cpu_is_the_default_32(varied_model_dir):
    b = backend(varied_model_dir, batch_auto=True)
    b.predict(random_pairs(10))
    assert b.batch_size == batching.CPU_AUTO_BATCH == 32


# ------------------------------------------------------------------ the command
def run(args):
    return CliRunner().invoke(
        main, ["evaluate", *map(str, args), "--no-plots", "--no-progress", "--no-cache"]
    )


@pytest.fixture
def triples_file(tmp_path):
    pairs = random_pairs(30, seed=6)
    path = tmp_path / "t.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for k, (p, h) in enumerate(pairs):
            fh.write(
                json.dumps(
                    {
                        "id": f"t{k}",
                        "premise": p,
                        "hypothesis": h,
                        "modified_hypothesis": h + " not",
                    }
                )
                + "\n"
            )
    return path


def test_cli_batching_flags_keep_the_outputs(varied_model_dir, triples_file, tmp_path):
    base = [triples_file, "--model", varied_model_dir]
    first = run([*base, "--out", tmp_path / "a"])
    assert first.exit_code == 0, first.output
    for k, extra in enumerate(
        (
            ["--batch-size", "auto"],
            ["--batch-tokens", "64", "--batch-size", "500"],
            ["--device", "cpu,cpu", "--batch-size", "4"],
        )
    ):
        other = run([*base, "--out", tmp_path / f"b{k}", *extra])
        assert other.exit_code == 0, other.output
        labels = [
            json.loads(line)["labels"] for line in (tmp_path / f"b{k}" / "predictions.jsonl").open()
        ]
        assert labels == [
            json.loads(line)["labels"] for line in (tmp_path / "a" / "predictions.jsonl").open()
        ]


@pytest.mark.parametrize(
    "bad", [["--batch-size", "0"], ["--batch-size", "lots"], ["--batch-tokens", "0"]]
)
def test_cli_rejects_bad_batch_settings(varied_model_dir, triples_file, tmp_path, bad):
    result = run([triples_file, "--model", varied_model_dir, "--out", tmp_path / "x", *bad])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--batch-" in result.output


def test_auto_batch_size_on_cuda_is_the_largest_that_fits(varied_model_dir, monkeypatch):
    """The probe's search, with a fake CUDA device on which batches over 256 pairs run out of
    memory."""
    import types

    import torch

    b = backend(varied_model_dir, batch_auto=True)
    packed = b._tokenize(random_pairs(40, seed=12))
    tried = []

    def forward(d, batch):
        n = len(batch["input_ids"])
        tried.append(n)
        if n > 256:
            raise BackendError("out of memory")
        return None

    monkeypatch.setattr(b, "devices", [types.SimpleNamespace(type="cuda")])
    monkeypatch.setattr(b, "_to_device", lambda arrays, d: arrays)
    monkeypatch.setattr(b, "_forward", forward)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    assert b._probe_batch_size(packed) == 256
    assert tried == [32, 64, 128, 256, 512]  # stops at the first size that does not fit
    assert b.forward_calls == 0  # the probe's passes are not counted as labelling


def test_compile_flag_compiles_every_replica(varied_model_dir, triples_file, tmp_path, monkeypatch):
    import torch

    compiled = []
    monkeypatch.setattr(
        torch, "compile", lambda model, dynamic=None: compiled.append(dynamic) or model
    )
    base = [triples_file, "--model", varied_model_dir, "--device", "cpu,cpu"]
    plain = run([*base, "--out", tmp_path / "a"])
    assert plain.exit_code == 0, plain.output
    assert compiled == []
    result = run([*base, "--out", tmp_path / "b", "--compile"])
    assert result.exit_code == 0, result.output
    assert compiled == [True, True]  # one per device, dynamic shapes
    assert (tmp_path / "a" / "predictions.jsonl").read_bytes() == (
        tmp_path / "b" / "predictions.jsonl"
    ).read_bytes()
