"""The language model chooses among candidates (transnli.generator.lm_choice): of a word's realised
antonyms the one with the best d, and at most K triples a sentence, best d first; every number is
on the record, and the output is deterministic. A tiny random causal LM built here scores."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from tiny_lm import build_tiny_causal_lm, tiny_judge
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMSettings
from transnli.generator.build import build_pipeline
from transnli.generator.config import resolve_config
from transnli.generator.errors import ConfigError
from transnli.generator.lm_choice import limit_per_sentence
from transnli.generator.readers import NLIPair
from transnli.generator.record import TripleRecord
from transnli.generator.schema import normalise

from transnli.cli import main

# Words with several direct antonyms after realising (good: bad, evil, ill; high: low, ...).
SENTENCES = [
    "The good man gave a high price for the old car .",
    "She felt good about the long walk and the hard work .",
    "He is a good and honest friend with a light heart .",
    "They kept the old house and the new car .",
]


def vocabulary() -> list[str]:
    """The words of the sentences and of every antonym WordNet offers them, so that the random
    model's scores differ between candidates."""
    from transnli.generator.wordnet import wordnet

    words = set()
    for s in SENTENCES:
        for w in re.findall(r"\w+|[^\w\s]", s):
            words.add(w)
            for syn in wordnet().synsets(w.lower()):
                for lemma in syn.lemmas():
                    for ant in lemma.antonyms():
                        words.update(ant.name().replace("_", " ").split())
    return sorted(words)


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(
        tmp_path_factory.mktemp("tiny-lm"), max_positions=256, words=vocabulary()
    )


def pairs() -> list[NLIPair]:
    return [NLIPair(str(i), "p", s, None, "t", "", i + 1) for i, s in enumerate(SENTENCES)]


def run(tiny_lm_dir, **overrides):
    config = resolve_config(
        "default",
        acceptability="lm",
        lm=str(tiny_lm_dir),
        lm_threshold=-1000.0,  # the check passes everything: what is left is the choice
        grammar="none",
        filters="none",
        device="cpu",
        **overrides,
    )
    pipeline = build_pipeline(config)
    result = pipeline.process(pairs())
    return pipeline, result.accepted, result.rejected


@pytest.fixture(scope="module")
def plain(tiny_lm_dir):
    """The triples accepted without either option: what both options choose among."""
    return run(tiny_lm_dir)[1]


def reference_d(tiny_lm_dir, records) -> list[float]:
    scorer = CausalLMScorer.load(LMSettings(spec=str(tiny_lm_dir), use_cache=False))
    return [
        s.delta
        for s in scorer.compare_many([(r.hypothesis, r.modified_hypothesis) for r in records])
    ]


def test_each_word_keeps_the_antonym_with_the_best_d(tiny_lm_dir, plain):
    pipeline, accepted, rejected = run(tiny_lm_dir, lm_antonyms=3)
    # still one triple per word
    assert [(r.source_id, r.word_index) for r in accepted] == [
        (r.source_id, r.word_index) for r in plain
    ]
    dropped = [r for r in rejected if r.rejected_by == "lm_choice"]
    assert dropped, "some words have several realised antonyms"
    chosen = [r for r in accepted if "lm_choice" in r.checks]
    assert chosen and any(r.antonym != r.candidates[0]["antonym"] for r in chosen)
    for rec in chosen:
        word = [rec] + [
            r for r in dropped if (r.source_id, r.word_index) == (rec.source_id, rec.word_index)
        ]
        entry = rec.checks["lm_choice"]
        assert entry["passed"] and entry["chosen"] == rec.antonym
        by_antonym = {s["antonym"]: s["d"] for s in entry["scored"]}
        assert by_antonym == dict(
            zip([r.antonym for r in word], reference_d(tiny_lm_dir, word), strict=True)
        )
        assert by_antonym[rec.antonym] == max(by_antonym.values())
        # scored in the vector ranker's order, at most lm_antonyms of them
        order = [c["antonym"] for c in rec.candidates]
        assert [s["antonym"] for s in entry["scored"]] == sorted(by_antonym, key=order.index)
        assert 2 <= len(entry["scored"]) <= 3
    for r in dropped:
        assert not r.checks["lm_choice"]["passed"] and "prefers" in r.reason
    stats = pipeline.stats.to_dict()
    assert stats["rejected_filters"]["lm_choice"] == len(dropped)
    assert stats["candidates_built"] == len(accepted) + len(rejected)


def test_a_sentence_keeps_its_k_best_triples_by_d(tiny_lm_dir, plain):
    everything = plain
    pipeline, accepted, rejected = run(tiny_lm_dir, max_per_sentence=1)
    limited = [r for r in rejected if r.rejected_by == "max_per_sentence"]
    assert len(accepted) == len({r.source_id for r in everything}) and limited
    for rec in accepted:
        same = [r for r in everything if r.source_id == rec.source_id]
        best = max(r.checks["acceptability"]["d"] for r in same)
        assert rec.checks["acceptability"]["d"] == best
        assert rec.checks["max_per_sentence"] == {
            "backend": "lm",
            "passed": True,
            "d": best,
            "rank": 1,
            "kept": 1,
        }
    assert all(r.checks["max_per_sentence"]["rank"] > 1 for r in limited)
    assert pipeline.stats.to_dict()["rejected_filters"]["max_per_sentence"] == len(limited)


def record(source, index, d, hypothesis="h"):
    return TripleRecord(
        premise="p",
        hypothesis=hypothesis,
        modified_hypothesis=f"{hypothesis} {index}",
        source_id=source,
        word_index=index,
        checks={"acceptability": {"backend": "lm", "passed": True, "d": d}},
    )


def test_the_per_sentence_limit_breaks_ties_by_word_order_and_keeps_input_order():
    recs = [record("a", 1, -2.0), record("a", 3, -1.0), record("a", 5, -1.0), record("b", 0, -9.0)]
    # the same pair again, right after (its word order restarts): a sentence of its own
    again = [record("b", 0, -3.0)]
    kept, dropped = limit_per_sentence(recs + again, 2)
    assert kept == [recs[1], recs[2], recs[3], again[0]]
    assert dropped == [recs[0]] and dropped[0].rejected_by == "max_per_sentence"


def test_the_options_need_the_lm_check():
    with pytest.raises(ConfigError, match="--acceptability lm, judge or pair-judge"):
        resolve_config("fast", lm_antonyms=3)
    with pytest.raises(ConfigError, match="--acceptability lm, judge or pair-judge"):
        resolve_config("fast", max_per_sentence=1)
    assert resolve_config("default", max_per_sentence=1).acceptability == "pair-judge"
    with pytest.raises(ConfigError, match="lm_antonyms must be >= 1"):
        resolve_config("default", acceptability="lm", lm_antonyms=0)
    assert resolve_config("default", acceptability="lm", lm_antonyms=3).lm_antonyms == 3


@pytest.mark.slow
@pytest.mark.parametrize("check", ["lm", "judge"])
def test_generate_with_both_options_is_byte_identical_across_workers_and_exportable(
    tiny_lm_dir, tmp_path, check
):
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(
            json.dumps({"premise": "p", "hypothesis": s, "label": "neutral", "id": str(i)}) + "\n"
            for i, s in enumerate(SENTENCES)
        )
    )
    opts = ["--acceptability", check, "--lm", str(tiny_lm_dir)]
    if check == "lm":
        opts += ["--lm-threshold", "-1000"]
    else:  # a judge for the tiny model that passes everything: what is left is the choice
        judge = tmp_path / "judge.json"
        judge.write_text(json.dumps(tiny_judge(width=16, layer=1)), encoding="utf-8")
        opts += ["--judge-model", str(judge), "--judge-threshold", "0"]
    opts += ["--lm-antonyms", "3", "--max-per-sentence", "2", "--filters", "none"]
    outs = []
    # the second run: two workers, one pair a batch; the output is the same bytes
    for name, extra in (("a", []), ("b", ["--workers", "2", "--batch-size", "1"])):
        result = CliRunner().invoke(
            main, ["generate", str(source), "--out", str(tmp_path / name), *opts, *extra]
        )
        assert result.exit_code == 0, result.output
        outs.append(tmp_path / name)
    for file in ("triples.jsonl", "rejected.jsonl"):
        assert (outs[0] / file).read_bytes() == (outs[1] / file).read_bytes()
    rows = [json.loads(x) for x in (outs[0] / "rejected.jsonl").read_text().splitlines()]
    rows += [json.loads(x) for x in (outs[0] / "triples.jsonl").read_text().splitlines()]
    assert {r.get("rejected_by") for r in rows} >= {"lm_choice", "max_per_sentence", None}
    for row in rows:
        normalise(row)  # the exported schema knows both entries
    config = json.loads((outs[0] / "config.json").read_text())["config"]
    assert (config["lm_antonyms"], config["max_per_sentence"]) == (3, 2)


def test_a_sentence_too_long_for_the_model_is_one_clear_line(tmp_path):
    from transnli.generator.checks.base import BackendUnavailable

    short = build_tiny_causal_lm(tmp_path / "short", max_positions=6, words=vocabulary())
    with pytest.raises(BackendUnavailable, match="lm_antonyms: .*longer than the language model"):
        run(short, lm_antonyms=3)
