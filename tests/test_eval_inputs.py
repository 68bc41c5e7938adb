"""What `transnli evaluate` says about its inputs before trusting them: a triples file of a
generation run that has not finished, and a model whose tokenizer does not know the words."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from transnli.cli.evaluate import evaluate


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def triples_rows(sentences):
    return [
        {"id": f"t{i}", "premise": p, "hypothesis": h, "modified_hypothesis": h2}
        for i, (p, h, h2) in enumerate(sentences)
    ]


def labels_for(rows):
    pairs = []
    for r in rows:
        p, h, h2 = r["premise"], r["hypothesis"], r["modified_hypothesis"]
        pairs += [(p, h), (h, h2), (h2, h), (p, h2)]
    return [{"premise": a, "hypothesis": b, "label": "neutral"} for a, b in dict.fromkeys(pairs)]


# --------------------------------------------------------------------------- unfinished runs
@pytest.fixture
def generation_run(tmp_path):
    """A generation run folder as `generate` leaves it while it runs (a real RunWriter, not
    finished: triples.jsonl so far and progress.json, no finished.json); and a labels file for
    its triples."""
    from test_export import make_run, record

    run = make_run(tmp_path / "run", [record(i) for i in range(2)], [], finish=False)
    assert (run / "progress.json").is_file() and not (run / "finished.json").exists()
    rows = [json.loads(x) for x in (run / "triples.jsonl").read_text().splitlines()]
    labels = write_jsonl(tmp_path / "labels.jsonl", labels_for(rows))
    return run, labels


def test_a_run_still_generating_is_refused_without_allow_unfinished(generation_run, tmp_path):
    run, labels = generation_run
    out = tmp_path / "eval"
    args = [str(run / "triples.jsonl"), "-m", f"precomputed:{labels}", "--out", str(out)]
    args += ["--no-plots", "-q"]
    res = CliRunner().invoke(evaluate, args)
    assert res.exit_code == 1, res.output
    (line,) = [x for x in res.output.splitlines() if x.startswith("Error:")]
    assert f"{run / 'triples.jsonl'} belongs to a generation run that has not finished" in line
    assert "progress.json and no finished.json" in line and "--allow-unfinished" in line
    assert not out.exists()  # refused before anything is written
    res = CliRunner().invoke(evaluate, [*args, "--allow-unfinished"])
    assert res.exit_code == 0, res.output
    assert "has not finished" in res.stderr and "--allow-unfinished" in res.stderr
    assert json.loads((out / "summary.json").read_text())["provenance"]["n_triples"] == 2


def test_a_finished_run_and_a_file_of_no_run_are_evaluated(generation_run, tmp_path):
    from test_export import make_run, record

    run = make_run(tmp_path / "finished", [record(i) for i in range(2)], [])
    assert (run / "finished.json").is_file()
    (tmp_path / "copy").mkdir()
    loose = tmp_path / "copy" / "triples.jsonl"  # the unfinished run's file, copied out of it
    loose.write_bytes((generation_run[0] / "triples.jsonl").read_bytes())
    for n, tfile in enumerate((run / "triples.jsonl", loose)):
        rows = [json.loads(x) for x in tfile.read_text().splitlines()]
        lfile = write_jsonl(tmp_path / f"l{n}.jsonl", labels_for(rows))
        args = [
            str(tfile),
            "-m",
            f"precomputed:{lfile}",
            "--out",
            str(tmp_path / f"eval{n}"),
        ]
        res = CliRunner().invoke(evaluate, [*args, "--no-plots", "-q"])
        assert res.exit_code == 0, res.output
        assert "has not finished" not in res.output


# --------------------------------------------------------------------------- tokenizer
def test_a_tokenizer_that_does_not_know_the_words_is_warned(tiny_nli_entailing_model_dir, tmp_path):
    # the tiny model's vocabulary holds "the man is happy ." but not these words
    unknown = triples_rows([("zebras gallop quickly .", "zebras are fast .", "zebras are slow .")])
    known = triples_rows([("the man is sleeping .", "the man is happy .", "the man is sad .")])
    outputs = {}
    for name, rows in (("unknown", unknown), ("known", known)):
        tfile = write_jsonl(tmp_path / f"{name}.jsonl", rows)
        out = tmp_path / f"eval-{name}"
        args = [str(tfile), "-m", f"tiny=hf:{tiny_nli_entailing_model_dir}", "--out", str(out)]
        res = CliRunner().invoke(evaluate, [*args, "--no-plots", "-q", "--no-cache"])
        assert res.exit_code == 0, res.output
        outputs[name] = res, out
    res, out = outputs["unknown"]
    warnings = [x for x in res.stderr.splitlines() if "unknown token" in x]
    assert len(warnings) == 1 and "tiny's tokenizer maps" in warnings[0], res.stderr
    summary = json.loads((out / "summary.json").read_text())
    share = summary["provenance"]["models"][0]["unknown_tokens"]
    assert share > 0.5
    assert f"{share:.1%} of the tokens" in warnings[0]
    assert "## Warnings" in (out / "report.md").read_text()
    res, out = outputs["known"]
    assert "unknown token" not in res.stderr
    assert (
        json.loads((out / "summary.json").read_text())["provenance"]["models"][0]["unknown_tokens"]
        == 0.0
    )
