"""The contract of a generation run folder with its user (issue 27, "the rest"): negation runs
export, a failed export leaves a finished run that the same command finishes, --out must be a run
folder, an empty input is an error, and generate reuses an identical finished run as run does."""

from __future__ import annotations

import errno
import json

import pytest
from click.testing import CliRunner
from transnli.generator import publish
from transnli.generator.triples_reader import read_any
from transnli.resources import resource_path

from transnli.cli import main

SAMPLE = str(resource_path("samples", "snli_sample.jsonl"))
# Quick runs: the checks are not what these tests are about.
FAST = ("--grammar", "none", "--acceptability", "none", "-q")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line_error(result, *fragments):
    """A refusal: exit status 1 and one line naming what is wrong, no traceback."""
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def folder_bytes(folder):
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "run.lock"
    }


# -- defect 6: negation runs export -------------------------------------------------------------
@pytest.mark.parametrize("pipeline", ["negation", "wordnet+negation"])
def test_negation_runs_export_every_kind_and_read_back(pipeline, tmp_path):
    out = tmp_path / "run"
    args = ("generate", SAMPLE, "--out", out, "--pipeline", pipeline, "--limit", "12", "-q")
    result = invoke(*args, "--export", "parquet", "--export", "hf", "--export", "card")
    assert result.exit_code == 0, result.output
    assert (out / "finished.json").exists() and not (out / "progress.json").exists()
    expected = [r.to_dict() for r in read_any(out / "triples.jsonl")]
    negations = [r for r in expected if r["pipeline"] == "negation"]
    assert negations and all(r["candidates"][0]["rule"] for r in negations)
    for table in ("triples.parquet", "hf_dataset", "hub/data/snli/test.parquet"):
        assert [r.to_dict() for r in read_any(out / table)] == expected, table
    card = (out / "hub" / "README.md").read_text(encoding="utf-8")
    assert "rule" in card
    # `transnli export` on the finished run writes the same bytes again
    before = folder_bytes(out)
    again = invoke("export", out, "--to", "parquet,hf,card")
    assert again.exit_code == 0, again.output
    assert folder_bytes(out) == before


# -- a failed export leaves a run that a rerun finishes ------------------------------------------
def test_a_failed_export_leaves_a_finished_run_that_the_same_command_exports(tmp_path, monkeypatch):
    out = tmp_path / "run"
    args = ("generate", SAMPLE, "--out", out, "--limit", "6", *FAST, "--export", "parquet")
    real = publish.export_parquet
    calls = []

    def full_disk_once(folder):
        calls.append(folder)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device", str(folder / "x.parquet"))
        return real(folder)

    monkeypatch.setattr(publish, "export_parquet", full_disk_once)
    line = one_line_error(invoke(*args), "holds a finished run", "transnli export", "No space")
    assert str(out) in line
    # The generation itself is finished: evaluate and `transnli export` can use it now.
    assert (out / "finished.json").exists() and not (out / "progress.json").exists()
    assert not (out / "triples.parquet").exists()
    triples = (out / "triples.jsonl").read_bytes()
    rerun = invoke(*args)  # the same command: reuses the run and makes the export
    assert rerun.exit_code == 0, rerun.output
    assert "reusing the finished run" in rerun.output and "exported" in rerun.output
    assert (out / "triples.jsonl").read_bytes() == triples
    expected = [r.to_dict() for r in read_any(out / "triples.jsonl")]
    assert [r.to_dict() for r in read_any(out / "triples.parquet")] == expected


# -- --out must be a run folder ------------------------------------------------------------------
@pytest.mark.parametrize(
    "contents",
    [
        {"guide.md": "# notes\n", "images/plot.png": "png"},  # docs/
        {"summary.json": "{}\n", "report.md": "r\n"},  # an evaluation's folder
        {"triples.jsonl": "", "notes.txt": "mine\n"},  # run files beside foreign ones
    ],
)
@pytest.mark.parametrize("overwrite", [(), ("--overwrite",)])
def test_generate_refuses_a_folder_that_is_not_a_run(contents, overwrite, tmp_path):
    out = tmp_path / "docs"
    for name, text in contents.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")
    before = folder_bytes(out)
    names = sorted(p.name for p in out.iterdir())
    foreign = sorted(n for n in names if n != "triples.jsonl")
    one_line_error(
        invoke("generate", SAMPLE, "--out", out, "--limit", "2", *FAST, *overwrite),
        f"{out} is not a generation run folder",
        foreign[0],
    )
    assert sorted(p.name for p in out.iterdir()) == names  # not even a lock file
    assert folder_bytes(out) == before


def test_a_file_is_no_run_folder_in_the_api(tmp_path):
    import transnli

    out = tmp_path / "notes.txt"
    out.write_text("mine\n", encoding="utf-8")
    with pytest.raises(transnli.TransnliError, match="is a file, not a folder"):
        transnli.generate(SAMPLE, out_dir=out, limit=1, grammar="none", acceptability="none")
    assert out.read_text(encoding="utf-8") == "mine\n"


def test_an_empty_folder_or_a_run_folder_is_taken(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    (out / ".gitkeep").write_text("", encoding="utf-8")  # hidden files do not count
    args = ("generate", SAMPLE, "--out", out, "--limit", "3", *FAST)
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    redo = invoke(*args, "--overwrite")  # a run folder (after a run): fine, and the same bytes
    assert redo.exit_code == 0, redo.output
    assert (out / ".gitkeep").exists()


# -- an empty input is an error ------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, text, extra, why",
    [
        ("empty.jsonl", "", (), "holds no NLI pairs;"),
        ("blank.jsonl", "\n\n", (), "holds no NLI pairs;"),
        ("header.csv", "premise,hypothesis,label\n", (), "holds no NLI pairs;"),
        ("bad.jsonl", "{not json\n[1]\n", ("--skip-bad",), "(2 malformed lines skipped)"),
    ],
)
@pytest.mark.parametrize("command", ["generate", "run"])
def test_an_empty_input_is_an_error_naming_the_file(name, text, extra, why, command, tmp_path):
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    model = ("--model", "m=hf:/nonexistent") if command == "run" else ()
    one_line_error(
        invoke(command, source, "--out", out, *FAST, *extra, *model),
        f"{source} holds no NLI pairs",
        why,
        "nothing to generate",
    )
    assert not out.exists()  # refused before anything is written


def test_an_empty_list_of_pairs_is_an_error_in_the_api():
    import transnli

    with pytest.raises(transnli.TransnliError, match="no NLI pairs were given"):
        transnli.generate([], grammar="none", acceptability="none")


# -- generate and run agree on an identical finished command -------------------------------------
def test_generate_reuses_an_identical_finished_run_and_refuses_another(tmp_path):
    out = tmp_path / "run"
    args = ("generate", SAMPLE, "--out", out, "--limit", "4", *FAST)
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    before = folder_bytes(out)
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != "run.lock"}
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert (
        f"reusing the finished run in {out} (same input and config); --overwrite to redo"
        in again.output
    )
    assert folder_bytes(out) == before
    after = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != "run.lock"}
    assert after == stamps  # nothing rewritten (the lock holds the PID of each run)
    other = invoke("generate", SAMPLE, "--out", out, "--limit", "5", *FAST)
    one_line_error(other, "different input or configuration", "--overwrite")
    assert folder_bytes(out) == before
    redo = invoke("generate", SAMPLE, "--out", out, "--limit", "5", *FAST, "--overwrite")
    assert redo.exit_code == 0 and "reusing" not in redo.output, redo.output
    assert json.loads((out / "stats.json").read_text())["sentences_read"] == 5
