"""The dataset card's settings table shows the values a run used, also those a check resolved
itself where the config left them unset (issue 38: `judge_model -` and `judge_threshold -`
although the judge file's 0.55 was used). A tiny random causal LM and a judge written for it
(tests/tiny_lm.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from tiny_lm import build_tiny_causal_lm, tiny_judge

from transnli.cli import main


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"), max_positions=64)


def test_the_card_shows_the_judges_file_and_threshold_when_the_config_left_them_unset(
    tiny_lm_dir, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "cache"))
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({**tiny_judge(), "threshold": 0.125}), encoding="utf-8")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"premise": "p", "hypothesis": h, "label": "neutral", "id": i}) + "\n"
            for i, h in enumerate(["the soup is hot .", "a big dog runs ."])
        ),
        encoding="utf-8",
    )
    out = tmp_path / "run"
    args = [
        "generate", str(pairs), "--out", str(out), "--preset", "default", "--grammar", "none",
        "--filters", "none", "--acceptability", "judge", "--lm", str(tiny_lm_dir),
        "--judge-model", str(judge), "--device", "cpu", "--quiet",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["config"]["judge_threshold"] is None  # what was asked: nothing
    assert config["resources"]["checks"]["acceptability"]["settings"] == {
        "judge_model": str(judge),
        "judge_threshold": 0.125,
    }
    records = [json.loads(x) for x in (out / "rejected.jsonl").read_text().splitlines()]
    records += [json.loads(x) for x in (out / "triples.jsonl").read_text().splitlines()]
    assert {r["checks"]["acceptability"]["threshold"] for r in records if r.get("checks")} == {
        0.125
    }
    result = CliRunner().invoke(main, ["export", str(out), "--to", "card"])
    assert result.exit_code == 0, result.output
    card = (out / "hub" / "README.md").read_text()
    settings = card.split("## Preset and settings\n", 1)[1].split("\n## ", 1)[0]
    assert "| judge_threshold | 0.125 |" in settings
    assert f"| judge_model | {judge} |" in settings
    assert "| lm | " + str(tiny_lm_dir) + " |" in settings
