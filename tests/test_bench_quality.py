import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_quality  # noqa: E402
from bench_quality import judged_sentence_lines, key, parse_override, rescored  # noqa: E402


def test_none_switches_a_check_off_instead_of_keeping_the_default():
    # "none" read as None would leave the preset's grammar and acceptability checks on, so the
    # "raw candidates, checks off" runs that feed the judged sets would silently be filtered.
    assert parse_override("grammar=none") == ("grammar", "none")
    assert parse_override("acceptability=none") == ("acceptability", "none")
    assert parse_override("filters=none") == ("filters", "none")


def test_other_values_are_typed():
    assert parse_override("include_aux=true") == ("include_aux", True)
    assert parse_override("max_per_sentence=none") == ("max_per_sentence", None)
    assert parse_override("lm_antonyms=3") == ("lm_antonyms", 3)
    assert parse_override("antonyms=broad") == ("antonyms", "broad")


def test_judged_only_keeps_the_sentences_whose_candidates_were_judged():
    """A genre set's judged candidates are whole sentences chosen from a larger file: its precision
    is read on those sentences, not diluted by unjudged triples of the others."""
    lines = [
        json.dumps({"id": str(i), "premise": "P.", "hypothesis": h}) + "\n"
        for i, h in enumerate(["The soup is hot.", "The door is open.", "He is happy."])
    ]
    judged = {"k1": {"hypothesis": "He is happy."}, "k2": {"hypothesis": "The soup is hot."}}
    assert judged_sentence_lines([*lines, "\n"], judged) == [lines[0], lines[2]]


def test_a_rescored_run_counts_the_triples_judged_since_and_lists_the_rest_as_unjudged():
    """A run's new H' judged after it ran count without a re-run: good ones raise precision's
    numerator, bad ones only its denominator, and what is still unjudged stays listed."""

    def triple(h, m):
        return {
            "hypothesis": h,
            "word": "w",
            "word_index": 0,
            "pos": "ADJ",
            "antonym": "a",
            "modified_hypothesis": m,
        }

    run = {
        "accepted": 5,
        "judged_accepted": 2,
        "good_accepted": 1,
        "precision": 0.5,
        "coverage": 0.4,
        "good_keys": [key("h1", "m1")],
        "unjudged": [triple("h3", "m3"), triple("h4", "m4"), triple("h5", "m5")],
    }
    judged = {key("h3", "m3"): {"good": True}, key("h4", "m4"): {"good": False}}
    out = rescored(run, judged)
    assert (out["judged_accepted"], out["good_accepted"]) == (4, 2)
    assert (out["precision"], out["coverage"]) == (0.5, 0.8)
    assert out["good_keys"] == [key("h1", "m1"), key("h3", "m3")]
    assert [u["hypothesis"] for u in out["unjudged"]] == ["h5"]
    assert out["rescored"]["newly_judged"] == 2
    assert rescored(out, judged)["rescored"]["newly_judged"] == 2  # again: nothing new


def test_rescoring_compares_with_a_baseline_and_refuses_options_it_cannot_apply(tmp_path, capsys):
    """--rescore reads a saved run: --baseline compares as after a real run, and an option that
    would change the generation (--set, --sentences, ...) is an error, not silently ignored."""
    unjudged = {"hypothesis": "h2", "modified_hypothesis": "m2", "word": "w", "pos": "ADJ"}
    run = {
        "accepted": 2,
        "judged_accepted": 1,
        "good_accepted": 1,
        "precision": 1.0,
        "coverage": 0.5,
        "good_keys": [key("h1", "m1")],
        "unjudged": [unjudged],
    }
    saved, base = tmp_path / "run.json", tmp_path / "base.json"
    saved.write_text(json.dumps(run))
    base.write_text(json.dumps({**run, "good_keys": [key("h1", "m1"), key("h9", "m9")]}))
    judgements = tmp_path / "judged.jsonl"
    judgements.write_text(json.dumps({"hypothesis": "h2", "modified_hypothesis": "m2", "good": 1}))
    out = tmp_path / "out.json"
    bench_quality.main(
        [
            "--rescore",
            str(saved),
            "--judgements",
            str(judgements),
            "--baseline",
            str(base),
            "--save",
            str(out),
        ]
    )
    result = json.loads(out.read_text())
    assert (result["good_accepted"], result["coverage"]) == (2, 1.0)
    assert result["baseline"]["good_kept"] == 1 and result["baseline"]["good_accepted"] == 2
    capsys.readouterr()
    for extra in (
        ["--set", "max_per_sentence=2"],
        ["--sentences", "other.jsonl"],
        ["--judged-only"],
    ):
        with pytest.raises(SystemExit) as stop:
            bench_quality.main(["--rescore", str(saved), "--judgements", str(judgements), *extra])
        assert stop.value.code == 2
        assert f"{extra[0]} cannot change it" in capsys.readouterr().err
