"""`transnli evaluate --families`: metrics of sentence families per model x dataset, and their
place in summary.json ("families"), report.md, tables/families.csv and families.jsonl.

The graph logic is in families.py; this module aggregates it and formats it. Labels come from the
same cached backend as the triples' pairs (FamilyLabelling labels the family pairs it lacks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .backends import Prediction
from .families import (
    NEG_ROLE,
    SNEG_KEYS,
    SNEG_NAMES,
    STRAN_KS,
    STRAN_SAMPLES,
    STRAN_SEED,
    Family,
    build_families,
    chain_outcomes,
    family_pairs,
    is_consistent,
    pair_cost,
    sample_subfamilies,
    scomm_counts,
    sneg_outcomes,
)
from .formatting import markdown_table, rate_with_ci, write_jsonl
from .labelling import label_pairs, progress_bar
from .metrics import rate_cell, ratio, wilson_interval
from .rules import RULES
from .schedule import unique_pairs

FAMILIES_NOTE = (
    "A family is P, H, every accepted H' and H¬ of one source pair; every ordered pair of members "
    "is labelled. rules: violations / chains a->b->c whose antecedent holds (lower is better). "
    "stran(K): share of K-member sub-families (all, or 1,000 sampled with a fixed seed) with no "
    "violation (higher is better). scomm: share of unordered pairs whose contradiction is "
    "symmetric (C(a,b) iff C(b,a)). sneg: share of (P,H,H¬) where M(P,H¬) flips M(P,H) (E<->C, N "
    "stays N); mutual_c: (H,H¬) must be mutual contradiction."
)


def score_cell(n: int, k: int, **extra: Any) -> dict[str, Any]:
    """A score (share of consistent cases, higher is better) with its Wilson interval."""
    return {**extra, "n": n, "consistent": k, "score": ratio(k, n), "ci95": wilson_interval(k, n)}


def graphs_for(families: Sequence[Family], labels: Mapping[tuple[str, str], Prediction | None]):
    def label_of(pair):
        pred = labels.get(pair)
        return pred.label if pred is not None else None

    return [f.graph(label_of) for f in families]


def dataset_family_metrics(
    families: Sequence[Family], graphs: Sequence, samples: dict[int, list]
) -> dict:
    """Every family metric of one model on one dataset. `samples[K]`: the sub-families
    (family index, member indices) stran(K) is measured on (the same for every model)."""
    cases: Counter[str] = Counter()
    violations: Counter[str] = Counter()
    comm = [0, 0, 0, 0, 0]
    sneg_cases: Counter[str] = Counter()
    sneg_viol: Counter[str] = Counter()
    consistent_families = 0
    beyond = [0, 0]  # violated chains no triple holds; families whose every violation is such
    for fam, graph in zip(families, graphs, strict=True):
        violated_here = [0, 0]
        for o in chain_outcomes(graph):
            cases[o.rule] += 1
            violations[o.rule] += o.violated
            if o.violated:
                # a triple's own chain is P -> H -> (H' or H¬): the triple view sees that one
                violated_here[o.chain[:2] != (0, 1)] += 1
        beyond[0] += violated_here[1]
        beyond[1] += bool(violated_here[1]) and not violated_here[0]
        c = scomm_counts(graph)
        for i, v in enumerate(
            (c.pairs, c.asymmetric, c.contradiction_cases, c.entail_contradict, c.equivalent)
        ):
            comm[i] += v
        for key, violated in sneg_outcomes(fam, graph):
            sneg_cases[key] += 1
            sneg_viol[key] += violated
        # a violated chain of known labels stays violated whatever fills the gaps: no need to ask
        consistent_families += not any(violated_here) and is_consistent(graph)
    stran = {}
    for k in STRAN_KS:
        chosen = samples.get(k, [])
        ok = sum(is_consistent(graphs[f], members) for f, members in chosen)
        stran[str(k)] = score_cell(len(chosen), ok, name=f"stran({k})")
    n_sneg = sum(sneg_cases[k] for k in SNEG_KEYS)
    bad_sneg = sum(sneg_viol[k] for k in SNEG_KEYS)
    return {
        "n_families": len(families),
        "families_consistent": score_cell(len(families), consistent_families, name="whole family"),
        # what the triple view cannot see: violated chains other than P -> H -> H', and families
        # whose only violations are such chains
        "violations_beyond_triples": beyond[0],
        "families_inconsistent_beyond_triples": beyond[1],
        "rules": {r.key: rate_cell(cases[r.key], violations[r.key], name=r.name) for r in RULES},
        "stran": stran,
        "scomm": {
            **score_cell(comm[0], comm[0] - comm[1], name="scomm"),
            "contradiction": rate_cell(comm[2], comm[1], name="C(a,b) => C(b,a)"),
            "entail_contradict": comm[3],
            "equivalent_pairs": comm[4],
        },
        "sneg": {
            **score_cell(n_sneg, n_sneg - bad_sneg, name="sneg"),
            **{
                k: rate_cell(sneg_cases[k], sneg_viol[k], name=SNEG_NAMES[k])
                for k in (*SNEG_KEYS, "mutual_c")
            },
        },
    }


def cost_entry(
    dataset: str,
    families: Sequence[Family],
    n_triples: int,
    unique_pairs: int,
    unique_triple_pairs: int,
) -> dict[str, Any]:
    sizes = [f.size for f in families]
    return {
        "dataset": dataset,
        "n_families": len(families),
        "n_members": sum(sizes),
        "max_members": max(sizes, default=0),
        "with_negation": sum(1 for f in families if f.index(NEG_ROLE)),
        # (k+2)(k+1) ordered pairs for a family with k generated sentences ...
        "family_pairs": sum(pair_cost(n) for n in sizes),
        "family_unique_pairs": unique_pairs,
        # ... against 4 pairs per triple in the triple view (fewer when pairs repeat)
        "triple_pairs": 4 * n_triples,
        "triple_unique_pairs": unique_triple_pairs,
    }


def families_summary(
    families: Sequence[Family],
    triples: Sequence,
    results: Sequence[tuple[str, Mapping[tuple[str, str], Prediction | None]]],
) -> dict:
    """summary.json's "families": cost per dataset, then metrics per model x dataset."""
    datasets = list(dict.fromkeys([t.dataset for t in triples] + [f.dataset for f in families]))
    by_ds = {d: [f for f in families if f.dataset == d] for d in datasets}
    samples = {
        d: {k: sample_subfamilies([f.size for f in fams], k) for k in STRAN_KS}
        for d, fams in by_ds.items()
    }
    cost = [
        cost_entry(
            d,
            by_ds[d],
            sum(1 for t in triples if t.dataset == d),
            len(family_pairs(by_ds[d])),
            len(unique_pairs([t for t in triples if t.dataset == d])),
        )
        for d in datasets
    ]
    models = []
    for spec, labels in results:
        entries = []
        for d in datasets:
            fams = by_ds[d]
            entries.append(
                {"dataset": d, **dataset_family_metrics(fams, graphs_for(fams, labels), samples[d])}
            )
        models.append({"model": spec, "datasets": entries})
    return {
        "note": FAMILIES_NOTE,
        "stran_samples": STRAN_SAMPLES,
        "stran_seed": STRAN_SEED,
        "cost": cost,
        "models": models,
    }


def family_rows(
    families: Sequence[Family],
    results: Sequence[tuple[str, Mapping[tuple[str, str], Prediction | None]]],
):
    """families.jsonl: per model x family, its members and label matrix (and what `transnli
    augment --repair` reads back)."""
    for spec, labels in results:
        graphs = graphs_for(families, labels)
        for fam, graph in zip(families, graphs, strict=True):
            yield {
                "model": spec,
                "dataset": fam.dataset,
                "family": fam.id,
                "source_id": fam.source_id,
                "gold_label": fam.gold_label,
                "members": [{"role": m.role, "text": m.text} for m in fam.members],
                "labels": graph,
                "violations": [
                    {"rule": o.rule, "chain": list(o.chain)}
                    for o in chain_outcomes(graph)
                    if o.violated
                ],
                "consistent": is_consistent(graph),
            }


# --------------------------------------------------------------------------- report and table
TABLE_DIRECTION = "violation rate, lower is better"


def violation_cell(score: dict[str, Any]) -> dict[str, Any]:
    """A score cell (share of consistent cases) turned round: the share of inconsistent ones, so
    that every row of the families table reads one way (0% is perfectly consistent)."""
    return rate_cell(score["n"], score["n"] - score["consistent"])


def _metric_cells(entry: dict[str, Any]):
    """(metric key, name, violation-rate cell) in report order. The scores of summary.json (stran,
    scomm, sneg, whole families: higher is better) appear as 1 - score, named for what they
    count, so that every row is a violation rate."""
    for k, cell in entry["stran"].items():
        yield (
            f"stran{k}",
            f"1 - stran({k}): {k}-member sub-families with a violation",
            (violation_cell(cell)),
        )
    yield "scomm", "1 - scomm: pairs whose C holds one way only", violation_cell(entry["scomm"])
    yield "sneg", "1 - sneg: H¬ does not flip M(P,H)", violation_cell(entry["sneg"])
    yield (
        "families_consistent",
        "whole families with a violation",
        violation_cell(entry["families_consistent"]),
    )
    yield (
        "beyond_triples",
        "families whose violations no triple shows",
        rate_cell(entry["n_families"], entry["families_inconsistent_beyond_triples"]),
    )
    for r in RULES:
        yield r.key, f"{r.name} over all chains", entry["rules"][r.key]
    yield (
        "scomm_contradiction",
        entry["scomm"]["contradiction"]["name"],
        entry["scomm"]["contradiction"],
    )
    for k in (*SNEG_KEYS, "mutual_c"):
        yield f"sneg_{k}", entry["sneg"][k]["name"], entry["sneg"][k]


TABLE_COLUMNS = (
    "dataset",
    "model",
    "metric",
    "name",
    "cases",
    "violations",
    "violation_rate",
    "ci95_low",
    "ci95_high",
)


def families_table(summary: dict[str, Any], numeric: bool = True):
    """tables/families.csv (numeric, long: dataset x model x metric) or the report's wide table;
    every row a violation rate (lower is better)."""
    import pandas as pd

    fams = summary["families"]
    if numeric:
        rows = []
        for m in fams["models"]:
            for entry in m["datasets"]:
                for key, name, cell in _metric_cells(entry):
                    lo, hi = cell["ci95"] or (None, None)
                    rows.append(
                        (entry["dataset"], m["model"], key, name)
                        + (cell["cases"], cell["violations"], cell["rate"], lo, hi)
                    )
        return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    specs = [m["model"] for m in fams["models"]]
    metric = f"metric ({TABLE_DIRECTION})"
    wide: dict[tuple[str, str], dict[str, Any]] = {}
    for m in fams["models"]:
        for entry in m["datasets"]:
            for key, name, cell in _metric_cells(entry):
                row = wide.setdefault(
                    (entry["dataset"], key), {"dataset": entry["dataset"], metric: name}
                )
                row[m["model"]] = rate_with_ci(cell)
    return pd.DataFrame(list(wide.values()), columns=["dataset", metric, *specs])


def cost_table(summary: dict[str, Any]):
    import pandas as pd

    cols = [
        "dataset",
        "n_families",
        "n_members",
        "max_members",
        "with_negation",
        "family_pairs",
        "family_unique_pairs",
        "triple_pairs",
        "triple_unique_pairs",
    ]
    return pd.DataFrame(summary["families"]["cost"], columns=cols).astype(str)


def report_lines(summary: dict[str, Any]) -> list[str]:
    """The report.md section beside Tables 1-4."""
    return [
        "## Sentence families: stran(K), scomm, sneg",
        "",
        "How to read: a family is P, H, every accepted H' and H¬ (the negated H) of one source "
        "pair, and the model labels every ordered pair of its members, so the four rules are "
        "checked on every chain a -> b -> c, not only on (P, H, H'). **Every row of the table "
        "below is a violation rate: the share of cases that break consistency, lower is better, "
        "0% is perfectly consistent**, each with its Wilson 95% interval and (violations/cases). "
        "The paper's scores (stran, scomm, sneg; higher is better, kept as such in summary.json) "
        "appear turned round as 1 - score. 1 - stran(K) is the share of K-sentence sub-families "
        "(all of them, or 1,000 drawn with a fixed seed per dataset) in which some rule is "
        "violated; it grows with K because a larger group holds more chains (where the model "
        "left pairs unlabelled, a sub-family counts as consistent if some labelling of those "
        "pairs would be, so a violation may span four or more sentences). 1 - scomm is the share "
        "of unordered pairs whose contradiction label differs between the two orders. 1 - sneg "
        "is the share of (P, H, H¬) where M(P,H¬) is not M(P,H) flipped (E <-> C, N stays N). "
        '"families whose violations no triple shows" counts families that are inconsistent '
        "only through chains other than P -> H -> H' (the triple view's one chain), i.e. what "
        "labelling whole families adds. The cost table says how many pairs families take "
        "against triples.",
        "",
        markdown_table(cost_table(summary)),
        "",
        markdown_table(families_table(summary, numeric=False)),
        "",
    ]


class FamilyLabelling:
    """What `evaluate_triples(families=True)` keeps: the families of the triples and, per model,
    the labels of their pairs (the triples' own labels are kept apart, so the triple metrics and
    predictions.jsonl are the same with and without --families)."""

    def __init__(self, triples: Sequence):
        self.triples = triples
        self.families = build_families(triples)
        self.pairs = family_pairs(self.families)
        self.results: list[tuple[str, dict[tuple[str, str], Prediction]]] = []

    def label(self, spec: str, runner, labels: Mapping, show_progress: bool) -> int:
        """Label the family pairs `labels` lacks through `runner` (the same cached backend);
        returns how many were asked for."""
        missing = [p for p in self.pairs if p not in labels]
        new: Mapping = {}
        if missing:
            bar = progress_bar(show_progress, len(missing), f"{spec} (families)")
            try:
                new = label_pairs(runner, missing, bar.update)
            finally:
                bar.close()
        self.results.append((spec, {p: labels[p] if p in labels else new[p] for p in self.pairs}))
        return len(missing)

    def summary(self) -> dict[str, Any]:
        return families_summary(self.families, self.triples, self.results)

    def write_rows(self, path: Path) -> Path:
        """families.jsonl at `path`; returns the path."""
        write_jsonl(path, family_rows(self.families, self.results))
        return path
