"""A tiny random causal language model, built and saved like a real checkpoint, for the tests of
transnli.common.lm and of the lm acceptability check."""

from __future__ import annotations

WORDS = [
    "the",
    "soup",
    "is",
    "hot",
    "cold",
    "warm",
    "he",
    "changed",
    "stayed",
    "his",
    "mind",
    "a",
    "dog",
    "runs",
    "walks",
    ".",
    ",",
    "big",
    "small",
]


def build_tiny_causal_lm(folder, seed=0, max_positions=12, words=WORDS):
    """A random Gemma 3 with a word-level tokenizer over `words` (split at spaces and
    punctuation), saved to `folder` as a checkpoint would be; `max_positions` is its context
    length in tokens."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<pad>", "<bos>", "<eos>", "<unk>", *words])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation()]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    config = Gemma3TextConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=max_positions,
        sliding_window=8,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    Gemma3ForCausalLM(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_judge(width: int = 16, layer: int = 1, seed: int = 0, **changes) -> dict:
    """A judge file's content (transnli.generator.judge) for the tiny LM: random coefficients over
    every scalar and the span state at `layer`, a Platt calibration and a validation record."""
    import numpy as np
    from transnli.generator.judge import JUDGE_FORMAT, SCALARS

    rng = np.random.default_rng(seed)
    doc = {
        "format": JUDGE_FORMAT,
        "language_model": "tiny",
        "layer": layer,
        "width": width,
        "scalars": list(SCALARS),
        "scalar_mean": rng.normal(size=len(SCALARS)).round(3).tolist(),
        "scalar_scale": (1 + rng.random(len(SCALARS))).round(3).tolist(),
        "scalar_coef": (rng.normal(size=len(SCALARS)) * 0.3).round(3).tolist(),
        "vector_coef": {"span_modified": (rng.normal(size=width) * 0.2).round(3).tolist()},
        "intercept": 0.1,
        "calibration": {"a": 0.8, "b": -0.2},
        "threshold": 0.5,
        "validation": {
            "test": {"at_threshold": {"threshold": 0.5, "kept": 40, "precision": 0.75}, "ece": 0.04}
        },
    }
    doc.update(changes)
    return doc


def write_pairs(path, hypotheses=("the soup is hot .", "a big dog runs .", "the dog walks .")):
    """A generic JSONL input of NLI pairs whose hypotheses are in the tiny LM's vocabulary."""
    import json

    with open(path, "w", encoding="utf-8") as fh:
        for i, h in enumerate(hypotheses):
            row = {"premise": "p", "hypothesis": h, "label": "neutral", "id": i}
            fh.write(json.dumps(row) + "\n")
    return path
