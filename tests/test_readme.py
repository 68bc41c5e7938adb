"""The README's tutorial and Python API, run as a user would copy them, with the hub checkpoints
swapped for tiny local models (no hub here) and the Hub upload left out."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from transnli.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
HUB_MODELS = ("FacebookAI/roberta-large-mnli", "microsoft/deberta-large-mnli")


def block(heading: str, lang: str) -> str:
    section = README.split(heading, 1)[1]
    return re.search(rf"```{lang}\n(.*?)```", section, flags=re.S).group(1)


def commands(text: str) -> list[list[str]]:
    """The shell commands of a bash block: comments dropped, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [
        shlex.split(line)
        for line in joined.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


@pytest.fixture
def local_models(tiny_nli_model_builder, tmp_path):
    return [tiny_nli_model_builder(tmp_path / f"m{i}", seed=i) for i in range(len(HUB_MODELS))]


def test_tutorial_commands_run_as_written(tmp_path, local_models, monkeypatch):
    monkeypatch.chdir(ROOT)
    runs = tmp_path / "runs"
    ran = []
    for argv in commands(block("## A five-minute tutorial", "bash")):
        if argv[0].startswith("HF_TOKEN="):
            continue  # the upload: tests/test_export.py checks publish against a mocked Hub client
        assert argv[0] == ".venv/bin/transnli", argv
        args = [a.replace("runs/", f"{runs}/") for a in argv[1:]]
        for hub, local in zip(HUB_MODELS, local_models, strict=True):
            args = [a.replace(hub, f"hf:{local}") for a in args]
        if args[0] == "evaluate":
            args.append("--no-plots")
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, (args, res.output)
        ran.append(args[0])
    assert ran == ["generate", "evaluate", "show", "compare", "export"]
    assert (runs / "eval" / "samples.jsonl").is_file() and (
        runs / "sample" / "triples.parquet"
    ).is_file()
    assert (runs / "sample" / "hub" / "README.md").read_text().startswith("---\n")
    assert "No-knowledge alarm" in (runs / "eval" / "report.md").read_text()
    assert "Paired comparison of models" in (runs / "eval" / "report.md").read_text()
    assert json.loads((runs / "eval" / "comparison.json").read_text())["comparisons"]


def test_python_api_block_runs_as_written(tmp_path, local_models, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = block("## Python API", "python").replace(HUB_MODELS[0], f"hf:{local_models[0]}")
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the README's own example
    assert isinstance(scope["ev"].rules, pd.DataFrame) and len(scope["ev"].rules)
    assert isinstance(scope["ev"].violations(rule="rule2", model="roberta"), pd.DataFrame)
    assert len(scope["gen"].records) > 100


def judge_through_the_page(args: list[str], annotator_bad_every: int) -> int:
    """Run `transnli review` as the README does (a server that waits for Ctrl-C), judge its whole
    sample through the page's API as the keys would, then stop it with SIGINT; returns how many
    triples were judged."""
    import json
    import signal
    import subprocess
    import sys
    import urllib.request

    from ctrl_c import sigint_as_in_a_terminal

    proc = subprocess.Popen(
        [sys.executable, "-m", "transnli.cli", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_in_a_terminal,
    )
    try:
        url = proc.stdout.readline().split()[-1]
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url, url
        base, token = url.split("?token=")

        def call(path, body=None):
            data = None if body is None else json.dumps(body).encode()
            req = urllib.request.Request(base + path, data=data, headers={"X-Review-Token": token})
            with urllib.request.urlopen(req) as res:
                return json.loads(res.read())

        state, judged = call("api/state"), 0
        while state["triple"]:
            i = state["triple"]["index"]
            bad = i % annotator_bad_every == 0
            verdict = {"verdict": "bad", "error_type": "grammar"} if bad else {"verdict": "good"}
            state = call("api/judge", {"index": i, "digest": state["triple"]["digest"], **verdict})
            judged += 1
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    return judged


def test_review_and_publish_step_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    runs = tmp_path / "runs"
    generate = commands(block("## A five-minute tutorial", "bash"))[0]
    steps = [generate, *commands(block("### Review and publish", "bash"))]
    ran, judged = [], []
    for argv in steps:
        if argv[0].startswith("HF_TOKEN="):
            continue  # the upload: tests/test_review.py publishes --reviewed to a mocked Hub
        assert argv[0] == ".venv/bin/transnli", argv
        args = [a.replace("runs/", f"{runs}/") for a in argv[1:]]
        if args[0] == "review" and "--agreement" not in args:
            judged.append(judge_through_the_page(args, 4 + len(judged)))
        else:
            res = CliRunner().invoke(main, args)
            assert res.exit_code == 0, (args, res.output)
            if "--agreement" in args:
                assert "triples judged by 2 (alice, bob)" in res.output
                assert "alice vs bob: 100 triples both judged" in res.output
        ran.append(args[0])
    assert ran == ["generate", "review", "review", "review", "export"] and judged == [100, 100]
    card = (runs / "sample" / "hub-reviewed" / "README.md").read_text()
    assert "## Human review" in card and "**Measured precision: " in card
