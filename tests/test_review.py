"""`transnli review` without a browser (transnli.review): the offset index, the orders, the
judgements log and its server API, agreement, and the reviewed export and its card.
tests/test_review_browser.py drives the same page in headless Chromium."""

from __future__ import annotations

import json
import random
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from test_export import make_run, record
from transnli.review.agreement import agreement, item_verdicts, summarise, wilson
from transnli.review.errors import ReviewError
from transnli.review.index import LineIndex
from transnli.review.log import ERROR_TYPES, LOG, JudgementLog, Verdict, read_judgements
from transnli.review.server import ReviewServer
from transnli.review.session import (
    ReviewSession,
    SessionSettings,
    highlight_spans,
    review_order,
)
from transnli.review.uncertainty import uncertainty

from transnli.cli import main

ROOT = Path(__file__).resolve().parents[1]
QUALITY_FIELDS = [
    "item",
    "source_id",
    "hypothesis",
    "word",
    "word_index",
    "pos",
    "antonym",
    "modified_hypothesis",
    "coherent",
    "meaning_changed",
    "good",
    "error_type",
    "reason",
    "annotator",
]


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def run_dir(tmp_path):
    return make_run(tmp_path / "run", [record(i) for i in range(30)], [record(99, id="rej-99")])


def open_session(run_dir, **settings) -> ReviewSession:
    return ReviewSession(
        LineIndex(run_dir / "triples.jsonl"),
        JudgementLog(run_dir / LOG),
        SessionSettings(**settings),
    )


def start_server(session: ReviewSession) -> ReviewServer:
    server = ReviewServer(session, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def api(server: ReviewServer):
    """A function (method, path, body) -> (status, doc) calling the server as its page does."""

    def call(method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{server.server_address[1]}{path}",
            data=data,
            method=method,
            headers={"X-Review-Token": server.token, **(headers or {})},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return res.status, json.loads(res.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    return call


@pytest.fixture
def server(run_dir):
    """A live server on a free port (annotator "ann", the default random sample)."""
    server = start_server(open_session(run_dir, annotator="ann"))
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def served(server):
    return api(server)


def log_lines(run_dir):
    return [json.loads(x) for x in (run_dir / LOG).read_text().splitlines()]


# -- the offset index ------------------------------------------------------------------------------
def test_the_index_reads_records_by_offset_and_is_rebuilt_when_the_file_changes(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3}\n')
    index = LineIndex(path)
    assert len(index) == 3 and index.record(1) == {"a": 2} and index.record(2) == {"a": 3}
    cache = tmp_path / "t.jsonl.offsets"
    assert cache.is_file()
    assert list(LineIndex(path).offsets) == list(index.offsets)  # read back from the cache
    path.write_text('{"a": 9}\n{"a": 8}\n')
    again = LineIndex(path)
    assert len(again) == 2 and again.record(1) == {"a": 8}
    path.write_bytes(
        b'  \t\n{"a": 1}\r\n\n   \n{"a": 2}\n{"a": 3}'
    )  # blank lines, CRLF, no last \\n
    assert [LineIndex(path).record(i) for i in range(3)] == [{"a": 1}, {"a": 2}, {"a": 3}]
    path.write_bytes(b"")
    assert len(LineIndex(path)) == 0
    path.write_text('{"a": 9}\n[1]\n')
    with pytest.raises(ReviewError, match=r"t.jsonl: record 2: expected a JSON object"):
        LineIndex(path).record(1)


# -- orders and what the page shows ----------------------------------------------------------------
def test_the_random_order_is_a_seeded_sample(run_dir):
    index = LineIndex(run_dir / "triples.jsonl")
    a = review_order(index, SessionSettings(sample=10, seed=3))
    assert a == review_order(index, SessionSettings(sample=10, seed=3))
    assert len(set(a)) == 10 and set(a) <= set(range(30))
    assert a != review_order(index, SessionSettings(sample=10, seed=4))
    assert len(review_order(index, SessionSettings(sample=500))) == 30
    assert review_order(index, SessionSettings(order="all")) == list(range(30))


def test_least_certain_first_orders_by_distance_to_the_threshold(tmp_path):
    def rec(i, check):
        r = record(i)
        r.checks = {**r.checks, **check}
        return r

    recs = [
        rec(0, {}),  # no score: last
        rec(
            1,
            {"quality_model": {"backend": "rules", "passed": True, "score": 0.9, "threshold": 0.5}},
        ),
        rec(
            2,
            {
                "quality_model": {
                    "backend": "rules",
                    "passed": True,
                    "score": 0.52,
                    "threshold": 0.5,
                }
            },
        ),
        rec(
            3,
            {"acceptability": {"backend": "cola", "passed": False, "score": 0.3, "threshold": 0.5}},
        ),
    ]
    run = make_run(tmp_path / "run", recs, [])
    order = review_order(LineIndex(run / "triples.jsonl"), SessionSettings(order="uncertain"))
    assert order == [2, 3, 1, 0]
    assert uncertainty(recs[0].to_dict()) is None
    # Triples without a score keep the seeded random order among themselves.
    run = make_run(tmp_path / "plain", [record(i) for i in range(20)], [])
    order = review_order(LineIndex(run / "triples.jsonl"), SessionSettings(order="uncertain"))
    assert order == random.Random(0).sample(range(20), 20) != list(range(20))


def test_the_replaced_word_is_located_in_both_sentences():
    rec = {
        "hypothesis": "A woman is here.",
        "modified_hypothesis": "A man is here.",
        "char_start": 2,
        "char_end": 7,
    }
    assert highlight_spans(rec) == {"hypothesis": [2, 7], "modified_hypothesis": [2, 5]}
    assert highlight_spans({**rec, "char_start": -1})["hypothesis"] is None
    wrong = {**rec, "modified_hypothesis": "Something else entirely."}
    assert highlight_spans(wrong) == {"hypothesis": [2, 7], "modified_hypothesis": None}


def test_the_state_shows_the_triple_with_its_checks(run_dir):
    state = open_session(run_dir, order="all").state()
    t = state["triple"]
    assert t["index"] == 0 and t["pos"] == "NOUN" and t["word"] == "woman"
    assert t["spans"]["modified_hypothesis"] == [2, 5]
    grammar = next(c for c in t["checks"] if c["name"] == "grammar")
    assert grammar["passed"] is True and grammar["evidence"] == {"errors_candidate": 0}
    assert state["total"] == 30 and list(state["error_types"]) == list(ERROR_TYPES)


# -- the log and the API ---------------------------------------------------------------------------
def test_judge_skip_undo_and_conflict_over_http(run_dir, served):
    status, state = served("GET", "/api/state")
    first, shown = state["triple"]["index"], state["triple"]["digest"]
    status, state = served(
        "POST", "/api/judge", {"index": first, "verdict": "good", "digest": shown}
    )
    assert status == 200 and state["counts"] == {"good": 1, "bad": 0, "skip": 0}
    second, shown2 = state["triple"]["index"], state["triple"]["digest"]
    assert second != first
    # Another tab still showing the first triple: refused, and the state comes back with it.
    body = {"index": first, "verdict": "bad", "error_type": "grammar", "digest": shown}
    status, doc = served("POST", "/api/judge", body)
    assert status == 409 and "another tab" in doc["error"] and doc["triple"]["index"] == second
    status, doc = served(
        "POST", "/api/judge", {"index": second, "verdict": "bad", "digest": shown2}
    )
    assert status == 400 and "needs an error type" in doc["error"]
    body = {"index": second, "verdict": "bad", "error_type": "polysemy", "reason": " sense "}
    status, state = served("POST", "/api/judge", {**body, "digest": shown2})
    third = state["triple"]["index"]
    body = {"index": third, "verdict": "skip", "digest": state["triple"]["digest"]}
    status, state = served("POST", "/api/judge", body)
    assert state["counts"] == {"good": 1, "bad": 1, "skip": 1}
    status, state = served("POST", "/api/undo", {})
    assert state["undone"]["index"] == third and state["triple"]["index"] == third
    status, state = served("POST", "/api/undo", {})
    assert state["undone"]["index"] == second and state["triple"]["index"] == second
    lines = log_lines(run_dir)
    assert [(x["index"], x["good"], x.get("skipped"), x.get("undone")) for x in lines] == [
        (first, True, None, None),
        (second, False, None, None),
        (third, None, True, None),
        (third, None, True, True),
        (second, False, None, True),
    ]
    bad = lines[1]
    assert [k for k in QUALITY_FIELDS if k not in bad] == []
    assert (bad["error_type"], bad["reason"], bad["annotator"], bad["sample"]) == (
        "polysemy",
        "sense",
        "ann",
        "random",
    )
    assert (bad["coherent"], bad["meaning_changed"]) == (False, None)
    assert read_judgements(run_dir / LOG) == [lines[0]]


def test_bad_requests_answer_one_line(served):
    status, doc = served("POST", "/api/judge", {"index": 10_000, "verdict": "good", "digest": ""})
    assert status == 400 and doc["error"].startswith("record 10000 is not in this session's")
    status, doc = served("POST", "/api/judge", {"index": 0, "verdict": "maybe", "digest": ""})
    assert status == 400 and "not one of good, bad, skip" in doc["error"]
    assert served("GET", "/nowhere")[0] == 404


def test_a_triple_changed_or_gone_under_the_page_is_never_judged_unseen(run_dir, served):
    """Issue 38: the page sends the digest of the triple it showed; the server re-reads the file
    at every request and refuses a verdict on sentences the annotator did not see."""
    triples = run_dir / "triples.jsonl"
    state = served("GET", "/api/state")[1]
    shown = state["triple"]
    status, doc = served("POST", "/api/judge", {"index": shown["index"], "verdict": "good"})
    assert status == 400 and doc["error"].startswith("digest must be the string the state gave")
    lines = triples.read_text().splitlines()
    changed = {**json.loads(lines[shown["index"]]), "modified_hypothesis": "A new sentence here."}
    lines[shown["index"]] = json.dumps(changed)
    triples.write_text("\n".join(lines) + "\n")  # rewritten in place: other offsets move too
    body = {"index": shown["index"], "verdict": "good", "digest": shown["digest"]}
    status, doc = served("POST", "/api/judge", body)
    assert status == 409 and doc["error"] == (
        f"record {shown['index']} changed in triples.jsonl since the page showed it: not saved"
    )
    now = doc["triple"]
    assert now["index"] == shown["index"] and now["modified_hypothesis"] == "A new sentence here."
    assert not (run_dir / LOG).exists() or log_lines(run_dir) == []
    status, state = served("POST", "/api/judge", {**body, "digest": now["digest"]})
    assert status == 200 and state["triple"]["index"] != shown["index"]
    (saved,) = log_lines(run_dir)
    assert (
        saved["modified_hypothesis"] == "A new sentence here." and saved["digest"] == now["digest"]
    )
    # every other record is still read at its new offset (no "not valid JSON")
    nxt = state["triple"]
    assert nxt == {**nxt, **{k: json.loads(lines[nxt["index"]])[k] for k in ("id", "premise")}}
    triples.write_text("\n".join(lines[:-1]) + "\n")
    status, doc = served("GET", "/api/state")
    assert status == 400 and doc["error"] == (
        f"{triples} changed while the review ran: it now holds 29 records, not 30; run "
        "`transnli review` again"
    )
    triples.unlink()
    status, doc = served("POST", "/api/judge", {**body, "digest": nxt["digest"]})
    assert status == 400 and doc["error"] == (
        f"{triples} is gone (deleted or moved while the review ran): put it back, or run "
        "`transnli review` again on the run"
    )
    assert served("GET", "/api/state")[0] == 400


def test_a_restart_resumes_and_two_annotators_keep_their_own_places(run_dir):
    s = open_session(run_dir, annotator="A", sample=5)
    for _ in range(3):
        s.judge(s.state()["triple"]["index"], Verdict("good"))
    again = open_session(run_dir, annotator="A", sample=5)
    assert again.state()["counts"]["good"] == 3
    assert again.state()["triple"]["index"] == again.order[3]
    assert again.state("B")["triple"]["index"] == again.order[0]
    again.judge(again.order[0], Verdict("bad", "grammar"), "B")
    assert {(j["annotator"], j["index"]) for j in read_judgements(run_dir / LOG)} == {
        ("A", s.order[0]),
        ("A", s.order[1]),
        ("A", s.order[2]),
        ("B", s.order[0]),
    }


def test_two_logs_on_one_file_see_each_others_lines(run_dir):
    """Two servers (or processes) on one run: each reads what the other appended under the lock,
    so the second judgement of the same triple is refused rather than written twice."""
    a, b = open_session(run_dir, annotator="A"), open_session(run_dir, annotator="A")
    a.judge(a.order[0], Verdict("good"))
    with pytest.raises(ReviewError, match="judged meanwhile"):
        b.judge(b.order[0], Verdict("good"))
    assert len(log_lines(run_dir)) == 1


def test_a_torn_last_line_is_cut_by_the_next_append(run_dir):
    s = open_session(run_dir, annotator="A", order="all")
    s.judge(0, Verdict("good"))
    with open(run_dir / LOG, "a") as fh:
        fh.write('{"item": "cut off by a cra')
    s2 = open_session(run_dir, annotator="A", order="all")
    assert s2.state()["counts"]["good"] == 1
    s2.judge(1, Verdict("good"))
    assert [x["index"] for x in log_lines(run_dir)] == [0, 1]


def test_a_bad_log_line_is_named(run_dir):
    (run_dir / LOG).write_text('{"item": "x", "index": 0, "good": true}\n{"item": 3}\n')
    with pytest.raises(ReviewError, match=r"review.jsonl:2: field 'index'"):
        JudgementLog(run_dir / LOG)


def test_bench_quality_reads_the_review_log(run_dir):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_quality import load_judgements

    s = open_session(run_dir, annotator="A", order="all")
    s.judge(0, Verdict("good"))
    s.judge(1, Verdict("bad", "no_change"))
    s.judge(2, Verdict("skip"))
    s.undo()  # the skip
    s.undo()  # the bad one
    s.judge(1, Verdict("bad", "grammar"))
    judged = load_judgements(run_dir / LOG)
    assert sorted((j["index"], j["good"], j["error_type"]) for j in judged.values()) == [
        (0, True, None),
        (1, False, "grammar"),
    ]


# -- agreement, precision --------------------------------------------------------------------------
def j(item, annotator, good, error_type=None, sample="random"):
    return {
        "item": item,
        "annotator": annotator,
        "good": good,
        "error_type": error_type,
        "sample": sample,
    }


def test_agreement_matches_a_hand_computed_kappa():
    # Four shared items: A = g g b b, B = g b b b. p_o = 3/4, p_e = 1/2*1/4 + 1/2*3/4 = 1/2,
    # kappa = (3/4 - 1/2) / (1 - 1/2) = 0.5 (Cohen 1960's formula).
    js = [
        j("1", "A", True),
        j("2", "A", True),
        j("3", "A", False, "grammar"),
        j("4", "A", False, "grammar"),
        j("1", "B", True),
        j("2", "B", False, "grammar"),
        j("3", "B", False, "grammar"),
        j("4", "B", False, "polysemy"),
        j("5", "B", True),
    ]
    (pair,) = agreement(js)
    assert (pair.first, pair.second, pair.items) == ("A", "B", 4)
    assert pair.raw_good == 0.75 and pair.kappa_good == 0.5
    assert pair.raw_type == 0.5
    same = [j("1", "A", True), j("1", "B", True)]
    assert agreement(same)[0].kappa_good is None  # one category only: undefined


def test_verdicts_and_precision_with_its_wilson_interval():
    from scipy.stats import binomtest

    js = [j(str(i), "A", i < 7) for i in range(10)] + [
        j("0", "B", False, "grammar"),
        j("20", "A", True, sample="all"),
    ]
    v = item_verdicts(js)
    assert v["0"] == "disputed" and v["1"] == "good" and v["9"] == "bad:other"
    s = summarise(js)
    assert (s.judged, s.sample_judged, s.sample_good, s.annotators) == (11, 10, 6, ("A", "B"))
    ci = binomtest(6, 10).proportion_ci(method="wilson")
    assert s.precision == 0.6 and s.interval == (round(ci.low, 4), round(ci.high, 4))
    assert wilson(0, 0) is None


def test_the_agreement_command(run_dir):
    s = open_session(run_dir, order="all")
    for i in range(6):
        s.judge(i, Verdict("good") if i % 2 else Verdict("bad", "grammar"), "A")
        s.judge(i, Verdict("good") if i % 3 else Verdict("bad", "grammar"), "B")
    res = cli("review", run_dir, "--agreement")
    assert res.exit_code == 0, res.output
    assert "6 triples judged by 2 (A, B)" in res.output
    assert "A vs B: 6 triples both judged; good/bad: raw agreement 0.500, Cohen's kappa 0.000" in (
        res.output
    )
    assert "precision" not in res.output  # order all: no random sample


def test_the_review_command_refuses_what_it_cannot_use(tmp_path, run_dir):
    res = cli("review", tmp_path / "nothing", "--port", "0")
    assert res.exit_code == 1 and "triples.jsonl is missing" in res.output
    res = cli("review", run_dir, "--agreement")
    assert res.exit_code == 1 and "review.jsonl does not exist" in res.output
    res = cli("review", run_dir, "--sample", "0")
    assert res.exit_code == 1 and "--sample must be at least 1" in res.output
    with open(run_dir / "triples.jsonl", "a") as fh:
        fh.write("{not json\n")
    res = cli("review", run_dir, "--order", "uncertain", "--port", "0")
    assert res.exit_code == 1 and "triples.jsonl: record 31: not valid JSON" in res.output
    (run_dir / LOG).mkdir()  # a log that cannot be read as a file
    res = cli("review", run_dir, "--agreement")
    assert (
        res.exit_code == 1 and res.output.startswith("Error: ") and "Traceback" not in (res.output)
    )


# -- the reviewed export ---------------------------------------------------------------------------
def judge_some(run_dir):
    """10 of the sample judged by A (7 good), 4 of them again by B (one differs)."""
    s = open_session(run_dir, sample=10, seed=1)
    for n, i in enumerate(s.order):
        s.judge(i, Verdict("good") if n < 7 else Verdict("bad", "polysemy"), "A")
        if n < 4:
            s.judge(i, Verdict("good") if n else Verdict("bad", "grammar"), "B")
    return s.order


def test_export_good_only_keeps_the_triples_judged_good(run_dir):
    import pyarrow.parquet as pq

    order = judge_some(run_dir)
    res = cli("export", run_dir, "--to", "parquet,card", "--reviewed", "good-only")
    assert res.exit_code == 0, res.output
    table = pq.read_table(run_dir / "triples.reviewed.parquet")
    assert sorted(table.column("id").to_pylist()) == sorted(f"snli-{i}" for i in order[1:7])
    assert not (run_dir / "triples.parquet").exists() and not (run_dir / "hub").exists()
    card = (run_dir / "hub-reviewed" / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    (config,) = front["configs"]
    test_file = run_dir / "hub-reviewed" / config["data_files"][0]["path"]
    assert pq.read_table(test_file).num_rows == 6
    section = card.split("## Human review\n", 1)[1].split("## Limitations")[0]
    from scipy.stats import binomtest

    ci = binomtest(6, 10).proportion_ci(method="wilson")
    assert "10 triples were judged by 2 people (A, B)" in section
    assert (
        f"**Measured precision: 0.600** (95% Wilson interval {ci.low:.3f}-{ci.high:.3f}, "
        f"{ci.high - ci.low:.3f} wide): 6 of the 10 triples"
    ) in section
    assert "(of the 30 triples of the run) were judged good" in section
    assert "100: 0.15" in section  # how many judgements buy what width
    assert "| A / B | 4 | 0.750 |" in section
    assert "keeps only the 6 triples judged good; it leaves out 20 triples nobody judged" in section
    assert "leaving out 20 of the 30 triples that nobody judged" in res.output
    assert "warning: only" not in res.output  # 10 of 30: over a tenth of a small run


def test_a_reviewed_export_of_a_tiny_sample_warns(run_dir):
    s = open_session(run_dir, sample=2, seed=1)
    for i in s.order:
        s.judge(i, Verdict("good"), "A")
    res = cli("export", run_dir, "--to", "card", "--reviewed", "column")
    assert res.exit_code == 0, res.output
    assert "warning: only 2 of the 30 triples were judged in the random sample" in res.output
    assert "interval is 0.66 wide" in res.output and "leaving out" not in res.output


def test_export_column_keeps_every_triple_and_loads_with_datasets(run_dir):
    import datasets
    import pyarrow.parquet as pq

    order = judge_some(run_dir)
    res = cli("export", run_dir, "--to", "card,parquet", "--reviewed", "column")
    assert res.exit_code == 0, res.output
    ds = datasets.load_dataset(str(run_dir / "hub-reviewed"), split="test")
    assert len(ds) == 30
    col = dict(zip(ds["id"], ds["human_judgement"], strict=True))
    assert col[f"snli-{order[0]}"] == "disputed" and col[f"snli-{order[1]}"] == "good"
    assert col[f"snli-{order[9]}"] == "bad:polysemy"
    assert sum(v is None for v in col.values()) == 20
    rejected = datasets.load_dataset(str(run_dir / "hub-reviewed"), split="rejected")
    assert rejected["human_judgement"] == [None]
    assert "`human_judgement` column holds" in (run_dir / "hub-reviewed" / "README.md").read_text()
    table = pq.read_table(run_dir / "triples.reviewed.parquet")
    assert table.num_rows == 30 and table.column("human_judgement").null_count == 20


def test_export_reviewed_refuses_what_it_cannot_do(run_dir):
    res = cli("export", run_dir, "--to", "parquet", "--reviewed", "good-only")
    assert res.exit_code == 1 and "review.jsonl does not exist" in res.output
    judge_some(run_dir)
    res = cli("export", run_dir, "--to", "hf", "--reviewed", "column")
    assert res.exit_code == 1 and "--reviewed works with --to parquet and card" in res.output


def test_review_sits_above_the_generator_and_beside_the_evaluator():
    from architecture import import_edges

    wrong = [
        f"{e.source}:{e.line} -> {e.target}"
        for e in import_edges()
        if (e.source.startswith("transnli.review") and e.target.startswith("transnli.evaluator"))
        or (e.source.startswith("transnli.generator") and e.target.startswith("transnli.review"))
    ]
    assert wrong == []
    assert any(e.source.startswith("transnli.review") for e in import_edges())


def test_publish_reviewed_uploads_the_reviewed_card(run_dir, monkeypatch):
    from test_export import FakeApi

    judge_some(run_dir)
    fake = FakeApi.patched_in(monkeypatch)
    res = cli("publish", run_dir, "--repo-id", "someone/triples", "--reviewed", "good-only")
    assert res.exit_code == 0, res.output
    (_, up) = fake.calls[-1]
    assert "**Measured precision: 0.600**" in up["card"]
    assert 'load_dataset("someone/triples"' in up["card"]
    import pyarrow.parquet as pq

    assert pq.read_table(run_dir / "hub-reviewed" / "data" / "snli" / "test.parquet").num_rows == 6


def test_every_line_is_fsynced_before_the_action_returns(run_dir, monkeypatch):
    import os

    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append((run_dir / LOG).read_text().count("\n"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    s = open_session(run_dir, order="all")
    s.judge(0, Verdict("good"))
    s.judge(1, Verdict("skip"))
    s.undo()
    assert synced == [1, 2, 3]
