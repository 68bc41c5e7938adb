"""`transnli augment`: rows that follow from gold labels and the generated sentences (checked by
hand and against set semantics), REPAIR's minimality against brute force, and the command end to
end after `transnli evaluate --families`."""

from __future__ import annotations

import json
import random
from itertools import product

import pytest
from click.testing import CliRunner
from transnli.evaluator.augment import (
    AUG_RULES,
    COLUMNS,
    AugmentStats,
    Row,
    augment,
    logic_rows,
    merge_rows,
)
from transnli.evaluator.families import Family, Member, is_consistent
from transnli.evaluator.labels import FLIP, LABELS, C, E, N
from transnli.evaluator.repair import RepairLimitError, consistent_complete, repair

from transnli.cli import main

_ = None


def fam(roles, gold=None, source_id="s"):
    texts = {"P": "p", "H": "h", "Hneg": "hn"}
    members, alts = [], 0
    for r in roles:
        if r == "H'":
            alts += 1
            members.append(Member(f"h{alts}", r))
        else:
            members.append(Member(texts[r], r))
    return Family("d", source_id, tuple(members), gold)


# --------------------------------------------------------------------------- logic rows
def rows_of(rows):
    return [(r.premise, r.hypothesis, r.label, r.rule) for r in rows]


def model_for(f, mutual):
    """Model labels of (H,H') and (H',H): mutual[i] is the pair of labels for the i-th H'."""
    out = {}
    for m, (hh2, h2h) in zip([m for m in f.members if m.role == "H'"], mutual, strict=True):
        out[("h", m.text)], out[(m.text, "h")] = hh2, h2h
    return out


def test_rows_from_gold_entailment():
    f = fam(["P", "H", "H'", "H'", "H'", "Hneg"], gold=E)
    model = model_for(f, [(E, E), (C, C), (E, N)])  # h1 equivalent, h2 contrary, h3 neither
    assert rows_of(logic_rows(f, model)) == [
        ("p", "h", E, "gold"),
        ("p", "hn", C, "neg_e_c"),
        ("h", "hn", C, "neg_mutual_c"),
        ("hn", "h", C, "neg_mutual_c"),
        ("p", "h1", E, "rule1"),
        ("h1", "hn", C, "neg_equivalent"),
        ("hn", "h1", C, "neg_equivalent"),
        ("p", "h2", C, "rule2"),
        ("h2", "hn", E, "neg_contrary"),
    ]
    assert all(r.source_pair == ("p", "h") and r.source_id == "s" for r in logic_rows(f, model))


def test_rows_from_gold_contradiction_and_neutral():
    f = fam(["P", "H", "H'", "H'", "Hneg"], gold=C)
    model = model_for(f, [(E, E), (C, C)])
    assert rows_of(logic_rows(f, model)) == [
        ("p", "h", C, "gold"),
        ("p", "hn", E, "neg_c_e"),  # P implies not-H, and H¬ is not-H
        ("h", "hn", C, "neg_mutual_c"),
        ("hn", "h", C, "neg_mutual_c"),
        ("p", "h1", C, "substitution"),
        ("h1", "hn", C, "neg_equivalent"),
        ("hn", "h1", C, "neg_equivalent"),
        # C(P,H) with mutual C(H,H'): nothing follows for (P,H')
        ("h2", "hn", E, "neg_contrary"),
    ]
    f = fam(["P", "H", "H'", "Hneg"], gold=N)
    assert rows_of(logic_rows(f, model_for(f, [(C, C)]), gold=False)) == [
        ("p", "hn", N, "neg_n_n"),
        ("h", "hn", C, "neg_mutual_c"),
        ("hn", "h", C, "neg_mutual_c"),
        # rule4 (N & mutual C) only excludes E: no row
        ("h1", "hn", E, "neg_contrary"),
    ]
    # without a model: only what the sentences and gold give; without gold: the negation facts
    assert [r[3] for r in rows_of(logic_rows(f, None))] == [
        "gold",
        "neg_n_n",
        "neg_mutual_c",
        "neg_mutual_c",
    ]
    assert [r[3] for r in rows_of(logic_rows(fam(["P", "H", "Hneg"]), None))] == [
        "neg_mutual_c"
    ] * 2


def test_every_row_is_true_under_set_semantics():
    """Sentences as non-empty sets of worlds, labels E = subset, C = disjoint, else N; H¬ the
    complement of H. With true labels for the model and the gold, every row must be true, and
    REPAIR must change nothing."""
    rng = random.Random(3)
    worlds = frozenset(range(5))

    def label(a, b):
        return E if a <= b else C if not (a & b) else N

    rules_seen = set()
    for _ in range(400):
        sets = {"p": None, "h": None, "h1": None, "h2": None}
        for k in sets:
            sets[k] = frozenset(w for w in worlds if rng.random() < 0.5)
        if not all(sets.values()) or sets["h"] == worlds:
            continue
        sets["hn"] = worlds - sets["h"]
        f = fam(["P", "H", "H'", "H'", "Hneg"], gold=label(sets["p"], sets["h"]))
        truth = {(a, b): label(sets[a], sets[b]) for a in sets for b in sets if a != b}
        rows, stats = augment([f], truth, do_repair=True)
        for r in rows:
            assert r.label == truth[(r.premise, r.hypothesis)], r
            rules_seen.add(r.rule)
        assert stats.changed_labels == 0
    assert rules_seen == set(AUG_RULES)


# --------------------------------------------------------------------------- repair
def brute_force(graph, negations, pinned):
    n = len(graph)
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    best = None
    for labels in product(LABELS, repeat=len(pairs)):
        g = [[None] * n for _ in range(n)]
        for (a, b), lab in zip(pairs, labels, strict=True):
            g[a][b] = lab
        if any(g[a][b] != lab for (a, b), lab in pinned.items()):
            continue
        if not consistent_complete(g, negations):
            continue
        cost = sum(graph[a][b] is not None and graph[a][b] != g[a][b] for a, b in pairs)
        best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("negation", [False, True])
def test_repair_is_minimal_against_brute_force(negation):
    rng = random.Random(11 + negation)
    negations = [2] if negation else []
    for _ in range(12):
        g = [
            [None if i == j else rng.choice((E, E, C, N, None)) for j in range(3)] for i in range(3)
        ]
        pinned = {(0, 1): rng.choice(LABELS)} if rng.random() < 0.5 else {}
        fixed = repair(g, negations=negations, pinned=pinned)
        assert len(fixed.changed) == brute_force(g, negations, pinned)
        assert consistent_complete(fixed.graph, negations)
        assert all(fixed.graph[a][b] == lab for (a, b), lab in pinned.items())
        assert all(g[a][b] is not None and g[a][b] != fixed.graph[a][b] for a, b in fixed.changed)


def test_repair_of_a_larger_family_and_its_limit():
    rng = random.Random(5)
    n = 8
    g = [[None if i == j else rng.choice((E, E, C, N)) for j in range(n)] for i in range(n)]
    fixed = repair(g, negations=[7])
    assert consistent_complete(fixed.graph, [7]) and is_consistent(fixed.graph)
    assert fixed == repair(g, negations=[7])  # deterministic
    assert not fixed.changed or not consistent_complete(g, [7])
    big = [[None if i == j else N for j in range(11)] for i in range(11)]
    with pytest.raises(RepairLimitError, match="11 members .* limit of 10"):
        repair(big)
    f = Family(
        "d",
        "s",
        tuple(Member(f"s{i}", "P" if i == 0 else "H" if i == 1 else "H'") for i in range(4)),
    )
    labels = {(a, b): N for a in f.texts() for b in f.texts() if a != b}
    _, stats = augment([f], labels, do_repair=True, max_members=3)
    assert stats.too_large == 1 and stats.repaired_families == 0


def test_repair_rows_fix_a_violation_with_one_change():
    f = fam(["P", "H", "H'"], gold=E)
    model = {
        ("p", "h"): E,
        ("h", "p"): N,
        ("h", "h1"): E,
        ("h1", "h"): E,
        ("p", "h1"): N,
        ("h1", "p"): N,
    }
    rows, stats = augment([f], model, do_repair=True, gold=False)
    assert stats.changed_labels == 1
    repaired = {(r.premise, r.hypothesis): r.label for r in rows if r.rule == "repair"}
    assert repaired[("p", "h")] == E  # pinned gold
    g = f.graph(lambda pair: repaired.get(pair))
    assert is_consistent(g)


# --------------------------------------------------------------------------- merging
def test_merge_drops_conflicts_and_prefers_gold():
    def row(p, h, label, rule):
        return Row(p, h, label, rule, "s", ("p", "h"), "d")

    stats = AugmentStats()
    merged = merge_rows(
        [
            row("a", "b", E, "repair"),
            row("a", "b", C, "gold"),  # gold wins over repair
            row("c", "d", E, "rule1"),
            row("c", "d", C, "rule2"),  # same tier, two labels: dropped
            row("e", "f", N, "neg_n_n"),
            row("e", "f", N, "substitution"),  # duplicate: first kept
        ],
        stats,
    )
    assert [(r.premise, r.label, r.rule) for r in merged] == [("a", C, "gold"), ("e", N, "neg_n_n")]
    assert (stats.conflicts, stats.overridden, stats.duplicates) == (1, 1, 1)


# --------------------------------------------------------------------------- end to end
TRIPLES = [
    {
        "id": "t1",
        "source_id": "s1",
        "premise": "p",
        "hypothesis": "h",
        "modified_hypothesis": "h1",
        "gold_label": "entailment",
    },
    {
        "id": "t2",
        "source_id": "s1",
        "premise": "p",
        "hypothesis": "h",
        "modified_hypothesis": "hn",
        "pipeline": "negation",
        "gold_label": "entailment",
    },
    {
        "id": "t3",
        "source_id": "s2",
        "premise": "q",
        "hypothesis": "k",
        "modified_hypothesis": "k1",
        "gold_label": "neutral",
    },
]
LABELS_S1 = {
    ("p", "h"): E,
    ("h", "p"): N,
    ("p", "h1"): E,
    ("h1", "p"): N,
    ("p", "hn"): C,
    ("hn", "p"): C,
    ("h", "h1"): E,
    ("h1", "h"): E,
    ("h", "hn"): C,
    ("hn", "h"): C,
    ("h1", "hn"): C,
    ("hn", "h1"): N,
}
LABELS_S2 = {(a, b): N for a in ("q", "k", "k1") for b in ("q", "k", "k1") if a != b}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def evaluated(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))
    tfile = write_jsonl(tmp_path / "fam.jsonl", TRIPLES)
    lfile = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"premise": a, "hypothesis": b, "label": lab}
            for (a, b), lab in {**LABELS_S1, **LABELS_S2}.items()
        ],
    )
    out = tmp_path / "eval"
    res = CliRunner().invoke(
        main,
        [
            "evaluate",
            str(tfile),
            "--model",
            f"precomputed:{lfile}",
            "--out",
            str(out),
            "--families",
            "--no-plots",
            "--no-progress",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert res.exit_code == 0, res.output
    return tfile, out


def test_augment_end_to_end(evaluated, tmp_path):
    tfile, ev = evaluated
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name / "train.jsonl"
        res = CliRunner().invoke(
            main,
            [
                "augment",
                str(tfile),
                "--evaluation",
                str(ev),
                "--repair",
                "--parquet",
                "--hf",
                "--out",
                str(out),
            ],
        )
        assert res.exit_code == 0, res.output
        outs.append(out)
    assert "repair: 2 families, 1 labels changed" in res.output
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert (
        outs[0].with_suffix(".parquet").read_bytes() == outs[1].with_suffix(".parquet").read_bytes()
    )
    rows = [json.loads(line) for line in outs[0].read_text().splitlines()]
    assert all(list(r) == list(COLUMNS) and r["rule"] in AUG_RULES for r in rows)
    assert len({(r["premise"], r["hypothesis"]) for r in rows}) == len(rows)
    got = {(r["premise"], r["hypothesis"]): (r["label"], r["rule"]) for r in rows}
    assert got[("p", "h")] == (E, "gold")
    assert got[("p", "hn")] == (C, "neg_e_c")
    assert got[("p", "h1")] == (E, "rule1")  # mutual E(h,h1) from the model's labels
    assert got[("h1", "hn")] == (C, "neg_equivalent")
    assert got[("hn", "h1")] == (C, "neg_equivalent")  # the model said N; the logic row wins
    assert got[("q", "k")] == (N, "gold") and got[("q", "k1")] == (N, "repair")
    assert {r["source_pair"]["premise"] for r in rows if r["source_id"] == "s2"} == {"q"}
    # the repaired labels of s1 (with the logic rows on top) are consistent
    texts = ["p", "h", "h1", "hn"]
    g = [[None if a == b else got[(a, b)][0] for b in texts] for a in texts]
    assert consistent_complete(g, [3])
    import pandas as pd

    df = pd.read_parquet(outs[0].with_suffix(".parquet"))
    assert list(df.columns) == list(COLUMNS) and len(df) == len(rows)
    assert df["source_pair"][0] == rows[0]["source_pair"] and df["rule"].tolist() == [
        r["rule"] for r in rows
    ]
    import datasets

    ds = datasets.load_from_disk(str(outs[0].with_name("train_hf")))["train"]
    assert ds.column_names == list(COLUMNS) and ds[0] == rows[0]


def test_augment_without_an_evaluation_and_its_errors(evaluated, tmp_path):
    tfile, ev = evaluated
    out = tmp_path / "plain.jsonl"
    res = CliRunner().invoke(main, ["augment", str(tfile), "--out", str(out)])
    assert res.exit_code == 0, res.output
    rules = [json.loads(line)["rule"] for line in out.read_text().splitlines()]
    assert rules == ["gold", "neg_e_c", "neg_mutual_c", "neg_mutual_c", "gold"]

    res = CliRunner().invoke(main, ["augment", str(tfile), "--out", str(out), "--repair"])
    assert res.exit_code == 2 and "--repair needs --evaluation" in res.output
    res = CliRunner().invoke(
        main,
        ["augment", str(tfile), "--out", str(out), "--evaluation", str(ev), "--model", "hf:other"],
    )
    assert res.exit_code == 1 and "has no model 'hf:other'" in res.output
    (ev / "families.jsonl").write_text('{"model": "x"}\nnot json\n', encoding="utf-8")
    res = CliRunner().invoke(
        main, ["augment", str(tfile), "--out", str(out), "--evaluation", str(ev)]
    )
    assert res.exit_code == 1 and "families.jsonl:2: not valid JSON" in res.output
    assert "Traceback" not in res.output
    (ev / "families.jsonl").unlink()
    res = CliRunner().invoke(
        main, ["augment", str(tfile), "--out", str(out), "--evaluation", str(ev), "--repair"]
    )
    assert res.exit_code == 1 and "no families.jsonl" in res.output
    # predictions.jsonl alone still gives the (H,H') labels for rule1
    res = CliRunner().invoke(
        main, ["augment", str(tfile), "--out", str(out), "--evaluation", str(ev)]
    )
    assert res.exit_code == 0, res.output
    assert "rule1 1" in res.output


def test_flip_is_an_involution():
    assert all(FLIP[FLIP[x]] == x for x in LABELS)


def test_bundled_sample_end_to_end_with_a_tiny_model(tmp_path, tiny_nli_model_dir):
    """What the README shows: the sample through wordnet+negation, evaluate --families, augment."""
    from transnli.resources import resource_path

    sample = str(resource_path("samples", "snli_sample.jsonl"))
    gen, ev, train = tmp_path / "both", tmp_path / "eval", tmp_path / "train.jsonl"
    runner = CliRunner()
    res = runner.invoke(
        main,
        [
            "generate",
            sample,
            "--out",
            str(gen),
            "-q",
            "--limit",
            "25",
            "--pipeline",
            "wordnet+negation",
        ],
    )
    assert res.exit_code == 0, res.output
    records = [json.loads(x) for x in (gen / "triples.jsonl").read_text().splitlines()]
    assert {r["pipeline"] for r in records} == {"wordnet", "negation"}
    res = runner.invoke(
        main,
        [
            "evaluate",
            str(gen / "triples.jsonl"),
            "--model",
            f"m=hf:{tiny_nli_model_dir}",
            "--families",
            "--out",
            str(ev),
            "--no-plots",
            "--no-progress",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((ev / "summary.json").read_text())
    fam = summary["families"]
    assert fam and json.dumps(fam).count("stran") >= 3 and "sneg" in json.dumps(fam)
    report = (ev / "report.md").read_text()
    assert "## Sentence families" in report and "How to read" in report
    assert report.index("Table 4") < report.index("## Sentence families")
    res = runner.invoke(
        main,
        [
            "augment",
            str(gen / "triples.jsonl"),
            "--evaluation",
            str(ev),
            "--repair",
            "--out",
            str(train),
        ],
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in train.read_text().splitlines()]
    assert rows and all(
        r["rule"] and r["source_id"] and r["label"] in ("entailment", "neutral", "contradiction")
        for r in rows
    )
    negated = {r["modified_hypothesis"] for r in records if r["pipeline"] == "negation"}
    assert any(r["hypothesis"] in negated and r["rule"].startswith("neg_") for r in rows)
    assert any(r["rule"] == "repair" for r in rows)
