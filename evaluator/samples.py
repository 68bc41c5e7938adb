"""samples.jsonl and predictions.jsonl: every triple under every model with its sentences, labels
and rule outcomes (and the labels the rules read, `triple_labels`), and the few violating triples
report.md shows.

predictions.jsonl keeps ids and labels only (small, for joins); samples.jsonl is the file to read
(lm-eval's `--log_samples`, CheckList's failing examples): one line per model x triple, in model
then input order, so that `transnli show` and a reader with `grep` or pandas need no join.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .label_table import LabelTable
from .labels import SHORT
from .metrics import TripleLabels, rule_outcome
from .rules import EXTRA_KEYS, RULES, RULES_BY_KEY, contradiction_symmetry, substitution
from .schedule import KIND_TITLES, KINDS, pairs_of, shows_ph2
from .triples import Triple

SAMPLES_NAME = "samples.jsonl"
EXAMPLES_PER_RULE = 3  # violating triples per rule and model in report.md


def extras_outcome(r: TripleLabels) -> dict[str, bool | None]:
    """The beyond-paper checks for one triple (None: does not apply), counted exactly as
    metrics.dataset_metrics counts them."""
    subst = None
    if r.ph is not None and "p_h2" not in r.unlabelled:
        subst = substitution(r.ph, r.hh2, r.h2h, r.ph2)
    return {"substitution": subst, "contradiction_symmetry": contradiction_symmetry(r.hh2, r.h2h)}


def sample_row(t: Triple, prediction: dict[str, Any], labels: TripleLabels) -> dict[str, Any]:
    """One line of samples.jsonl: a predictions.jsonl row plus the sentences, the rule's name,
    the beyond-paper checks and the triple's p_good (null where it has none). Keys in a fixed,
    reading order (sentences first)."""
    rule = prediction["rule"]
    return {
        "id": prediction["id"],
        "dataset": prediction["dataset"],
        "model": prediction["model"],
        "premise": t.premise,
        "hypothesis": t.hypothesis,
        "modified_hypothesis": t.modified,
        "gold_label": prediction["gold_label"],
        "labels": prediction["labels"],
        "probs": prediction["probs"],
        "rule": rule,
        "rule_name": RULES_BY_KEY[rule].name if rule else None,
        "violated": prediction["violated"],
        "extras": extras_outcome(labels),
        # the judge's probability that H' is good; null where the triple carries none (always
        # present, so every row has the same fields for a table reader)
        "p_good": t.p_good,
    }


def violates(row: dict[str, Any], rule: str | None) -> bool | None:
    """Whether a samples row violates `rule` (a paper rule key or an extra); None where the rule
    does not apply. `rule=None`: any of the paper's four rules."""
    if rule is None or rule in RULES_BY_KEY:
        if row.get("rule") is None or (rule is not None and row["rule"] != rule):
            return None
        return bool(row["violated"])
    value = (row.get("extras") or {}).get(rule)
    return None if value is None else bool(value)


# --------------------------------------------------------------------------- report examples
@dataclass
class ExampleCollector:
    """Keeps the first `k` violating rows per model x rule x dataset while samples stream past
    (so a large run is never held in memory), then picks up to `k` per model x rule taking the
    datasets in turn: the report shows variety across datasets, and the choice is deterministic
    (input order)."""

    k: int = EXAMPLES_PER_RULE
    _kept: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, row: dict[str, Any]) -> None:
        if row.get("rule") is None or not row.get("violated"):
            return
        kept = self._kept.setdefault((row["model"], row["rule"], row["dataset"]), [])
        if len(kept) < self.k:
            kept.append(row)

    def pick(self, model: str, rule: str, datasets: Iterable[str]) -> list[dict[str, Any]]:
        queues = [list(self._kept.get((model, rule, d), ())) for d in datasets]
        out: list[dict[str, Any]] = []
        while len(out) < self.k and any(queues):
            for q in queues:
                if q and len(out) < self.k:
                    out.append(q.pop(0))
        return out


# --------------------------------------------------------------------------- predictions.jsonl
PROB_DIGITS = 6  # probabilities in predictions.jsonl
_ABSENT = object()  # a pair not asked (unlike one asked and given no label)


def triple_predictions(t: Triple, labels: LabelTable, all_pairs: bool = False) -> tuple:
    """A triple's four Predictions in KINDS order; (P,H') None where the triple does not show it
    (`schedule.shows_ph2`: only where the rules need it, unless all_pairs)."""
    ph, hh2, h2h, ph2 = pairs_of(t)
    first = labels[ph], labels[hh2], labels[h2h]
    shown = shows_ph2(first[1].label, first[2].label, all_pairs)
    return (*first, labels.get(ph2) if shown else None)


def triple_labels(t: Triple, labels: LabelTable, all_pairs: bool = False) -> TripleLabels:
    """The labels the rules read (no Prediction is built for them); (P,H') only where the triple
    shows it (`schedule.shows_ph2`), whichever other triple had it labelled."""
    ph, hh2, h2h, ph2 = pairs_of(t)
    hh2_label, h2h_label = labels.label(hh2), labels.label(h2h)
    shown = ph2 in labels and shows_ph2(hh2_label, h2h_label, all_pairs)
    got = (
        labels.label(ph),
        hh2_label,
        h2h_label,
        labels.label(ph2) if shown else _ABSENT,
    )
    unlabelled = tuple(k for k, label in zip(KINDS, got, strict=True) if label is None)
    return TripleLabels(
        got[0],
        got[1],
        got[2],
        None if got[3] is _ABSENT else got[3],
        t.gold_label,
        pair=ph,
        unlabelled=unlabelled,
        p_good=t.p_good,
    )


def prediction_row(
    t: Triple,
    spec: str,
    labels: LabelTable,
    row: TripleLabels | None = None,
    preds: tuple | None = None,
    all_pairs: bool = False,
) -> dict[str, Any]:
    """One line of predictions.jsonl: a triple's four labels and probabilities under a model.
    `row` and `preds`: the triple's labels and Predictions when the caller already has them
    (triple_labels, triple_predictions); `all_pairs`: the run labelled every (P,H')."""
    preds = dict(
        zip(
            KINDS,
            preds if preds is not None else triple_predictions(t, labels, all_pairs),
            strict=True,
        )
    )
    outcome = rule_outcome(row if row is not None else triple_labels(t, labels, all_pairs))
    return {
        "id": t.id,
        "dataset": t.dataset,
        "model": spec,
        "gold_label": t.gold_label,
        "labels": {k: (p.label if p else None) for k, p in preds.items()},
        "probs": {k: (p.to_dict(PROB_DIGITS)["probs"] if p else None) for k, p in preds.items()},
        "rule": outcome.rule,
        "violated": outcome.violated,
    }


# predictions.jsonl's keys: a samples row less the sentences and the extras
PREDICTION_KEYS = ("id", "dataset", "model", "gold_label", "labels", "probs", "rule", "violated")


def prediction_of(row: dict[str, Any]) -> dict[str, Any]:
    """The predictions.jsonl line of a samples.jsonl row (a subset of it: a run builds the rows
    once and writes both files from them)."""
    return {k: row[k] for k in PREDICTION_KEYS}


def _cell(text: str) -> str:
    """A sentence inside a markdown table cell (pipes and line breaks would break the row)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def label_with_prob(row: dict[str, Any], kind: str) -> str:
    """ "E 0.91" (the label's own probability), "E" without probabilities, "–" when not labelled."""
    label = row["labels"].get(kind)
    if label is None:
        return "–"
    probs = (row.get("probs") or {}).get(kind)
    short = SHORT.get(label, label)
    return f"{short} {probs[label]:.2f}" if probs and label in probs else short


def render_examples(summary: dict[str, Any], examples: ExampleCollector) -> list[str]:
    """report.md's section of violating triples (markdown lines)."""
    lines = [
        "## Violating triples",
        "",
        f"Up to {examples.k} per rule and model: the first in input order, taking the datasets "
        "in turn. Labels: E/N/C with the model's probability for it. Every triple with its "
        f"labels is in `{SAMPLES_NAME}`; browse the violations with "
        "`transnli show EVAL_DIR --rule RULE --model MODEL`.",
        "",
    ]
    header = ["id", "dataset", "P", "H", "H'", *(KIND_TITLES[k] for k in KINDS)]
    for model in summary["models"]:
        lines += [f"### `{model['model']}`", ""]
        for rule in RULES:
            cell = model["overall"]["rules"][rule.key]
            head = f"**{rule.key}** `{rule.name}` ({rule.description}):"
            if not cell["violations"]:
                lines += [
                    f"{head} no violation in {cell['cases']} case"
                    f"{'' if cell['cases'] == 1 else 's'}.",
                    "",
                ]
                continue
            rows = examples.pick(model["model"], rule.key, summary["datasets"])
            lines += [
                f"{head} {cell['violations']} of {cell['cases']} cases violated; "
                f"{len(rows)} shown.",
                "",
                "| " + " | ".join(header) + " |",
                "|" + "---|" * len(header),
            ]
            for r in rows:
                cells = [
                    f"`{_cell(r['id'])}`",
                    _cell(r["dataset"]),
                    _cell(r["premise"]),
                    _cell(r["hypothesis"]),
                    _cell(r["modified_hypothesis"]),
                    *(label_with_prob(r, k) for k in KINDS),
                ]
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
    return lines


def all_rule_keys() -> tuple[str, ...]:
    """What `--rule` accepts: the paper's rules, then the beyond-paper checks."""
    return (*(r.key for r in RULES), *EXTRA_KEYS)
