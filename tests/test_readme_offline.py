"""The README's way to evaluate with no network, run as written on the bundled sample: the pairs a
run needs, labelled here by a small rule (the user's own labeller), read back as precomputed
labels; and the local LLM judge's command, with a tiny random causal LM in MODEL_DIR (which
answers no label, so the run is refused in one line: the command itself is what is checked)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from test_readme import README, ROOT, block, commands
from tiny_lm import build_tiny_causal_lm

from transnli.cli import main

pytestmark = pytest.mark.slow


def _label(premise: str, hypothesis: str) -> str:
    """Any labeller will do: one word swapped reads as a contradiction, else neutral."""
    a, b = premise.lower().split(), hypothesis.lower().split()
    swapped = len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1
    return "contradiction" if swapped else "neutral"


def test_the_offline_evaluation_runs_as_written_on_the_sample(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TRANSNLI_LLM_CACHE", str(tmp_path / "replies.sqlite3"))
    runs = tmp_path / "runs"
    generate = commands(block("## A five-minute tutorial", "bash"))[0]
    assert generate[1] == "generate"
    # the tutorial's step 1 on the sample's first 20 pairs (what follows reads whatever it made)
    args = [a.replace("runs/", f"{runs}/") for a in generate[1:]]
    made = CliRunner().invoke(main, [*args, "--limit", "20"])
    assert made.exit_code == 0, made.output
    model_dir = build_tiny_causal_lm(tmp_path / "llm", max_positions=512)
    offline = README.split("With no network", 1)[1]
    ran = []
    assert "```bash" in offline
    for argv in commands(block("With no network", "bash")):
        assert argv[0] == ".venv/bin/transnli", argv
        args = [a.replace("runs/", f"{runs}/").replace("MODEL_DIR", str(model_dir)) for a in argv]
        res = CliRunner().invoke(main, [*args[1:], *(["--no-plots"] if "evaluate" in args else [])])
        ran.append(args[1])
        if args[1] == "pairs":  # what the user does next, by hand or with their own model
            assert res.exit_code == 0, res.output
            rows = [json.loads(line) for line in (runs / "pairs.jsonl").open()]
            (runs / "labelled.jsonl").write_text(
                "".join(
                    json.dumps({**r, "label": _label(r["premise"], r["hypothesis"])}) + "\n"
                    for r in rows
                )
            )
        elif "precomputed:" in " ".join(args):
            assert res.exit_code == 0, res.output
            summary = json.loads((runs / "eval-offline" / "summary.json").read_text())
            n = sum(1 for _ in (runs / "sample" / "triples.jsonl").open())
            assert summary["models"][0]["model"] == "mine"
            assert summary["models"][0]["overall"]["n_triples"] == n
        else:  # the local LLM judge: loaded, its cost said, and refused as it labels nothing
            assert res.exit_code == 1 and "Traceback" not in res.output
            assert "answered by" in res.output and "llm gave no label for any of" in res.output
    assert ran == ["pairs", "evaluate", "evaluate"]
