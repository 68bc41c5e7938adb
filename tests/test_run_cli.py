"""`transnli run`: generate on the bundled sample, then evaluate, in one command."""

import json

import pytest
from click.testing import CliRunner
from transnli.resources import resource_path

from transnli.cli import main

SAMPLE = str(resource_path("samples", "snli_sample.jsonl"))


def test_run_generates_then_evaluates(tmp_path, tiny_nli_entailing_model_dir):
    args = [
        "run",
        SAMPLE,
        "--out",
        str(tmp_path),
        "--limit",
        "12",
        "-q",
        "--no-progress",
        "--model",
        str(tiny_nli_entailing_model_dir),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--no-plots",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "generate" / "stats.json").read_text())
    assert stats["sentences_read"] == 12
    summary = json.loads((tmp_path / "evaluate" / "summary.json").read_text())
    (model,) = summary["models"]
    (dataset,) = model["datasets"]
    assert dataset["n_triples"] == stats["triples_accepted"]
    # A model that always says entailment: every (H,H') is mutual E and every (P,H)=E, so rule 1
    # applies to every triple and is never violated; the other rules have no cases.
    assert dataset["mutual_entailment_rate"] == 1.0
    assert dataset["rules"]["rule1"]["cases"] == dataset["n_triples"]
    assert dataset["rules"]["rule1"]["violations"] == 0
    assert dataset["rules"]["rule2"]["cases"] == 0 and dataset["rules"]["rule2"]["rate"] is None
    # Table 9 comes from the generator's stats.json beside the triples.
    assert "Table 9" in (tmp_path / "evaluate" / "report.md").read_text()

    triples_before = (tmp_path / "generate" / "triples.jsonl").read_bytes()
    again = CliRunner().invoke(main, args)  # same settings: generation reused, labels cached
    assert again.exit_code == 0, again.output
    assert "reusing the finished run" in again.output
    assert (tmp_path / "generate" / "triples.jsonl").read_bytes() == triples_before
    assert json.loads((tmp_path / "evaluate" / "summary.json").read_text()) == summary

    other = CliRunner().invoke(main, [*args, "--antonyms", "broad"])  # other settings: refused
    assert other.exit_code != 0 and "--overwrite" in other.output


@pytest.mark.parametrize("flag", ["-q", "--quiet", "--no-progress"])
def test_progress_flags_are_the_same_in_every_command(flag, tmp_path):
    triples = tmp_path / "t.jsonl"
    triples.write_text("")

    def params(command, *args):
        return main.commands[command].make_context(command, [*args, flag]).params

    assert params("generate", "in.jsonl", "--out", "o")["quiet"] is True
    assert params("evaluate", str(triples), "--out", "o", "--model", "m")["show_progress"] is False
    assert params("run", "in.jsonl", "--out", "o", "--model", "m")["show_progress"] is False
    assert (
        main.commands["generate"]
        .make_context("generate", ["in.jsonl", "--out", "o"])
        .params["quiet"]
        is False
    )
