"""Paired comparison of models (evaluator/compare.py, `transnli compare`): the statistics against
scipy/statsmodels and textbook examples, a hand-counted two-model evaluation, two tiny hf models
end to end, determinism and the errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from transnli.evaluator.compare import (
    HELD,
    NOT_APPLICABLE,
    VIOLATED,
    CompareSettings,
    bootstrap_interval,
    compare_models,
    holm,
    mcnemar_exact,
    paired_counts,
    rate_difference,
)

from transnli.cli import main

NA, H, V = NOT_APPLICABLE, HELD, VIOLATED


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def codes_of_table(table, only_a=0, only_b=0):
    """Two models' outcome codes whose both-applicable 2x2 table is `table` (rows: A violated,
    A held; columns: B violated, B held), plus `only_a` triples where only A's antecedent holds
    (violated) and `only_b` where only B's does (held)."""
    (vv, vh), (hv, hh) = table
    a = [V] * vv + [V] * vh + [H] * hv + [H] * hh + [V] * only_a + [NA] * only_b
    b = [V] * vv + [H] * vh + [V] * hv + [H] * hh + [NA] * only_a + [H] * only_b
    return np.array(a, dtype=np.int8), np.array(b, dtype=np.int8)


# --------------------------------------------------------------------------- statistics
def test_mcnemar_on_a_textbook_table_agrees_with_scipy_and_statsmodels():
    # Agresti, Categorical Data Analysis: approval of the prime minister in two surveys of the
    # same 1600 people: 794 approve both times, 150 then not, 86 not then approve, 570 neither.
    table = [[794, 150], [86, 570]]
    a, b = codes_of_table(table)
    p = mcnemar_exact(paired_counts(a, b))
    assert p == pytest.approx(stats.binomtest(86, 236, 0.5).pvalue, rel=1e-12)
    assert p == pytest.approx(mcnemar(np.array(table), exact=True).pvalue, rel=1e-12)
    assert 1e-5 < p < 1e-4  # the chi-squared test gives 17.36 on 1 df, p = 3.1e-5
    # a small exact case by hand: 1 against 6 discordant pairs, 2 * (1 + 7) / 2**7 = 0.125
    a, b = codes_of_table([[3, 1], [6, 10]])
    assert mcnemar_exact(paired_counts(a, b)) == pytest.approx(0.125)


def test_mcnemar_counts_only_the_triples_where_both_antecedents_hold():
    a, b = codes_of_table([[3, 1], [6, 10]])
    a2, b2 = codes_of_table([[3, 1], [6, 10]], only_a=40, only_b=25)
    counts, counts2 = paired_counts(a, b), paired_counts(a2, b2)
    assert mcnemar_exact(counts2) == mcnemar_exact(counts)
    assert rate_difference(counts) == pytest.approx((4 / 20, 9 / 20, 4 / 20 - 9 / 20))
    # the rates are over each model's own cases: A gains 40 violations, B 25 cases held
    assert rate_difference(counts2) == pytest.approx((44 / 60, 9 / 45, 44 / 60 - 9 / 45))
    assert mcnemar_exact(paired_counts(np.array([V, NA]), np.array([NA, V]))) is None


def test_holm_matches_the_textbook_example_and_statsmodels():
    # four tests at alpha 0.05: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, kept monotone
    pvalues = [0.01, 0.04, 0.03, 0.005]
    assert holm(pvalues) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm(pvalues) == pytest.approx(list(multipletests(pvalues, method="holm")[1]))
    assert holm([0.01, None, 0.04, 0.03, 0.005]) == pytest.approx([0.03, None, 0.06, 0.06, 0.02])
    assert holm([None, None]) == [None, None]


def test_bootstrap_interval_agrees_with_scipy_paired_bootstrap():
    rng = np.random.default_rng(7)
    a = rng.choice([NA, H, V], p=[0.3, 0.4, 0.3], size=300).astype(np.int8)
    b = np.where(rng.random(300) < 0.7, a, rng.choice([NA, H, V], size=300)).astype(np.int8)

    def difference(x, y, axis=-1):
        rate_x = (x == V).sum(axis) / (x != NA).sum(axis)
        return rate_x - (y == V).sum(axis) / (y != NA).sum(axis)

    ref = stats.bootstrap(
        (a, b), difference, paired=True, n_resamples=20_000, method="percentile", random_state=1
    ).confidence_interval
    ours = bootstrap_interval(paired_counts(a, b), resamples=20_000, seed=0)
    assert ours[0] == pytest.approx(ref.low, abs=0.01)
    assert ours[1] == pytest.approx(ref.high, abs=0.01)
    assert ours[0] < difference(a, b) < ours[1]


def test_bootstrap_is_deterministic_and_follows_the_seed():
    a, b = codes_of_table([[3, 5], [9, 10]], only_a=4, only_b=6)
    counts = paired_counts(a, b)
    first = bootstrap_interval(counts, 2000, seed=3)
    assert bootstrap_interval(counts, 2000, seed=3) == first
    assert bootstrap_interval(counts, 2000, seed=4) != first
    assert bootstrap_interval(paired_counts(np.array([NA, NA]), np.array([V, H])), 500, 0) is None


def test_compare_models_covers_every_rule_and_pair_with_one_holm_family():
    rng = np.random.default_rng(0)
    models = ["m1", "m2", "m3"]
    checks = ("rule1", "rule2", "rule3", "rule4", "substitution", "contradiction_symmetry")
    flags = {
        m: {c: rng.choice([NA, H, V], size=50).astype(np.int8) for c in checks} for m in models
    }
    rows = compare_models(flags, CompareSettings(resamples=500))
    assert [(r["rule"], r["model_a"], r["model_b"]) for r in rows] == [
        (c, a, b) for c in checks for a, b in (("m1", "m2"), ("m1", "m3"), ("m2", "m3"))
    ]
    raw = [r["p_mcnemar"] for r in rows]
    assert [r["p_holm"] for r in rows] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    assert all(r["significant"] == (r["p_holm"] < 0.05) for r in rows)


# --------------------------------------------------------------------------- a hand count
# (id, P, H, H', labels of model A, labels of model B); labels: M(P,H), M(H,H'), M(H',H), M(P,H')
# ("-": not asked).
TRIPLES = [
    ("t1", "EEEE", "EEEN"),  # rule1 under both: A held, B violated
    ("t2", "EEEN", "EEEN"),  # rule1 under both: both violated
    ("t3", "EEEC", "EEEE"),  # rule1 under both: A violated, B held
    ("t4", "EEEN", "EEEE"),  # rule1 under both: A violated, B held
    ("t5", "EEEN", "NEEN"),  # rule1 under A (violated); rule3 under B (held)
    ("t6", "NCCE", "NCCN"),  # rule4 under both: A violated, B held
    ("t7", "ENN-", "EEEE"),  # no rule under A; rule1 under B (held)
    ("t8", "ECCC", "ECCN"),  # rule2 under both: A held, B violated
]
FULL = {"E": "entailment", "N": "neutral", "C": "contradiction"}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def two_model_eval(tmp_path):
    """An evaluation folder of two precomputed models over TRIPLES."""
    triples, labels = [], ({}, {})
    for tid, *model_labels in TRIPLES:
        p, h, h2 = f"p {tid}", f"h {tid}", f"h {tid} x"
        triples.append({"id": tid, "premise": p, "hypothesis": h, "modified_hypothesis": h2})
        for table, codes in zip(labels, model_labels, strict=True):
            for pair, code in zip(((p, h), (h, h2), (h2, h), (p, h2)), codes, strict=True):
                if code != "-":
                    table[pair] = FULL[code]
    tfile = write_jsonl(tmp_path / "d.jsonl", triples)
    files = [
        write_jsonl(
            tmp_path / f"{name}.jsonl",
            [{"premise": a, "hypothesis": b, "label": lab} for (a, b), lab in table.items()],
        )
        for name, table in zip("ab", labels, strict=True)
    ]
    out = tmp_path / "eval"
    args = [str(tfile), "--out", str(out), "--no-plots", "--cache-dir", str(tmp_path / "c")]
    for f in files:
        args += ["--model", f"precomputed:{f}"]
    res = CliRunner().invoke(main, ["evaluate", *args])
    assert res.exit_code == 0, res.output
    return out


def row_of(result, rule):
    (row,) = [r for r in result["comparisons"] if r["rule"] == rule]
    return row


def test_evaluation_writes_the_hand_counted_comparison(two_model_eval):
    result = json.loads((two_model_eval / "comparison.json").read_text())
    assert result["n_triples"] == 8 and len(result["comparisons"]) == 6
    r1 = row_of(result, "rule1")
    assert (r1["cases_a"], r1["violations_a"], r1["cases_b"], r1["violations_b"]) == (5, 4, 5, 2)
    assert r1["difference"] == pytest.approx(4 / 5 - 2 / 5)
    assert (r1["both_cases"], r1["both_violated"]) == (4, 1)
    assert (r1["only_a_violated"], r1["only_b_violated"]) == (2, 1)
    assert r1["p_mcnemar"] == pytest.approx(stats.binomtest(1, 3).pvalue)
    r4 = row_of(result, "rule4")
    assert (r4["both_cases"], r4["only_a_violated"], r4["only_b_violated"]) == (1, 1, 0)
    r3 = row_of(result, "rule3")
    assert (r3["cases_a"], r3["cases_b"], r3["both_cases"], r3["p_mcnemar"]) == (0, 1, 0, None)
    assert r3["difference"] is None and r3["ci95"] is None and r3["p_holm"] is None
    # the counts are the summary's counts
    summary = json.loads((two_model_eval / "summary.json").read_text())
    for row in result["comparisons"]:
        for side, model in zip("ab", summary["models"], strict=True):
            overall = model["overall"]
            cell = (overall["rules"] | overall["extras"])[row["rule"]]
            assert (row[f"cases_{side}"], row[f"violations_{side}"]) == (
                cell["cases"],
                cell["violations"],
            )
    report = (two_model_eval / "report.md").read_text()
    assert "## Paired comparison of models" in report
    assert "both models' antecedents hold" in report
    (line,) = [x for x in report.splitlines() if x.startswith("| rule1 ")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:5] == ["rule1 E&E->E", "a", "b", "80.0% (4/5)", "40.0% (2/5)"]
    assert cells[5].startswith("+40.0 pp [") and cells[6:8] == ["4", "2 / 1"]
    csv = (two_model_eval / "tables" / "comparison.csv").read_text().splitlines()
    assert csv[0].startswith("rule,name,model_a,model_b,cases_a,")
    assert len(csv) == 7


def test_compare_command_rebuilds_the_same_files_from_the_folder(two_model_eval):
    written = {
        name: (two_model_eval / name).read_bytes()
        for name in ("comparison.json", "tables/comparison.csv")
    }
    (two_model_eval / "comparison.json").unlink()
    res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
    assert res.exit_code == 0, res.output
    assert "## Paired comparison of models" in res.output
    for name, data in written.items():  # byte-identical to what the evaluation wrote
        assert (two_model_eval / name).read_bytes() == data
    res = CliRunner().invoke(main, ["compare", str(two_model_eval), "--format", "json"])
    assert json.loads(res.output[: res.output.rindex("}") + 1]) == json.loads(
        written["comparison.json"]
    )


def test_compare_seed_and_no_write(two_model_eval):
    before = (two_model_eval / "comparison.json").read_bytes()
    res = CliRunner().invoke(
        main, ["compare", str(two_model_eval), "--seed", "5", "--no-write", "--format", "csv"]
    )
    assert res.exit_code == 0, res.output
    assert res.output.startswith("rule,name,model_a")
    assert (two_model_eval / "comparison.json").read_bytes() == before


def test_compare_errors_are_one_line(two_model_eval, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(main, ["compare", str(empty)])
    assert res.exit_code == 1 and "holds no samples.jsonl" in res.output
    assert "Traceback" not in res.output
    samples = two_model_eval / "samples.jsonl"
    lines = samples.read_text().splitlines()
    # the second model's third triple is another one: the models were not run on the same triples
    row = json.loads(lines[10])
    row["id"] = "t99"
    lines[10] = json.dumps(row)
    samples.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
    assert res.exit_code == 1 and f"{samples}:11: model " in res.output
    assert "not evaluated on the same triples" in res.output
    samples.write_text("\n".join(lines[:8]) + "\n")  # the first model only
    res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
    assert res.exit_code == 1 and "a comparison needs two or more models" in res.output
    for field, value, said in (
        ("violated", "yes", "field 'violated' must be true, false or null, got 'yes'"),
        ("rule", "rule9", "field 'rule' must be one of rule1, rule2, rule3, rule4 or null"),
        ("model", ["x"], "field 'model' must be a string"),
        ("extras", {"substitution": 1}, "field 'extras.substitution' must be true, false or null"),
    ):
        bad = {**json.loads(lines[0]), field: value}
        samples.write_text(json.dumps(bad) + "\n")
        res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
        assert res.exit_code == 1 and f"{samples}:1: {said}" in res.output, res.output
        assert "Traceback" not in res.output
    samples.write_text("{not json\n")
    res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
    assert res.exit_code == 1 and f"{samples}:1: not valid JSON" in res.output


def test_overwrite_with_one_model_removes_the_old_comparison(two_model_eval, tmp_path):
    tfile = tmp_path / "d.jsonl"
    args = ["evaluate", str(tfile), "--model", f"precomputed:{tmp_path / 'a.jsonl'}"]
    args += ["--out", str(two_model_eval), "--no-plots", "--overwrite"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert not (two_model_eval / "comparison.json").exists()
    assert not (two_model_eval / "tables" / "comparison.csv").exists()
    assert "Paired comparison" not in (two_model_eval / "report.md").read_text()


# --------------------------------------------------------------------------- two tiny models
def test_two_tiny_hf_models_end_to_end_and_deterministic(
    tiny_nli_model_factory, tiny_nli_entailing_model_dir, tmp_path
):
    # random weights (seed 1: entailment for these inputs) and a model forced to entailment
    models = [tiny_nli_model_factory("compare_seed1", seed=1), tiny_nli_entailing_model_dir]
    words = ["the man is happy", "the man is sad", "a dog is running"]
    triples = [
        {
            "id": f"t{i}",
            "premise": f"{p} .",
            "hypothesis": h,
            "modified_hypothesis": h2,
        }
        for i, (p, h, h2) in enumerate(
            (p, h, h2) for p in words for h in words for h2 in words if h != h2
        )
    ]
    tfile = write_jsonl(tmp_path / "tiny.jsonl", triples)
    outs = []
    for run in ("one", "two"):
        out = tmp_path / run
        args = ["evaluate", str(tfile), "--out", str(out), "--no-plots", "--no-progress"]
        args += ["--cache-dir", str(tmp_path / f"cache-{run}")]
        for m in models:
            args += ["--model", f"hf:{m}"]
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        outs.append(out)
    result = json.loads((outs[0] / "comparison.json").read_text())
    assert result["n_triples"] == len(triples)
    assert row_of(result, "rule1")["both_cases"] == len(triples)  # mutual E everywhere
    for name in ("comparison.json", "tables/comparison.csv", "report.md"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    res = CliRunner().invoke(main, ["compare", str(outs[1])])
    assert res.exit_code == 0, res.output
    assert (outs[0] / "comparison.json").read_bytes() == (outs[1] / "comparison.json").read_bytes()


def test_compare_cannot_write_is_one_line(two_model_eval):
    import shutil

    shutil.rmtree(two_model_eval / "tables")
    (two_model_eval / "tables").write_text("a file where the tables folder goes\n")
    res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
    assert res.exit_code == 1 and "cannot write the comparison into" in res.output
    assert "Traceback" not in res.output


# --------------------------------------------------------------------------- caution
def flags_of(tables):
    """Two models' flags per check from a 2x2 table per check (see codes_of_table)."""
    checks = ("rule1", "rule2", "rule3", "rule4", "substitution", "contradiction_symmetry")
    flags = {"m1": {}, "m2": {}}
    for check in checks:
        a, b = codes_of_table(tables.get(check, [[0, 0], [0, 0]]))
        flags["m1"][check], flags["m2"][check] = a, b
    return flags


def test_rows_with_few_discordant_triples_are_flagged_not_informative():
    rows = compare_models(
        flags_of(
            {"rule1": [[5, 6], [3, 30]], "rule2": [[5, 6], [4, 30]], "rule3": [[2, 0], [0, 1]]}
        ),
        CompareSettings(resamples=200),
    )
    by_rule = {r["rule"]: r for r in rows}
    assert by_rule["rule1"]["informative"] is False  # 6 + 3 = 9 discordant
    assert by_rule["rule2"]["informative"] is True  # 6 + 4 = 10
    assert by_rule["rule3"]["informative"] is False  # none discordant
    assert by_rule["rule4"]["informative"] is False  # no case at all


def test_the_conclusion_names_the_better_model_and_counts_checks_after_holm():
    from transnli.evaluator.compare import conclusions

    # m2 violates far more on rule1 and rule2 (40 of 40 discordant); rule3 is a wash
    tables = {
        "rule1": [[5, 0], [40, 30]],
        "rule2": [[5, 0], [40, 30]],
        "rule3": [[5, 10], [10, 30]],
        "rule4": [[1, 1], [1, 1]],
    }
    rows = compare_models(flags_of(tables), CompareSettings(resamples=200))
    (line,) = conclusions(rows, {"m1": "A", "m2": "B"}, 0.05)
    assert line == (
        "A violates less than B on 2 of 6 checks after Holm at 0.05; 3 of the 6 not "
        "informative (fewer than 10 discordant triples)"
    )
    # the other way round, the better model still comes first
    (line,) = conclusions(rows, {"m1": "B", "m2": "A"}, 0.05)
    assert line.startswith("B violates less than A on 2 of 6 checks")
    (line,) = conclusions(compare_models(flags_of({}), CompareSettings(resamples=200)),
                          {"m1": "A", "m2": "B"}, 0.05)  # fmt: skip
    assert "nothing can be concluded" in line


def test_small_samples_are_flagged_in_the_json_csv_table_and_report(two_model_eval):
    result = json.loads((two_model_eval / "comparison.json").read_text())
    assert [r["informative"] for r in result["comparisons"]] == [False] * 6
    assert result["conclusions"] == [
        "a and b differ significantly on none of 6 checks after Holm at 0.05; 6 of the 6 "
        "not informative (fewer than 10 discordant triples)"
    ]
    csv = (two_model_eval / "tables" / "comparison.csv").read_text().splitlines()
    assert csv[0].endswith(",significant,informative") and csv[1].endswith(",false")
    report = (two_model_eval / "report.md").read_text()
    (line,) = [x for x in report.splitlines() if x.startswith("| rule1 ")]
    assert line.rstrip(" |").endswith("no (3 discordant)")
    assert "**Conclusion:** a and b differ significantly on none of 6 checks" in report
    res = CliRunner().invoke(main, ["compare", str(two_model_eval), "--no-write"])
    assert res.exit_code == 0, res.output
    assert "no (3 discordant)" in res.output
    assert "**Conclusion:** a and b differ significantly on none of 6 checks after Holm" in (
        res.output
    )


def test_samples_whose_sentences_differ_between_models_are_refused(two_model_eval):
    samples = two_model_eval / "samples.jsonl"
    lines = samples.read_text().splitlines()
    row = json.loads(lines[10])  # the second model's third triple: same id, another H'
    row["modified_hypothesis"] = "something else entirely"
    lines[10] = json.dumps(row)
    samples.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
    assert res.exit_code == 1, res.output
    assert f"{samples}:11: model precomputed:{two_model_eval.parent / 'b.jsonl'}'s triple 3 (" in (
        res.output
    )
    assert "/t3) has another P, H or H' than" in res.output
    assert "the models did not judge the same sentences" in res.output
    assert "Traceback" not in res.output
    del row["modified_hypothesis"]
    lines[10] = json.dumps(row)
    samples.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
    assert res.exit_code == 1 and "no modified_hypothesis" in res.output


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs but the process's own cleanup."""


def test_compare_refuses_samples_an_overwrite_stopped_after_partial_ready_supersedes(
    two_model_eval, tmp_path, monkeypatch
):
    from transnli.evaluator.outdir import EvaluationFolder

    before = (two_model_eval / "comparison.json").read_bytes()
    tfile = tmp_path / "d.jsonl"
    # the models the other way round: another evaluation, which --overwrite replaces
    args = ["evaluate", str(tfile), "--out", str(two_model_eval), "--no-plots", "--overwrite"]
    args += ["--model", f"precomputed:{tmp_path / 'b.jsonl'}"]
    args += ["--model", f"precomputed:{tmp_path / 'a.jsonl'}"]

    def killed(self, ready):
        raise Killed  # right after .partial-outputs became .partial-ready

    with monkeypatch.context() as m, pytest.raises(Killed):
        m.setattr(EvaluationFolder, "_move_in", killed)
        CliRunner().invoke(main, args)
    assert (two_model_eval / ".partial-ready").is_dir()
    res = CliRunner().invoke(main, ["compare", str(two_model_eval)])
    assert res.exit_code == 1, res.output
    assert "stopped while it moved them into place (.partial-ready/)" in res.output
    assert "run the same `transnli evaluate` command again" in res.output
    assert (two_model_eval / "comparison.json").read_bytes() == before  # nothing rewritten
    res = CliRunner().invoke(main, args)  # finishes the move, then the run
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["compare", str(two_model_eval), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output[: res.output.rindex("}") + 1])["models"][0].endswith("b.jsonl")
