"""A local LLM judge (`llm:hf-causal:FOLDER`, the one offline judge a user has): it says what it
will cost before it starts, its bar moves batch by batch, transformers' own bars stay silent, and
a judge whose replies name no label is refused in one line (with a warning in report.md when it
labelled only some pairs: tests/test_llm_judge.py)."""

import json

import pytest
from click.testing import CliRunner
from tiny_lm import build_tiny_causal_lm
from transnli.evaluator.backends import BackendOptions, create_backend

from transnli.cli import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_judge(tmp_path_factory):
    """A random causal LM: its replies are words of its own vocabulary, never a label."""
    return build_tiny_causal_lm(tmp_path_factory.mktemp("judge") / "tiny", max_positions=512)


def _triples(path):
    rows = [
        ("the dog runs .", "a dog runs .", "a dog walks ."),
        ("the soup is hot .", "the soup is warm .", "the soup is cold ."),
        ("he changed his mind .", "he changed .", "he stayed ."),
    ]
    path.write_text(
        "".join(
            json.dumps({"premise": p, "hypothesis": h, "modified_hypothesis": m}) + "\n"
            for p, h, m in rows
        )
    )
    return path


def test_a_local_judge_that_labels_nothing_is_refused_after_saying_its_cost(
    tiny_judge, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRANSNLI_LLM_CACHE", str(tmp_path / "replies.sqlite3"))
    out = tmp_path / "eval"
    args = ["evaluate", str(_triples(tmp_path / "t.jsonl")), "--out", str(out), "--no-plots"]
    args += ["--model", f"tiny=llm:hf-causal:{tiny_judge}", "--llm-max-tokens", "4"]
    result = CliRunner().invoke(main, [*args, "--llm-concurrency", "2"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output and "Loading weights" not in result.output
    assert f"tiny: up to 12 pairs answered by {tiny_judge} on this machine (cpu)" in result.output
    assert "2 at a time, up to 4 new tokens a reply" in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "tiny gave no label for any of the 9 pairs it was asked" in error[0]
    assert "9 unparseable replies" in error[0] and "--llm-max-tokens" in error[0]
    assert not (out / "summary.json").exists() and not (out / "report.md").exists()


def test_a_local_judge_labels_in_batches_of_its_generation_batch(tiny_judge, tmp_path, monkeypatch):
    """The bar moves after each generation batch (it sat at 0/28 for 10 minutes when the whole
    run was one batch)."""
    monkeypatch.setenv("TRANSNLI_LLM_CACHE", str(tmp_path / "replies.sqlite3"))
    options = BackendOptions(extra={"llm_concurrency": 2, "llm_max_tokens": 2})
    backend = create_backend(f"llm:hf-causal:{tiny_judge}", options)
    try:
        pairs = [("the dog runs .", f"a dog {w} .") for w in ("runs", "walks", "is", "stayed", "a")]
        sizes = [len(idx) for idx, _ in backend.predict_batches(pairs)]
    finally:
        backend.close()
    assert sizes == [2, 2, 1]
