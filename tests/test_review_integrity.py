"""Which judgements count (transnli.review.integrity), and the reviewed exports that use them:
judgements checked by their triple's content digest and their declared sample, names escaped on
the card, reviewed files written beside the run's own, refusals of a review that is not of the
run, and a regeneration that keeps the judgements."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from test_export import FakeApi, make_run, record
from test_review import cli, judge_some, log_lines, open_session
from transnli.review.integrity import (
    SampleRule,
    TripleKey,
    check_judgements,
    random_sample,
    triple_problem,
)
from transnli.review.log import LOG, SampleSpec, Verdict, judgement_record


@pytest.fixture
def run_dir(tmp_path):
    return make_run(tmp_path / "run", [record(i) for i in range(30)], [record(99, id="rej-99")])


def append_lines(run_dir, *lines):
    with open(run_dir / LOG, "a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")


def forged(run_dir, index, annotator="mallory", good=True, sample=None):
    """A well-formed line, as the server would write it, for the triple at `index`."""
    triple = json.loads((run_dir / "triples.jsonl").read_text().splitlines()[index])
    verdict = Verdict("good") if good else Verdict("bad", "grammar")
    return judgement_record(
        triple, index, verdict, annotator, sample or SampleSpec("random", 1, 10, 30)
    )


def digest(sha):
    return hashlib.sha256(sha.encode()).hexdigest()


# -- what every line records -----------------------------------------------------------------------
def test_every_line_records_its_triple_order_annotator_and_time(run_dir):
    s = open_session(run_dir, annotator="alice", sample=7, seed=3)
    s.judge(s.order[0], Verdict("good"))
    s.judge(s.order[1], Verdict("skip"))
    s.undo()
    lines = log_lines(run_dir)
    triple = json.loads((run_dir / "triples.jsonl").read_text().splitlines()[s.order[0]])
    sentences = [triple["premise"], triple["hypothesis"], triple["modified_hypothesis"]]
    for line in lines:
        assert (line["sample"], line["sample_seed"], line["sample_size"], line["sample_of"]) == (
            "random",
            3,
            7,
            30,
        )
        assert line["annotator"] == "alice"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line["time"])
    assert lines[0]["digest"] == digest(json.dumps(sentences))
    assert lines[2]["undone"] is True


# -- the rules -------------------------------------------------------------------------------------
def test_a_judgement_counts_only_for_its_triple_and_its_sample():
    triple = {"id": "t-3", "premise": "P", "hypothesis": "H", "modified_hypothesis": "M"}
    key = TripleKey.of(triple)
    j = judgement_record(triple, 3, Verdict("good"), "a", SampleSpec("all", 0, 5, 5))
    assert triple_problem(j, key, 5) is None
    assert "is gone" in triple_problem(j, None, 3)
    other = TripleKey.of({**triple, "modified_hypothesis": "N"})
    assert "not the one it judged" in triple_problem(j, other, 5)
    assert "is not the id of record 3" in triple_problem({**j, "item": "t-4"}, key, 5)
    assert "no content digest" in triple_problem(
        {k: v for k, v in j.items() if k != "digest"}, key, 5
    )

    rule = SampleRule(30)
    sample = random_sample(30, 0, 10)
    inside = {"index": sample[0], "sample": "random", "sample_seed": 0, "sample_size": 10}
    outside = {**inside, "index": min(set(range(30)) - set(sample))}
    assert rule.problem({**inside, "sample_of": 30}) is None
    assert "not in the random sample it declares (seed 0, size 10)" in rule.problem(
        {**outside, "sample_of": 30}
    )
    assert "drawn from 31 triples, and the run has 30" in rule.problem({**inside, "sample_of": 31})
    assert "no sample_of" in rule.problem(inside)
    assert "is not one of random" in rule.problem({**inside, "sample": "hand", "sample_of": 30})
    assert rule.problem({**outside, "sample": "all", "sample_of": 30}) is None


def test_an_out_of_sample_line_is_reported_and_not_counted(run_dir):
    """A line written by hand for a triple outside the sample it claims: --agreement names it and
    the precision leaves it out."""
    order = judge_some(run_dir)  # A: 7 of 10 good on the seed-1 sample, B: 4
    outside = sorted(set(range(30)) - set(order))[:3]
    append_lines(run_dir, *(forged(run_dir, i, "A") for i in outside))
    res = cli("review", run_dir, "--agreement")
    assert res.exit_code == 0, res.output
    assert res.output.count("is not in the random sample it declares (seed 1, size 10)") == 3
    assert "review.jsonl:15: record" in res.output and "3 judgements not counted" in res.output
    assert "precision on the random sample (seed 1, size 10): 0.600 (6/10;" in res.output


def test_judgements_of_an_edited_item_or_index_are_reported(run_dir):
    order = judge_some(run_dir)
    lines = (run_dir / LOG).read_text().splitlines()
    first = json.loads(lines[0])
    assert first["index"] == order[0]
    edited_item = {**first, "item": "snli-999"}
    moved = json.loads(lines[2])
    other = next(i for i in order if i not in (order[0], moved["index"]))
    edited_index = {**moved, "index": other, "annotator": "C"}
    lines[0] = json.dumps(edited_item)
    (run_dir / LOG).write_text("\n".join(lines) + "\n")
    append_lines(run_dir, edited_index)
    res = cli("review", run_dir, "--agreement")
    assert res.exit_code == 0, res.output
    assert "review.jsonl:1: item 'snli-999' is not the id of record" in res.output
    assert f"record {other} is not the one it judged (the sentences differ)" in res.output
    assert "2 judgements not counted" in res.output


def test_deleting_a_line_of_the_triples_leaves_no_judgement_on_the_wrong_triple(run_dir):
    """The first line of triples.jsonl deleted after judging: every triple moves up one record;
    no judgement counts for the triple that took its place, the page shows them again, and the
    reviewed export refuses rather than publish a precision of nothing."""
    judge_some(run_dir)
    path = run_dir / "triples.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))
    res = cli("review", run_dir, "--agreement")
    assert res.exit_code == 0, res.output
    assert "0 triples judged by 0" in res.output and "14 judgements not counted" in res.output
    s = open_session(run_dir, sample=10, seed=1, annotator="A")
    state = s.state()
    assert state["counts"] == {"good": 0, "bad": 0, "skip": 0} and state["stale"] >= 1
    res = cli("export", run_dir, "--to", "parquet", "--reviewed", "good-only")
    assert res.exit_code == 1
    assert "holds no judgement of a triple of this run" in res.output
    assert not (run_dir / "triples.reviewed.parquet").exists()
    # Judging again on the new file works: the stale line does not block the triple.
    s.judge(state["triple"]["index"], Verdict("good"))
    assert s.state()["counts"]["good"] == 1


def test_a_wrong_value_in_the_log_is_named_by_the_export(run_dir):
    judge_some(run_dir)
    append_lines(run_dir, {**log_lines(run_dir)[0], "good": "yes"})
    res = cli("export", run_dir, "--to", "card", "--reviewed", "good-only")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "review.jsonl:15: field 'good' must be true, false or null (got str" in res.output
    res = cli("review", run_dir, "--agreement")
    assert res.exit_code == 1 and "field 'good'" in res.output


# -- the card --------------------------------------------------------------------------------------
def test_annotator_names_are_escaped_on_the_card_and_the_terminal(run_dir):
    """Names from a hand-edited log: a heading, an HTML tag, a table pipe, a newline."""
    nasty = "# Boss <img src=x onerror=alert(1)> | **x**\n## Injected"
    order = open_session(run_dir, sample=10, seed=1).order
    append_lines(
        run_dir,
        *(forged(run_dir, i, nasty) for i in order[:3]),
        *(forged(run_dir, i, "bob\x1b[31m") for i in order[:3]),
    )
    res = cli("export", run_dir, "--to", "card", "--reviewed", "column")
    assert res.exit_code == 0, res.output
    card = (run_dir / "hub-reviewed" / "README.md").read_text()
    section = card.split("## Human review\n", 1)[1].split("## Limitations")[0]
    assert "<img" not in card and "\n## Injected" not in card and "\n# Boss" not in card
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in section and "\\#" in section
    row = next(line for line in section.splitlines() if line.startswith("| ") and "/" in line)
    assert row.count("|") - row.count("\\|") == 7  # six cells: the pipe in the name is escaped
    res = cli("review", run_dir, "--agreement")
    assert "\x1b" not in res.output and "bob\\x1b[31m" in res.output


def test_the_reviewed_card_links_and_ships_the_guideline(run_dir):
    judge_some(run_dir)
    res = cli("export", run_dir, "--to", "card", "--reviewed", "good-only")
    assert res.exit_code == 0, res.output
    hub = run_dir / "hub-reviewed"
    assert "[judging guideline](judging.md)" in (hub / "README.md").read_text()
    assert (hub / "judging.md").read_text().startswith("# Judging a generated triple")


# -- exports beside the run's own ----------------------------------------------------------------
def test_a_reviewed_export_leaves_the_runs_exports_byte_identical(run_dir):
    import pyarrow.parquet as pq

    res = cli("export", run_dir, "--to", "parquet,card")
    assert res.exit_code == 0, res.output
    own = {
        p.relative_to(run_dir): p.read_bytes()
        for p in [run_dir / "triples.parquet", run_dir / "rejected.parquet"]
        + sorted((run_dir / "hub").rglob("*"))
        if p.is_file()
    }
    judge_some(run_dir)
    for mode in ("good-only", "column"):
        res = cli("export", run_dir, "--to", "parquet,card", "--reviewed", mode)
        assert res.exit_code == 0, res.output
        assert "triples.reviewed.parquet" in res.output and "hub-reviewed" in res.output
        for rel, data in own.items():
            assert (run_dir / rel).read_bytes() == data, rel
    assert pq.read_table(run_dir / "triples.parquet").num_rows == 30
    assert pq.read_table(run_dir / "triples.reviewed.parquet").num_rows == 30  # column mode


def _other_run_review(tmp_path, run_dir):
    """review.jsonl of another run (other sentences, same ids) copied into `run_dir`."""
    other = make_run(
        tmp_path / "other",
        [record(i, premise=f"Someone else {i}.") for i in range(30)],
        [],
    )
    judge_some(other)
    (run_dir / LOG).write_bytes((other / LOG).read_bytes())


def test_a_review_of_another_run_or_an_empty_one_is_refused(tmp_path, run_dir):
    _other_run_review(tmp_path, run_dir)
    res = cli("export", run_dir, "--to", "parquet,card", "--reviewed", "column")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "holds no judgement of a triple of this run (14 not counted" in res.output
    assert "is it another run's review?" in res.output
    assert not (run_dir / "triples.reviewed.parquet").exists()
    assert not (run_dir / "hub-reviewed").exists()
    (run_dir / LOG).write_text("")
    res = cli("export", run_dir, "--to", "card", "--reviewed", "good-only")
    assert res.exit_code == 1 and "review.jsonl holds no judgement; judge some" in res.output


@pytest.mark.parametrize("review", ["other", "empty", "skips only"])
def test_publish_reviewed_refuses_before_creating_a_repo(tmp_path, run_dir, monkeypatch, review):
    if review == "other":
        _other_run_review(tmp_path, run_dir)
    elif review == "empty":
        (run_dir / LOG).write_text("")
    else:
        s = open_session(run_dir, annotator="A")
        s.judge(s.order[0], Verdict("skip"))
    fake = FakeApi.patched_in(monkeypatch)
    res = cli("publish", run_dir, "--repo-id", "someone/triples", "--reviewed", "good-only")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "holds no judgement" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert fake.calls == []


def test_precision_counts_only_the_declared_samples(run_dir):
    """Two annotators on two samples: the card names both and counts the union, judged lines of
    other orders count for agreement only."""
    a = open_session(run_dir, sample=5, seed=0, annotator="A")
    for i in a.order:
        a.judge(i, Verdict("good"))
    b = open_session(run_dir, order="all", annotator="B")
    for i in range(3):
        b.judge(i, Verdict("bad", "grammar"))
    checked = check_judgements(
        [(n, j) for n, j in enumerate(log_lines(run_dir), 1)],
        lambda i: TripleKey.of(json.loads((run_dir / "triples.jsonl").read_text().splitlines()[i])),
        30,
        run_dir / LOG,
    )
    assert checked.problems == [] and len(checked.counted) == 8
    assert checked.samples() == [(0, 5)]
    res = cli("export", run_dir, "--to", "card", "--reviewed", "good-only")
    assert res.exit_code == 0, res.output
    card = (run_dir / "hub-reviewed" / "README.md").read_text()
    assert "**Measured precision: 1.000**" in card and "5 of the 5 triples" in card
    assert "(seed 0, size 5)" in card


# -- regenerating a reviewed run -------------------------------------------------------------------
@pytest.mark.slow
def test_overwriting_a_reviewed_run_keeps_its_judgements(tmp_path):
    from transnli.resources import resource_path

    sample = str(resource_path("samples", "snli_sample.jsonl"))
    run = tmp_path / "run"
    fast = ["--filters", "none", "--grammar", "none", "--acceptability", "none", "-q"]
    res = cli("generate", sample, "--out", run, "--limit", "8", *fast)
    assert res.exit_code == 0, res.output
    s = open_session(run, order="all", annotator="A")
    n = len(s.order)
    assert n >= 2
    for i in s.order:
        s.judge(i, Verdict("good"))
    res = cli("export", run, "--to", "parquet,card", "--reviewed", "column")
    assert res.exit_code == 0, res.output
    log = (run / LOG).read_bytes()
    assert (run / "triples.jsonl.offsets").exists()

    res = cli("generate", sample, "--out", run, "--limit", "8", "--overwrite", *fast)
    assert res.exit_code == 0, res.output
    assert f"keeping the judgements in {run / LOG}" in res.output
    assert (run / LOG).read_bytes() == log
    assert not (run / "triples.reviewed.parquet").exists() and not (run / "hub-reviewed").exists()
    res = cli("review", run, "--agreement")  # the same triples again: every judgement counts
    assert res.exit_code == 0 and f"{n} triples judged by 1 (A)" in res.output
    assert "not counted" not in res.output

    res = cli("generate", sample, "--out", run, "--limit", "3", "--overwrite", *fast)
    assert res.exit_code == 0, res.output
    res = cli("review", run, "--agreement")  # fewer triples: the judgements of the rest are gone
    assert res.exit_code == 0 and "not counted" in res.output
