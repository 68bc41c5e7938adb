"""`transnli evaluate --window N`: a run read, labelled, counted and written N triples at a time
writes what the same run held whole writes, byte for byte; a run that fails part-way leaves its
folder as it was."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from test_evaluate_cli import fixture_files, write_jsonl  # noqa: F401 - a fixture

from transnli.cli.evaluate import evaluate

OUTPUTS = (
    "predictions.jsonl",
    "samples.jsonl",
    "summary.json",
    "report.md",
    "tables/table1_accuracy.csv",
    "tables/table4_rules.csv",
    "tables/extras_beyond_paper.csv",
    "tables/per_dataset.csv",
)


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


@pytest.fixture(autouse=True)
def _one_triple_blocks(monkeypatch):
    """Labelling blocks of one triple (20,000 in a real run), so that windows of 1, 2 and 5
    triples stay what they say on these small files."""
    from transnli.evaluator import schedule

    monkeypatch.setattr(schedule, "LABEL_BLOCK", 1)


def run(*args):
    return CliRunner().invoke(evaluate, [str(a) for a in args])


def outputs(folder):
    return {name: (folder / name).read_bytes() for name in OUTPUTS}


@pytest.fixture
def longer_files(fixture_files, tmp_path):  # noqa: F811 - the fixture imported above
    """The hand-counted fixture three times over (fresh ids): pairs repeat across every window."""
    tfile, lfile = fixture_files
    rows = [json.loads(line) for line in tfile.read_text().splitlines()]
    many = [dict(r, id=f"{r['id']}-{k}") for k in range(3) for r in rows]
    return write_jsonl(tmp_path / "many.jsonl", many), lfile


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_windows_write_what_the_whole_run_writes(longer_files, tiny_nli_model_dir, tmp_path, cache):
    tfile, lfile = longer_files
    models = ["--model", f"table=precomputed:{lfile}", "--model", f"tiny=hf:{tiny_nli_model_dir}"]
    flags = ["--no-plots", "-q", *([] if cache else ["--no-cache"])]
    whole = run(tfile, *models, "--out", tmp_path / "whole", "--window", "0", *flags)
    assert whole.exit_code == 0, whole.output
    expected = outputs(tmp_path / "whole")
    summary = json.loads(expected["summary.json"])
    assert "alarms" in summary and summary["provenance"]["n_triples"] == 27
    for window in (1, 2, 5):
        res = run(tfile, *models, "--out", tmp_path / f"w{window}", "--window", window, *flags)
        assert res.exit_code == 0, res.output
        got = outputs(tmp_path / f"w{window}")
        for name in OUTPUTS:
            assert got[name] == expected[name], f"{name} differs with --window {window}"
        # every distinct pair labelled once, however often it comes back in a later window
        assert res.output.count("pairs labelled") == 2
        assert [line for line in res.output.splitlines() if "pairs labelled" in line][1].startswith(
            [line for line in whole.output.splitlines() if "pairs labelled" in line][1].split("(")[
                0
            ]
        )


def test_a_second_cached_run_in_windows_computes_nothing(
    longer_files, tiny_nli_model_dir, tmp_path
):
    tfile, _ = longer_files
    args = [
        tfile,
        "--model",
        f"hf:{tiny_nli_model_dir}",
        "--no-plots",
        "-q",
        "--window",
        "4",
        "--cache-dir",
        tmp_path / "cache",
    ]
    first = run(*args, "--out", tmp_path / "one")
    second = run(*args, "--out", tmp_path / "two")
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    pairs = json.loads((tmp_path / "one" / "summary.json").read_text())["provenance"]["models"][0][
        "pairs_labelled"
    ]
    assert f"{pairs} pairs labelled (0 from cache, {pairs} computed)" in first.output
    assert f"{pairs} pairs labelled ({pairs} from cache, 0 computed)" in second.output


def test_a_bad_line_in_a_later_window_leaves_the_folder_as_it_was(longer_files, tmp_path):
    tfile, lfile = longer_files
    out = tmp_path / "out"
    args = ["--model", f"precomputed:{lfile}", "--out", out, "--no-plots", "-q", "--window", "4"]
    assert run(tfile, *args).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    lines = tfile.read_text().splitlines()
    lines[20] = lines[20].replace('"premise"', '"premiss"')
    tfile.write_text("\n".join(lines) + "\n")
    res = run(tfile, *args, "--overwrite")
    assert res.exit_code == 1 and "many.jsonl:21: field 'premise'" in res.output, res.output
    assert "Traceback" not in res.output
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_the_progress_total_is_extrapolated_from_the_windows_done():
    from transnli.evaluator.labelling import PairProgress

    progress = PairProgress(False, "m", n_triples=100)
    progress.add_triples(10)
    progress.add_pairs(30)  # first stage of the first window: 3 pairs a triple so far
    assert progress.bar.total == 30 + 3 * 90
    progress.add_pairs(5)
    assert progress.bar.total == 35 + 35 * 9
    progress.add_triples(10)  # the first window is done: 3.5 pairs a triple
    progress.add_pairs(20)
    assert progress.bar.total == 35 + 35 + 35 * 8
    progress.update(55)
    progress.finish()
    assert progress.bar.total == 55
    whole = PairProgress(False, "m", n_triples=10)  # one window: the total is what was asked
    whole.add_triples(10)
    whole.add_pairs(30)
    whole.add_pairs(4)
    assert whole.bar.total == 34


def test_carried_labels_hold_only_pairs_a_later_window_needs():
    import numpy as np
    from transnli.evaluator.backends import Prediction
    from transnli.evaluator.carry import CarriedLabels, CarryPlan
    from transnli.evaluator.distinct import digest

    windows = [[("p", "a"), ("p", "b")], [("p", "c")], [("p", "a"), ("p", "d")], [("p", "b")]]
    plan = CarryPlan()
    for pairs in windows:
        plan.add_window([digest(p) for p in pairs])
    plan.plan()
    assert len(plan) == 2  # (p,a) until window 2, (p,b) until window 3
    carried = CarriedLabels(plan)
    held = []
    for pairs in windows:
        carried.next_window(
            {p: Prediction("neutral") for p in pairs}, np.array([digest(p) for p in pairs])
        )
        held.append(sorted(carried))
    assert held == [[("p", "a"), ("p", "b")], [("p", "a"), ("p", "b")], [("p", "b")], []]


def test_distinct_count_is_exact_across_chunks(monkeypatch):
    import random

    from transnli.evaluator import distinct

    monkeypatch.setattr(distinct, "_CHUNK", 100)
    monkeypatch.setattr(distinct, "_MAX_CHUNKS", 4)  # compacted along the way too
    rng = random.Random(7)
    for size in (1, 99, 100, 101, 5000):
        items = [rng.randrange(700) - 350 for _ in range(size)]
        count = distinct.DistinctCount()
        for i, x in enumerate(items):
            count.add(x) if i % 2 else count.extend([x])
        assert len(count) == len(set(items))
        assert count.values().tolist() == sorted(set(items))
    assert len(distinct.DistinctCount()) == 0


def test_a_run_that_fails_while_labelling_leaves_no_new_folder(longer_files, tmp_path):
    tfile, lfile = longer_files
    short = tmp_path / "short.jsonl"
    short.write_text("".join(lfile.read_text().splitlines(keepends=True)[:3]))
    res = run(
        tfile, "--model", f"precomputed:{short}", "--out", tmp_path / "new", "--window", "4", "-q"
    )
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert not (tmp_path / "new").exists()


class RecordingBar:
    """What a tqdm bar is told: its total at every step, and its count."""

    def __init__(self, total):
        self.total, self.n, self.seen = total, 0, [(0, total)]

    def update(self, n=1):
        self.n += n
        self.seen.append((self.n, self.total))

    def refresh(self):
        self.seen.append((self.n, self.total))

    def close(self):
        pass


@pytest.mark.parametrize("window", [None, 4])
def test_the_bar_total_is_known_from_the_start_and_the_bar_ends_full(
    longer_files, tmp_path, monkeypatch, window
):
    """Issue 38: the total grew mid-run (0/338, then 461). Now it is the run's distinct pairs from
    the read before the model runs; (P,H') pairs the rules do not need count as done."""
    from transnli.evaluator import labelling

    bars = []
    monkeypatch.setattr(
        labelling,
        "progress_bar",
        lambda enabled, total, desc: bars.append(RecordingBar(total)) or bars[-1],
    )
    tfile, lfile = longer_files
    args = ["--model", f"precomputed:{lfile}", "--out", tmp_path / "out", "--no-plots"]
    assert run(tfile, *args, *(["--window", window] if window else [])).exit_code == 0
    (bar,) = bars
    totals = {total for _, total in bar.seen}
    counts = [n for n, _ in bar.seen]
    assert len(totals) == 1 and bar.total > 0, totals
    assert counts == sorted(counts) and bar.n == bar.total
    assert max(counts[:-2]) < bar.total  # full only at the end
