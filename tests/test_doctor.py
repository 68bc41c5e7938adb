import json

from click.testing import CliRunner
from transnli.evaluator.cli import main


def test_doctor_lists_every_resource_with_status_and_fix():
    result = CliRunner().invoke(main, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}  # stdout must be clean JSON
    for name in ("WordNet (nltk)", "spaCy English model", "word vectors (GloVe 6B 50-d)",
                 "grammar: harper", "grammar: languagetool", "acceptability: link-grammar",
                 "acceptability: cola", "torch"):
        assert name in rows and rows[name]["fix"]
    # Provisioned by scripts/setup.sh on every machine the tests run on.
    for name in ("WordNet (nltk)", "spaCy English model", "grammar: harper", "acceptability: link-grammar"):
        assert rows[name]["usable"], rows[name]
    assert rows["WordNet (nltk)"]["version"] == "3.0"
