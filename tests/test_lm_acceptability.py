"""The lm acceptability check: a candidate passes when the language model finds it at most
`threshold` nats less likely than its original, and every number is on the record. A tiny random
causal LM built here goes through the same loading code as the packaged Gemma."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from tiny_lm import build_tiny_causal_lm
from transnli.common.lm import CausalLMScorer, LMSettings
from transnli.generator.checks.base import BackendUnavailable
from transnli.generator.checks.registry import build_check, check_backends
from transnli.generator.config import GeneratorConfig, resolve_config

from transnli.cli import main

PAIRS = [
    ("The soup is hot.", "The soup is cold."),
    ("He changed his mind.", "He stayed his mind."),
    ("A big dog runs.", "A small dog runs."),
    ("A dog walks.", "A dog runs."),
]


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"), max_positions=256)


def lm_check(folder, threshold):
    return build_check("acceptability", "lm", lm=str(folder), lm_threshold=threshold, device="cpu")


def test_lm_is_an_acceptability_backend():
    assert "lm" in check_backends("acceptability")
    assert GeneratorConfig(acceptability="lm").validate().lm == "gemma3-270m"


def test_the_verdict_is_d_against_the_threshold_and_every_number_is_kept(tiny_lm_dir, tmp_path):
    reference = CausalLMScorer.load(LMSettings(spec=str(tiny_lm_dir), use_cache=False))
    expected = reference.compare_many(PAIRS)
    deltas = sorted(s.delta for s in expected)
    threshold = (deltas[1] + deltas[2]) / 2  # two pass, two fail
    results = lm_check(tiny_lm_dir, threshold).check_many(*zip(*PAIRS, strict=True))
    for res, score in zip(results, expected, strict=True):
        assert res.passed == (score.delta >= threshold)
        assert res.to_dict() == {
            "backend": "lm",
            "passed": res.passed,
            "logp_original": score.original,
            "logp_candidate": score.modified,
            "d": score.delta,
            "from_token": score.shared_prefix_tokens,
            "threshold": threshold,
        }
        assert res.passed or f"d = {score.delta} <" in res.reason
    assert sum(r.passed for r in results) == 2


def test_the_check_names_its_weights_for_provenance(tiny_lm_dir):
    check = lm_check(tiny_lm_dir, -8.0)
    assert check.scorer.identity["weights_sha256"] in check.version()


def test_a_missing_model_is_one_clear_line(tmp_path):
    with pytest.raises(BackendUnavailable, match="acceptability backend 'lm': .*no such file"):
        lm_check(tmp_path / "nowhere", -8.0)


def test_a_sentence_beyond_the_models_context_is_one_clear_line(tmp_path):
    short = build_tiny_causal_lm(tmp_path / "short-lm", max_positions=12)
    check = lm_check(short, -8.0)
    long = "the soup is hot and the soup is cold and the dog runs ."
    with pytest.raises(BackendUnavailable, match="longer than the language model's 12-token"):
        check.check_many([long], [long.replace("hot", "warm")])


def test_the_cli_options_reach_the_config():
    config = resolve_config("default", acceptability="lm", lm="my-lm", lm_threshold=-5.5)
    assert (config.lm, config.lm_threshold, config.lm_dtype) == ("my-lm", -5.5, "float32")
    with pytest.raises(Exception, match="lm_dtype must be one of"):
        resolve_config("default", lm_dtype="int3")


def generate(sample, out, *extra):
    return CliRunner().invoke(
        main, ["generate", str(sample), "--out", str(out), "--acceptability", "lm", *extra]
    )


@pytest.mark.slow
def test_a_run_with_the_lm_check_records_it_and_is_byte_identical(tmp_path):
    from transnli.resources import resource_path

    sample = resource_path("samples", "snli_sample.jsonl")
    # A vocabulary of the sample's words, so that a random model's d varies around 0.
    words = sorted(set(re.findall(r"\w+|[^\w\s]", sample.read_text(encoding="utf-8"))))
    model = build_tiny_causal_lm(tmp_path / "lm", max_positions=256, words=words)
    opts = ["--lm", str(model), "--lm-threshold", "0", "--limit", "30"]
    first = generate(sample, tmp_path / "a", *opts)
    assert first.exit_code == 0, first.output
    second = generate(sample, tmp_path / "b", *opts)
    assert second.exit_code == 0, second.output
    triples = (tmp_path / "a" / "triples.jsonl").read_bytes()
    assert triples == (tmp_path / "b" / "triples.jsonl").read_bytes()

    records = [json.loads(line) for line in triples.decode().splitlines()]
    rejected = [
        json.loads(line)
        for line in (tmp_path / "a" / "rejected.jsonl").read_text().splitlines()
        if '"rejected_by": "acceptability"' in line
    ]
    assert records and rejected, "a random model keeps some and drops some"
    for rec in records:
        lm = rec["checks"]["acceptability"]
        assert lm["backend"] == "lm" and lm["passed"] and lm["d"] >= 0
        assert lm["d"] == round(lm["logp_candidate"] - lm["logp_original"], 4)
    assert all(r["checks"]["acceptability"]["d"] < 0 for r in rejected)
    config = json.loads((tmp_path / "a" / "config.json").read_text())["config"]
    assert config["lm"] == str(model) and config["lm_threshold"] == 0


def test_a_missing_model_stops_generate_with_one_line(tmp_path):
    from transnli.resources import resource_path

    sample = resource_path("samples", "snli_sample.jsonl")
    result = generate(sample, tmp_path / "out", "--lm", str(tmp_path / "nowhere"))
    assert result.exit_code != 0
    assert "acceptability backend 'lm'" in result.output
    assert "Traceback" not in result.output
