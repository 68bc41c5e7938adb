"""Sentence families: grouping, rules over every chain, stran(K), scomm, sneg (hand-made label
graphs with known values), a set-semantics check that true labels are always consistent, and
`transnli evaluate --families` end to end (hand labels through precomputed:, and a tiny hf
model)."""

from __future__ import annotations

import json
import random
from itertools import combinations

import pytest
from click.testing import CliRunner
from transnli.evaluator.families import (
    Family,
    Member,
    build_families,
    chain_outcomes,
    family_pairs,
    is_consistent,
    pair_cost,
    sample_subfamilies,
    scomm_counts,
    sneg_outcomes,
)
from transnli.evaluator.family_eval import dataset_family_metrics
from transnli.evaluator.labels import C, E, N
from transnli.evaluator.triples import Triple

from transnli.cli.evaluate import evaluate

_ = None


def T(tid, p, h, h2, source_id="", pipeline="wordnet", gold=None, dataset="d"):
    return Triple(tid, dataset, p, h, h2, gold, "f", source_id, pipeline)


def fam(*roles):
    return Family("d", "s", tuple(Member(f"s{i}", r) for i, r in enumerate(roles)))


# --------------------------------------------------------------------------- grouping
def test_build_families_groups_by_source_id_or_pair():
    triples = [
        T("1", "p", "h", "h'1", "s1", gold="entailment"),
        T("2", "q", "k", "k'1"),  # no source id: grouped by (P, H)
        T("3", "p", "h", "not h", "s1", pipeline="negation"),
        T("4", "p", "h", "h'2", "s1"),
        T("5", "q", "k", "k'2"),
        T("6", "p", "h", "h'1", "s1"),  # the same H' again: one member
        T("7", "p", "h", "h'3", "s2"),  # another source id: another family
    ]
    fams = build_families(triples)
    assert [(f.source_id, f.texts()) for f in fams] == [
        ("s1", ["p", "h", "h'1", "not h", "h'2"]),
        ("", ["q", "k", "k'1", "k'2"]),
        ("s2", ["p", "h", "h'3"]),
    ]
    assert [m.role for m in fams[0].members] == ["P", "H", "H'", "Hneg", "H'"]
    assert fams[0].gold_label == "entailment" and fams[1].gold_label is None
    assert fams[0].index("Hneg") == [3]
    assert len(fams[0].pairs()) == pair_cost(5) == 20  # (k+2)(k+1) with k = 3 generated
    # (p,h) and (h,p) are shared by families 1 and 3: counted once
    assert len(family_pairs(fams)) == 20 + 12 + 6 - 2


# --------------------------------------------------------------------------- rules over chains
def test_chain_outcomes_counts_every_chain():
    # members 0..2; (1,2) mutual E, (0,1) E, (0,2) N -> chain (0,1,2) violates rule1.
    # (2,1) E and (1,2) E -> chain (0,2,1): M(0,2)=N, mutual E (2,1): rule3, M(0,1)=E, fine.
    g = [[_, E, N], [N, _, E], [N, E, _]]
    got = sorted((o.chain, o.rule, o.violated) for o in chain_outcomes(g))
    assert got == [((0, 1, 2), "rule1", True), ((0, 2, 1), "rule3", False)]
    assert not is_consistent(g)


def test_rules_use_one_directional_labels_anywhere_in_the_family():
    # H' (2) and H¬ (3): a chain that does not start at P, H' -> H -> H¬
    g = [
        [_, N, N, N],
        [N, _, N, C],
        [E, E, _, E],  # M(H',H)=E, M(H',H¬)=E: with mutual C(H,H¬) rule2 wants C
        [N, C, N, _],
    ]
    outs = [(o.chain, o.rule, o.violated) for o in chain_outcomes(g)]
    assert ((2, 1, 3), "rule2", True) in outs


def four_sentence_graph():
    """The only violation spans four sentences: E(a,b), mutual E(b,c), mutual E(c,d), C(a,d),
    and the model gave no label to (a,c), (b,d), (d,b)."""
    a, b, c, d = range(4)
    g = [[None] * 4 for _ in range(4)]
    g[a][b], g[b][c], g[c][b], g[c][d], g[d][c], g[a][d] = E, E, E, E, E, C
    g[b][a] = g[c][a] = g[d][a] = N
    return g


def test_violation_that_needs_four_sentences():
    g = four_sentence_graph()
    assert not any(o.violated for o in chain_outcomes(g))  # no chain of 3 sees it
    assert all(is_consistent(g, s) for s in combinations(range(4), 3))
    assert not is_consistent(g)
    fams = [fam("P", "H", "H'", "H'")]
    samples = {k: sample_subfamilies([4], k) for k in (3, 4, 5)}
    m = dataset_family_metrics(fams, [g], samples)
    assert (m["stran"]["3"]["n"], m["stran"]["3"]["consistent"]) == (4, 4)
    assert (m["stran"]["4"]["n"], m["stran"]["4"]["consistent"]) == (1, 0)
    assert m["stran"]["5"]["n"] == 0 and m["stran"]["5"]["score"] is None
    assert m["families_consistent"]["consistent"] == 0
    assert all(cell["violations"] == 0 for cell in m["rules"].values())


def test_forced_and_excluded_labels_conflict():
    # Two chains meet on the unlabelled pair (0,2): rule1 (E(0,1), mutual E(1,2)) wants E,
    # rule4 (N(0,3), mutual C(3,2)) excludes E: no label of (0,2) satisfies both.
    g = [[None] * 4 for _ in range(4)]
    g[0][1], g[1][2], g[2][1] = E, E, E
    g[0][3], g[3][2], g[2][3] = N, C, C
    for i, j in ((1, 0), (2, 0), (3, 0), (1, 3), (3, 1)):
        g[i][j] = N
    assert not is_consistent(g)
    g[0][3] = E  # now rule2 wants C(0,2) while rule1 wants E(0,2): still a conflict
    assert not is_consistent(g)
    g[3][2] = N  # no second rule: the forced E stands alone
    assert is_consistent(g)


@pytest.mark.parametrize("seed", range(5))
def test_complete_graphs_need_no_more_than_three_sentences(seed):
    rng = random.Random(seed)
    for _ in range(40):
        n = 5
        g = [[None if i == j else rng.choice((E, E, N, C)) for j in range(n)] for i in range(n)]
        assert is_consistent(g) == (not any(o.violated for o in chain_outcomes(g)))
        for sub in combinations(range(n), 4):
            assert is_consistent(g, sub) == all(is_consistent(g, s) for s in combinations(sub, 3))


def test_gaps_are_consistent_when_some_labelling_of_them_is():
    from itertools import product

    rng = random.Random(2)
    seen = {True: 0, False: 0}
    for _ in range(60):
        n = 4
        g = [[None if i == j else rng.choice((E, E, N, C)) for j in range(n)] for i in range(n)]
        gaps = rng.sample([(i, j) for i in range(n) for j in range(n) if i != j], 3)
        for i, j in gaps:
            g[i][j] = None
        brute = False
        for fill in product((E, N, C), repeat=len(gaps)):
            full = [row[:] for row in g]
            for (i, j), lab in zip(gaps, fill, strict=True):
                full[i][j] = lab
            if not any(o.violated for o in chain_outcomes(full)):
                brute = True
                break
        assert is_consistent(g) == brute
        seen[brute] += 1
    assert seen[True] and seen[False]


def test_true_labels_of_sets_are_always_consistent():
    """Sentences as non-empty sets of worlds: E = subset, C = disjoint, N otherwise; H¬ is the
    complement of H. The rules, scomm and sneg must never fire on such labels."""
    rng = random.Random(7)
    worlds = range(5)

    def label(a, b):
        return E if a <= b else C if not (a & b) else N

    checked = 0
    for _ in range(300):
        sets = [frozenset(w for w in worlds if rng.random() < 0.5) for _ in range(4)]
        if not all(sets) or len(sets[1]) == len(worlds):
            continue
        sets.append(frozenset(worlds) - sets[1])  # H¬
        f = fam("P", "H", "H'", "H'", "Hneg")
        g = [
            [None if i == j else label(a, b) for j, b in enumerate(sets)]
            for i, a in enumerate(sets)
        ]
        assert is_consistent(g)
        assert scomm_counts(g).asymmetric == 0
        assert not any(v for _, v in sneg_outcomes(f, g))
        checked += 1
    assert checked > 100


# --------------------------------------------------------------------------- scomm, sneg
def test_scomm_counts():
    g = [[_, C, C, E], [C, _, E, N], [N, C, _, E], [E, N, E, _]]
    c = scomm_counts(g)
    # pairs: (0,1) C/C ok; (0,2) C/N asym; (0,3) E/E equivalent; (1,2) E/C asym (E one way);
    # (1,3) N/N; (2,3) E/E equivalent
    assert (c.pairs, c.asymmetric, c.contradiction_cases, c.entail_contradict, c.equivalent) == (
        6,
        2,
        3,
        1,
        2,
    )
    m = dataset_family_metrics([fam("P", "H", "H'", "H'")], [g], {})
    assert (m["scomm"]["n"], m["scomm"]["consistent"]) == (6, 4)
    assert (m["scomm"]["contradiction"]["cases"], m["scomm"]["contradiction"]["violations"]) == (
        3,
        2,
    )
    assert m["scomm"]["ci95"][0] < 4 / 6 < m["scomm"]["ci95"][1]


def test_sneg_values():
    f = fam("P", "H", "Hneg")
    ok = [[_, E, C], [N, _, C], [N, C, _]]
    assert sneg_outcomes(f, ok) == [("e_to_c", False), ("mutual_c", False)]
    bad = [[_, C, N], [N, _, C], [N, N, _]]
    assert sneg_outcomes(f, bad) == [("c_to_e", True), ("mutual_c", True)]
    neutral = [[_, N, N], [N, _, C], [N, C, _]]
    assert sneg_outcomes(f, neutral) == [("n_to_n", False), ("mutual_c", False)]
    gap = [[_, N, None], [N, _, C], [N, C, _]]
    assert sneg_outcomes(f, gap) == [("mutual_c", False)]
    assert sneg_outcomes(fam("P", "H", "H'"), ok) == []
    m = dataset_family_metrics([f, f, f], [ok, bad, neutral], {})
    s = m["sneg"]
    assert (s["n"], s["consistent"]) == (3, 2)
    assert (s["c_to_e"]["cases"], s["c_to_e"]["violations"]) == (1, 1)
    assert (s["mutual_c"]["cases"], s["mutual_c"]["violations"]) == (3, 1)
    assert s["ci95"] is not None and s["e_to_c"]["rate"] == 0.0


# --------------------------------------------------------------------------- sampling
def test_sampling_is_exhaustive_then_capped_and_fixed():
    small = sample_subfamilies([4, 3, 2], 3)
    assert small == [(0, (0, 1, 2)), (0, (0, 1, 3)), (0, (0, 2, 3)), (0, (1, 2, 3)), (1, (0, 1, 2))]
    sizes = [8] * 30  # C(8,5) = 56 each: 1,680 sub-families
    big = sample_subfamilies(sizes, 5)
    assert len(big) == 1000 == len(set(big))
    assert big == sample_subfamilies(sizes, 5)
    assert all(len(m) == 5 and list(m) == sorted(m) and m[-1] < 8 for _, m in big)
    assert len({f for f, _ in big}) == 30


# --------------------------------------------------------------------------- end to end
FAMILY_TRIPLES = [
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
    {"id": "t3", "source_id": "s2", "premise": "q", "hypothesis": "k", "modified_hypothesis": "k1"},
]
# family s1: p h h1 hn. Model: E(p,h), mutual E(h,h1), E(p,h1) (rule1 holds); (h,hn) mutual C,
# C(p,hn) (sneg holds, rule2 holds); (h1,hn): C one way only (scomm violation);
# family s2: q k k1, all neutral.
S1 = {
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
S2 = {(a, b): N for a in ("q", "k", "k1") for b in ("q", "k", "k1") if a != b}


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_evaluate_families_with_hand_labels(tmp_path):
    tfile = write_jsonl(tmp_path / "fam.jsonl", FAMILY_TRIPLES)
    lfile = write_jsonl(
        tmp_path / "labels.jsonl",
        [{"premise": a, "hypothesis": b, "label": lab} for (a, b), lab in {**S1, **S2}.items()],
    )
    out = tmp_path / "out"
    res = CliRunner().invoke(
        evaluate,
        [
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
    summary = json.loads((out / "summary.json").read_text())
    fams = summary["families"]
    assert fams["cost"] == [
        {
            "dataset": "fam",
            "n_families": 2,
            "n_members": 7,
            "max_members": 4,
            "with_negation": 1,
            "family_pairs": 18,
            "family_unique_pairs": 18,
            "triple_pairs": 12,
            "triple_unique_pairs": 11,
        }
    ]
    entry = fams["models"][0]["datasets"][0]
    assert entry["n_families"] == 2
    # Hand count over s1 (s2 is all neutral: no antecedent). Mutual pairs: (h,h1) E, (h,hn) C,
    # (p,hn) C. rule1: (p,h,h1), (p,h1,h) hold. rule2: (p,h,hn), (h1,h,hn) hold. rule3:
    # (hn,h1,h) has N(hn,h1) and mutual E(h1,h) but C(hn,h): violated. rule4: (h,p,hn),
    # (h1,p,hn) hold.
    got = {k: (c["cases"], c["violations"]) for k, c in entry["rules"].items()}
    assert got == {"rule1": (2, 0), "rule2": (2, 0), "rule3": (1, 1), "rule4": (2, 0)}
    # the violated chain hn -> h1 -> h is no triple's chain: only the family view sees it
    assert (
        entry["violations_beyond_triples"] == 1
        and entry["families_inconsistent_beyond_triples"] == 1
    )
    # sub-families: only {h, h1, hn} holds the violated chain
    assert (entry["stran"]["3"]["n"], entry["stran"]["3"]["consistent"]) == (5, 4)
    assert (entry["stran"]["4"]["n"], entry["stran"]["4"]["consistent"]) == (1, 0)
    assert (entry["families_consistent"]["n"], entry["families_consistent"]["consistent"]) == (2, 1)
    assert (entry["sneg"]["e_to_c"]["cases"], entry["sneg"]["e_to_c"]["violations"]) == (1, 0)
    assert (entry["sneg"]["mutual_c"]["cases"], entry["sneg"]["mutual_c"]["violations"]) == (1, 0)
    assert (entry["sneg"]["n"], entry["sneg"]["consistent"]) == (1, 1)
    # (h1,hn) is C one way only
    assert (entry["scomm"]["n"], entry["scomm"]["consistent"]) == (9, 8)
    report = (out / "report.md").read_text()
    assert "## Sentence families: stran(K), scomm, sneg" in report and "How to read" in report
    # one direction: every row of the table is a violation rate, as its header says; a score
    # (scomm: 8 of 9 pairs consistent) appears as 1 of 9 violated, never as "88.9% (8/9)"
    table = (out / "tables" / "families.csv").read_text().splitlines()
    assert (
        table[0] == "dataset,model,metric,name,cases,violations,violation_rate,ci95_low,ci95_high"
    )
    assert any(
        line.startswith("fam,") and ",scomm," in line and ",9,1,0.1111" in line for line in table
    )
    assert "| metric (violation rate, lower is better) " in report  # the table's header
    scomm = next(line for line in report.splitlines() if "| 1 - scomm" in line)
    assert "11.1% [" in scomm and "(1/9)" in scomm and "(8/9)" not in scomm
    families_row = next(line for line in report.splitlines() if "| whole families with a" in line)
    assert "(1/2)" in families_row  # one of the two families is inconsistent
    assert "every row of the table below is a violation rate" in report.lower()
    rows = [json.loads(line) for line in (out / "families.jsonl").read_text().splitlines()]
    assert [r["source_id"] for r in rows] == ["s1", "s2"]
    assert rows[0]["labels"][0][1] == E and rows[0]["labels"][3][2] == N
    assert rows[0]["violations"] == [{"rule": "rule3", "chain": [3, 2, 1]}]
    assert not rows[0]["consistent"] and rows[1]["consistent"]
    # the triple metrics are unchanged by --families
    plain = tmp_path / "plain"
    res = CliRunner().invoke(
        evaluate,
        [
            str(tfile),
            "--model",
            f"precomputed:{lfile}",
            "--out",
            str(plain),
            "--no-plots",
            "--no-progress",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert (plain / "predictions.jsonl").read_bytes() == (out / "predictions.jsonl").read_bytes()
    assert "families" not in json.loads((plain / "summary.json").read_text())


def test_evaluate_families_with_a_tiny_model_is_cached_and_deterministic(
    tmp_path, tiny_nli_model_dir
):
    tfile = write_jsonl(
        tmp_path / "fam.jsonl",
        [
            {
                **t,
                "premise": t["premise"].replace("p", "a man is sleeping ."),
                "hypothesis": {"h": "a man is happy .", "k": "a dog is big ."}[t["hypothesis"]],
                "modified_hypothesis": {
                    "h1": "a man is sad .",
                    "hn": "a man is not happy .",
                    "k1": "a dog is small .",
                }[t["modified_hypothesis"]],
            }
            for t in FAMILY_TRIPLES
        ],
    )
    outs, logs = [], []
    for name in ("a", "b"):
        out = tmp_path / name
        res = CliRunner().invoke(
            evaluate,
            [
                str(tfile),
                "--model",
                f"hf:{tiny_nli_model_dir}",
                "--out",
                str(out),
                "--families",
                "--no-plots",
                "--no-progress",
                "--device",
                "cpu",
                "--cache-dir",
                str(tmp_path / "c"),
            ],
        )
        assert res.exit_code == 0, res.output
        outs.append(out)
        logs.append(res.output)
    assert "18 pairs labelled (0 from cache, 18 computed)" in logs[0]
    assert "18 pairs labelled (18 from cache, 0 computed)" in logs[1]
    for name in ("summary.json", "report.md", "families.jsonl", "tables/families.csv"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    summary = json.loads((outs[0] / "summary.json").read_text())
    entry = summary["families"]["models"][0]["datasets"][0]
    assert entry["n_families"] == 2 and entry["stran"]["3"]["n"] == 5
    assert summary["provenance"]["config"]["families"] is True


def test_pairs_families_exports_what_evaluate_families_needs(tmp_path):
    from transnli.cli.evaluate import pairs

    tfile = write_jsonl(tmp_path / "fam.jsonl", FAMILY_TRIPLES)
    exported = tmp_path / "pairs.jsonl"
    res = CliRunner().invoke(pairs, [str(tfile), "--families", "--out", str(exported)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(rows) == 18 == len({(r["premise"], r["hypothesis"]) for r in rows})
    labelled = write_jsonl(tmp_path / "labelled.jsonl", [{**r, "label": "neutral"} for r in rows])
    res = CliRunner().invoke(
        evaluate,
        [
            str(tfile),
            "--model",
            f"precomputed:{labelled}",
            "--families",
            "--out",
            str(tmp_path / "out"),
            "--no-plots",
            "--no-progress",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(
        pairs, [str(tfile), "--families", "--first-stage", "--out", str(exported)]
    )
    assert res.exit_code == 2 and "--families excludes" in res.output
