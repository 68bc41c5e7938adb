import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import json  # noqa: E402

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
