"""The lm acceptability check: a candidate passes when the language model finds it at most
`threshold` nats less likely than its original, and every number is on the record. A tiny random
causal LM built here goes through the same loading code as the packaged Gemma."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from tiny_lm import build_tiny_causal_lm
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMSettings
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


SAMPLE_ARGS = ("--limit", "12")


@pytest.fixture(scope="module")
def sample_lm(tmp_path_factory):
    """A tiny LM over the shipped sample's words (so its d varies around 0)."""
    from transnli.resources import resource_path

    sample = resource_path("samples", "snli_sample.jsonl")
    words = sorted(set(re.findall(r"\w+|[^\w\s]", sample.read_text(encoding="utf-8"))))
    root = tmp_path_factory.mktemp("sample-lm")
    return sample, build_tiny_causal_lm(root / "lm", max_positions=256, words=words), root, words


def test_a_model_that_is_no_causal_lm_stops_generate_before_the_run_folder(
    tmp_path, sample_lm, tiny_nli_model_factory
):
    """One line naming the folder, and no run folder left behind: the same --out works at once
    with a right model."""
    import shutil

    sample, model, *_ = sample_lm
    bert = tiny_nli_model_factory("lm_check_bert")
    bare = tmp_path / "bare"
    shutil.copytree(model, bare)
    for p in bare.glob("tokenizer*"):
        p.unlink()
    out = tmp_path / "out"
    for folder, why in ((bert, "is not a causal language model"), (bare, "no tokenizer files")):
        result = generate(sample, out, "--lm", str(folder), *SAMPLE_ARGS)
        assert result.exit_code == 1, result.output
        # the load may be announced first (it is, where the folder itself looks right)
        lines = result.output.strip().splitlines()
        (line,) = [x for x in lines if not x.startswith(f"loading the language model {folder}")]
        assert str(folder) in line and why in line
        assert not out.exists()
    ok = generate(sample, out, "--lm", str(model), "--lm-threshold", "0", *SAMPLE_ARGS)
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize(
    "options",
    [
        ["--lm", "some-lm"],
        ["--lm", "gemma3-270m"],  # named, even at its default
        ["--lm-threshold", "-3"],
        ["--lm-dtype", "bfloat16"],
        ["--acceptability", "judge", "--lm-threshold", "-3"],  # the judge has its own threshold
    ],
)
def test_lm_settings_without_the_lm_check_are_refused(tmp_path, options):
    from transnli.resources import resource_path

    sample = resource_path("samples", "snli_sample.jsonl")
    result = CliRunner().invoke(main, ["generate", str(sample), "--out", str(tmp_path), *options])
    assert result.exit_code == 2
    assert "given, but nothing uses it" in result.output
    assert "--acceptability lm" in result.output
    assert not any(tmp_path.iterdir())


def test_new_weights_in_the_lm_folder_are_not_served_the_old_verdicts(tmp_path, sample_lm):
    import shutil

    sample, model, _, words = sample_lm
    mine = tmp_path / "lm"
    shutil.copytree(model, mine)
    out = tmp_path / "out"
    args = ("--lm", str(mine), "--lm-threshold", "0", *SAMPLE_ARGS)
    first = generate(sample, out, *args)
    assert first.exit_code == 0, first.output
    (cost,) = [x for x in first.output.splitlines() if x.startswith("language model ")]
    assert cost.startswith(f"language model {mine} (Gemma3ForCausalLM, float32, cpu): about ")
    assert "sentences to score for 12 pairs" in cost and "measured now" in cost
    again = generate(sample, out, *args)
    assert again.exit_code == 0
    assert "reusing the finished run" in again.output and "language model weights" in again.output

    other = build_tiny_causal_lm(tmp_path / "other", max_positions=256, seed=7, words=words)
    shutil.copy(other / "model.safetensors", mine / "model.safetensors")  # same shapes
    changed = generate(sample, out, *args)
    assert "reusing" not in changed.output
    assert changed.exit_code == 1 and "language model weights" in changed.output


class RecordingBar:
    """A progress bar that keeps what it was told, in order."""

    def __init__(self, total=None):
        self.events = []
        self.total = total

    def update(self, n=1):
        self.events.append(("update", n))

    def set_postfix_str(self, text, refresh=True):
        self.events.append(("postfix", text))

    def close(self):
        pass


def test_the_progress_bar_moves_inside_a_batch(sample_lm, monkeypatch):
    """One pipeline batch of 12 pairs: the bar hears of the language model's sentences after each
    of the model's batches (2 sentences each here), and its pair count moves with them (issue 38:
    it sat at 0/N while only the postfix moved), never past the batch before it ends."""
    from transnli.generator import run as run_module
    from transnli.generator.run import RunOptions, generate_run

    sample, model, *_ = sample_lm
    bar = RecordingBar(total=12)
    monkeypatch.setattr(run_module, "progress_bar", lambda *a, **k: bar)
    config = resolve_config(
        "default", acceptability="lm", lm=str(model), lm_threshold=0.0, limit=12, device="cpu"
    )
    real = run_module.build.build_wordnet_pipeline
    # model batches of 2 sentences: several in one pipeline batch
    monkeypatch.setattr(run_module.build, "build_pipeline", lambda c: _lm_batches_of(2, real(c)))
    result = generate_run(str(sample), config, options=RunOptions(quiet=True))
    postfixes = [text for kind, text in bar.events if kind == "postfix"]
    moves = [n for kind, n in bar.events if kind == "update" and n > 0]
    assert len(postfixes) > 2 and len(moves) > 2, "the pairs move with the sentences"
    assert sum(n for kind, n in bar.events if kind == "update") == 12
    running = 0
    for kind, n in bar.events[:-1]:
        running += n if kind == "update" else 0
        assert running <= 11  # the batch's last pair only when the batch is done
    pattern = r"lm: (\d+) sentences scored, (\d+) from the score cache"
    counts = [sum(map(int, re.search(pattern, t).groups())) for t in postfixes]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    scored = result.stats["triples_accepted"] + result.stats["rejected_acceptability"]
    assert counts[-1] == 2 * scored  # H and H' of every candidate the check judged


def test_the_cost_line_counts_what_the_score_cache_holds_and_loading_is_announced(
    tmp_path, sample_lm, monkeypatch
):
    """Issue 38: a rerun whose every sentence was in the score cache was told "about 2 min". The
    same input and settings into another folder: the cost line says the cache holds them all
    (and measures no speed); the model's load is announced before it starts, and -q hides it."""
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "cache"))
    sample, model, *_ = sample_lm
    args = ("--lm", str(model), "--lm-threshold", "0", *SAMPLE_ARGS)
    first = generate(sample, tmp_path / "one", *args)
    assert first.exit_code == 0, first.output
    lines = first.output.splitlines()
    loading = next(i for i, x in enumerate(lines) if x.startswith("loading the language model"))
    cost = next(i for i, x in enumerate(lines) if x.startswith("language model "))
    assert loading < cost and "(about " in lines[loading]
    assert "sentences to score for 12 pairs" in lines[cost]
    stats = json.loads((tmp_path / "one" / "stats.json").read_text())
    sentences = 2 * (stats["triples_accepted"] + stats["rejected_acceptability"])
    again = generate(sample, tmp_path / "two", *args)
    assert again.exit_code == 0, again.output
    (line,) = [x for x in again.output.splitlines() if x.startswith("language model ")]
    assert f"the score cache holds the {sentences} sentences an earlier run" in line
    assert "measured now" not in line
    quiet = generate(sample, tmp_path / "three", *args, "-q")
    assert quiet.exit_code == 0 and "loading the language model" not in quiet.output


def _lm_batches_of(size, pipeline):
    from dataclasses import replace

    from transnli.generator.run import language_model

    scorer = language_model(pipeline)
    scorer.settings = replace(scorer.settings, batch_size=size)
    return pipeline
