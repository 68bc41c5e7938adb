import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import json  # noqa: E402

from bench_quality import judged_sentence_lines, parse_override  # noqa: E402


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
