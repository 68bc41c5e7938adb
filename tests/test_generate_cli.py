"""`transnli generate` end to end on the bundled sample, with every real stage (default preset)."""

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from transnli.generator.record import read_triples
from transnli.resources import resource_path

from transnli.cli import main

SAMPLE = str(resource_path("samples", "snli_sample.jsonl"))
TRIPLE_FIELDS = {
    "id",
    "source_id",
    "dataset",
    "split",
    "premise",
    "hypothesis",
    "modified_hypothesis",
    "gold_label",
    "word",
    "word_index",
    "char_start",
    "char_end",
    "pos",
    "tag",
    "antonym",
    "candidates",
    "pipeline",
    "checks",
}

# the filters of `fast`, the preset the suite runs by default (tests/conftest.py)
FAST_FILTERS = (
    "auxiliary",
    "light_verb",
    "fixed_phrase",
    "licensing",
    "argument_structure",
    "coreference",
    "rare_sense",
    "collocation",
)


def generate(out, *extra):
    result = CliRunner().invoke(main, ["generate", SAMPLE, "--out", str(out), "-q", *extra])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    generate(out)
    return out


def test_writes_the_four_files_with_the_documented_fields(sample_run):
    assert {p.name for p in sample_run.iterdir()} >= {
        "triples.jsonl",
        "rejected.jsonl",
        "stats.json",
        "config.json",
    }
    triples = [json.loads(line) for line in (sample_run / "triples.jsonl").read_text().splitlines()]
    assert len(triples) >= 20
    for t in triples:
        assert set(t) >= TRIPLE_FIELDS
        assert t["pipeline"] == "wordnet" and t["dataset"] == "snli"
        # Only the word changes (and an "a"/"an" right before it, to agree with the new word).
        suffix = t["hypothesis"][t["char_end"] :]
        assert t["modified_hypothesis"].endswith(suffix)
        new_prefix = t["modified_hypothesis"][: len(t["modified_hypothesis"]) - len(suffix)]
        no_article = lambda text: re.sub(r"\b(an?|An?|AN?) $", "", text)  # noqa: E731
        assert no_article(new_prefix).startswith(no_article(t["hypothesis"][: t["char_start"]]))
        assert t["hypothesis"][t["char_start"] : t["char_end"]] == t["word"]
        assert t["candidates"][0]["antonym"] == t["antonym"]
        # every filter's verdict, then the two checks, on every accepted record
        assert set(t["checks"]) == {"grammar", "acceptability", *FAST_FILTERS}
        assert all(c["passed"] for c in t["checks"].values())
    rejected = [
        json.loads(line) for line in (sample_run / "rejected.jsonl").read_text().splitlines()
    ]
    for r in rejected:
        assert r["rejected_by"] in ("grammar", "acceptability", *FAST_FILTERS) and r["reason"]
        assert r["checks"][r["rejected_by"]]["passed"] is False


def test_stats_add_up(sample_run):
    s = json.loads((sample_run / "stats.json").read_text())
    assert s["sentences_read"] == len(Path(SAMPLE).read_text().splitlines())
    assert s["words_considered"] == (
        s["skipped_no_antonym"]
        + s["skipped_no_pos_match"]
        + s["skipped_fixed_expression"]
        + s["skipped_unrealisable"]
        + s["candidates_built"]
    )
    assert s["candidates_built"] == (
        sum(s["rejected_filters"].values())
        + s["rejected_grammar"]
        + s["rejected_acceptability"]
        + s["triples_accepted"]
    )
    assert s["triples_accepted"] == sum(1 for _ in read_triples(sample_run / "triples.jsonl"))
    assert 0 < s["acceptance_rate"] <= 1


def test_config_records_provenance(sample_run):
    c = json.loads((sample_run / "config.json").read_text())
    assert (
        c["transnli_version"] and c["config"]["preset"] == "fast"
    )  # the tests pin fast (conftest)
    res = c["resources"]
    assert res["wordnet"].startswith("wordnet-3.0") and "core_web_sm" in res["spacy_model"]
    assert "glove" in res["vectors"] and set(res["checks"]) == {"grammar", "acceptability"}


def test_same_input_and_config_give_identical_bytes(sample_run, tmp_path):
    generate(tmp_path, "--batch-size", "7")  # batch boundaries must not matter
    for name in ("triples.jsonl", "rejected.jsonl", "stats.json"):
        assert (tmp_path / name).read_bytes() == (sample_run / name).read_bytes(), name


def test_crash_mid_run_resumes_to_the_same_bytes(sample_run, tmp_path, monkeypatch):
    from transnli.generator.pipeline import WordNetPipeline

    real_check, calls = WordNetPipeline.check_batch, []

    def crash_on_third_batch(self, built):
        # A crash in the checks of the third batch: what the first two wrote must be kept.
        calls.append(built.n_pairs)
        if len(calls) == 3:
            raise RuntimeError("simulated crash")
        return real_check(self, built)

    monkeypatch.setattr(WordNetPipeline, "check_batch", crash_on_third_batch)
    crashed = CliRunner().invoke(
        main, ["generate", SAMPLE, "--out", str(tmp_path), "-q", "--batch-size", "16"]
    )
    assert crashed.exit_code != 0 and isinstance(crashed.exception, RuntimeError)
    progress = json.loads((tmp_path / "progress.json").read_text())
    # Two batches written, and the checkpoint's counts are theirs alone (not those of the
    # batch that was built when the crash came).
    assert progress["stats"]["sentences_read"] == 32, progress
    monkeypatch.undo()
    resumed = generate(tmp_path, "--batch-size", "16")
    assert "Resuming" in resumed.output
    assert not (tmp_path / "progress.json").exists()
    for name in ("triples.jsonl", "rejected.jsonl", "stats.json"):
        assert (tmp_path / name).read_bytes() == (sample_run / name).read_bytes(), name


def test_an_unfinished_run_is_not_resumed_by_another_transnli_version(tmp_path, monkeypatch):
    from transnli.generator import build
    from transnli.generator.pipeline import WordNetPipeline

    real_check, calls = WordNetPipeline.check_batch, []

    def crash_on_second_batch(self, built):
        calls.append(built)
        if len(calls) == 2:
            raise RuntimeError("simulated crash")
        return real_check(self, built)

    with monkeypatch.context() as m:
        m.setattr(WordNetPipeline, "check_batch", crash_on_second_batch)
        CliRunner().invoke(
            main, ["generate", SAMPLE, "--out", str(tmp_path), "-q", "--batch-size", "16"]
        )
    assert (tmp_path / "progress.json").exists()
    real_version = build.dist_version
    monkeypatch.setattr(
        build, "dist_version", lambda name: "99.0" if name == "transnli" else real_version(name)
    )
    upgraded = CliRunner().invoke(
        main, ["generate", SAMPLE, "--out", str(tmp_path), "-q", "--batch-size", "16"]
    )
    assert upgraded.exit_code != 0 and "another transnli version" in upgraded.output


def test_limit_and_existing_run(tmp_path):
    generate(tmp_path, "--limit", "5")
    assert json.loads((tmp_path / "stats.json").read_text())["sentences_read"] == 5
    again = CliRunner().invoke(main, ["generate", SAMPLE, "--out", str(tmp_path), "-q"])
    assert again.exit_code != 0 and "--overwrite" in again.output


def test_unavailable_backend_fails_at_start_with_how_to_fix(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "generate",
            SAMPLE,
            "--out",
            str(tmp_path),
            "--grammar",
            "languagetool",
            "--languagetool-url",
            "http://127.0.0.1:9",
            "-q",
        ],
    )
    assert result.exit_code != 0 and "harper" in result.output
    assert not (tmp_path / "triples.jsonl").exists()


def test_malformed_input_names_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"premise": "A man sleeps.", "hypothesis": "A man is awake."}\n{"premise": "x"}\n'
    )
    result = CliRunner().invoke(main, ["generate", str(bad), "--out", str(tmp_path / "o"), "-q"])
    assert (
        result.exit_code != 0 and "bad.jsonl:2" in result.output and "hypothesis" in result.output
    )
    ok = CliRunner().invoke(
        main, ["generate", str(bad), "--out", str(tmp_path / "o2"), "-q", "--skip-bad"]
    )
    assert ok.exit_code == 0, ok.output
    assert (
        json.loads((tmp_path / "o2" / "stats.json").read_text())["sentences_skipped"]["malformed"]
        == 1
    )
