import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_quality import parse_override  # noqa: E402


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
