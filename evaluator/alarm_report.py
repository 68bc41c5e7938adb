"""No-knowledge alarms in `transnli evaluate`: the glue between the labels a run collected and
the pure functions of alarms.py, plus the report paragraph and the curve's points (the figure is
drawn in plots.py, with the others).

With two or more models, for every dataset and kind of pair that every model labelled (the same
distinct pairs: always (P,H), (H,H'), (H',H); (P,H') only when every model was asked the same
(P,H') pairs, e.g. with --all-pairs), the models are N judges of those Q items with the three NLI
labels. theta* is then proven from label counts alone: whatever the true labels of those pairs,
at least one model has accuracy <= theta* on at least one label.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from . import alarms as A
from .formatting import pct
from .labels import LABELS, normalize_label
from .metrics import TripleLabels
from .schedule import KIND_TITLES, KINDS, PH

DIGITS = 6
CURVE_LEVELS = 20  # summary.json: t = 0, 0.05, .., 1
PLOT_LEVELS = 400  # the plot recomputes a finer curve from the counts
M2_TIME_LIMIT = 30.0  # seconds for the exact integer programs of one entry, else the LP bound
NOTE = (
    "theta_star: the largest accuracy t such that some answer key (true label counts) lets "
    "every model be at least t on every label, given only each model's label counts on the "
    "same pairs (the M = 1 summaries). Any alarm threshold above theta_star provably fires: at "
    "least one model is below it on some label, whatever the true labels are. curve: for "
    "t = 0, 0.05, .., 1, the share of answer keys at which every model can still be at least "
    "t on every label (exact counts). Labels with no true item are not constrained. "
    "m2_pairs (beyond the paper): pair_theta_star is the same bound from each pair of models' "
    "joint label counts on the same pairs (exact integer programs up to 2000 pairs, above that "
    "the LP relaxation, an upper bound rounded up), the lowest over pairs; "
    "theta_star there is the lower of it and the M = 1 theta_star: also proven, never higher."
)


def _num(x: Fraction | None) -> float | None:
    return None if x is None else round(float(x), DIGITS)


def _counts(labels: Sequence[str]) -> tuple[int, ...]:
    return tuple(sum(1 for lab in labels if lab == name) for name in LABELS)


def alarm_entry(
    judges: Mapping[str, Sequence[str]], gold: Sequence[str | None] | None = None
) -> dict[str, Any]:
    """The alarm for judges (spec -> label per item, same items, same order); with `gold`, each
    judge's true per-label accuracy beside theta* (only when every item has a gold label)."""
    counts = {spec: _counts(labs) for spec, labs in judges.items()}
    alarm = A.theta_star(list(counts.values()))
    at_key = {spec: _num(A.best_weakest_accuracy(c, alarm.key)) for spec, c in counts.items()}
    entry: dict[str, Any] = {
        "items": alarm.Q,
        "counts": {spec: dict(zip(LABELS, c, strict=True)) for spec, c in counts.items()},
        "theta_star": _num(alarm.theta),
        "theta_star_exact": str(alarm.theta),
        "continuous_bound": _num(alarm.continuous_bound),
        "answer_key_at_theta": dict(zip(LABELS, alarm.key, strict=True)),
        "best_weakest_at_key": at_key,
        "answer_keys": A.n_keys(alarm.Q, alarm.R),
        "curve": [
            [_num(t), _num(s)] for t, s in A.curve_shares(list(counts.values()), CURVE_LEVELS)
        ],
        "gold": None,
    }
    m2 = entry["m2_pairs"] = m2_entry(judges)
    if "pair_theta_star_exact" in m2:
        # the best proven bound: M = 1 over all models, or M = 2 over the best pair
        best = min(alarm.theta, Fraction(m2["pair_theta_star_exact"]))
        m2["theta_star"], m2["theta_star_exact"] = _num(best), str(best)
    if gold is not None:
        entry["gold"] = check = gold_check(judges, gold, alarm.theta)
        weakest = check.pop("_weakest", None)
        if weakest is not None and "theta_star_exact" in m2:
            check["weakest_within_m2"] = weakest <= Fraction(m2["theta_star_exact"])
    return entry


def m2_entry(judges: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Beyond the paper: the M = 2 alarm from each pair of judges' joint label counts (exact integer
    programs, alarms.theta_star_pairs). Never above theta_star; often much lower."""
    idx = {name: i for i, name in enumerate(LABELS)}
    specs = list(judges)
    per_judge = [[idx[lab] for lab in judges[spec]] for spec in specs]
    res = A.m2_alarm(per_judge, len(LABELS), time_limit=M2_TIME_LIMIT)
    theta, (a, b) = res["theta"], res["pair"]
    return {
        "pair_theta_star": _num(theta),
        "pair_theta_star_exact": str(theta),
        "pair": [specs[a], specs[b]],
        "method": res["method"],
    }


def gold_check(
    judges: Mapping[str, Sequence[str]], gold: Sequence[str | None], theta: Fraction
) -> dict[str, Any]:
    """True per-label accuracies (when every item has gold) and whether the weakest is <= theta*
    (it must be: the true key and confusion matrices are among those theta* ranges over)."""
    have = sum(1 for g in gold if g is not None)
    if have < len(gold):
        return {"items_with_gold": have, "note": "not every item has a gold label: not compared"}
    idx = {name: i for i, name in enumerate(LABELS)}
    truth = [idx[g] for g in gold]
    per_judge, weakest = {}, None
    for spec, labs in judges.items():
        acc = A.true_accuracies(truth, [idx[lab] for lab in labs], len(LABELS))
        per_judge[spec] = dict(zip(LABELS, (_num(a) for a in acc), strict=True))
        low = min(a for a in acc if a is not None)
        weakest = low if weakest is None or low < weakest else weakest
    return {
        "items_with_gold": have,
        "true_per_label_accuracy": per_judge,
        "weakest_true_accuracy": _num(weakest),
        "weakest_within_theta_star": weakest <= theta,
        "_weakest": weakest,
    }


_ABSENT = -2  # label code of a pair the model was not asked about
_NO_LABEL = -1  # asked, and given no label (an LLM judge's failed or unparseable reply)
_CODE = {label: i for i, label in enumerate(LABELS)}


class AlarmInputs:
    """What the alarms need from a run, held compactly so that a run read in windows can still
    compute them at its end: per triple its dataset, gold label and a digest of each of its four
    pairs (from the read before any model runs), and per model a label code per triple and kind of
    pair (one byte each). A pair shared by several triples is one item; it was asked when any of its
    triples asked it, and its gold label is the first one given."""

    def __init__(self) -> None:
        self.datasets: dict[str, int] = {}
        self._dataset = array("h")
        self._gold = array("b")
        self._pair = {kind: array("q") for kind in KINDS}
        self._codes: list[tuple[str, dict[str, array]]] = []

    def add_triples(self, triples: Sequence, pair_digests: Sequence[int]) -> None:
        """The model-independent facts of the next triples (each triple once, in run order);
        `pair_digests`: the digests of their pairs, four a triple in KINDS order."""
        for t in triples:
            self._dataset.append(self.datasets.setdefault(t.dataset, len(self.datasets)))
            gold = normalize_label(t.gold_label)
            self._gold.append(_NO_LABEL if gold is None else _CODE[gold])
        for k, kind in enumerate(KINDS):
            self._pair[kind].extend(pair_digests[k::4])

    def add_labels(self, spec: str, rows: Iterable[TripleLabels]) -> None:
        """One model's labels of the next triples, as the rules read them (a pair that is None and
        not among the row's `unlabelled` kinds was not asked)."""
        if not self._codes or self._codes[-1][0] != spec:
            self._codes.append((spec, {kind: array("b") for kind in KINDS}))
        codes = [self._codes[-1][1][kind] for kind in KINDS]
        for r in rows:
            for kind, out, label in zip(KINDS, codes, (r.ph, r.hh2, r.h2h, r.ph2), strict=True):
                out.append(
                    _CODE[label]
                    if label is not None
                    else _NO_LABEL
                    if kind in r.unlabelled
                    else _ABSENT
                )

    def section(self) -> dict[str, Any] | None:
        """summary.json's "alarms": per dataset (first-seen order) and kind of pair. None with
        fewer than two models."""
        if len(self._codes) < 2:
            return None
        dataset = np.frombuffer(self._dataset, dtype=np.int16)
        entries = []
        for name, code in self.datasets.items():
            rows = np.flatnonzero(dataset == code)
            for kind in KINDS:
                entries.append({"dataset": name, "pairs": kind, **self._kind_entry(rows, kind)})
        return {
            "note": NOTE,
            "labels": list(LABELS),
            "judges": [spec for spec, _ in self._codes],
            "results": entries,
        }

    def _kind_entry(self, rows: np.ndarray, kind: str) -> dict[str, Any]:
        pairs = np.frombuffer(self._pair[kind], dtype=np.int64)[rows]
        _, first, inverse = np.unique(pairs, return_index=True, return_inverse=True)
        order = np.argsort(first)  # items in first-seen order
        item_codes = []
        for _, codes in self._codes:
            per_item = np.full(len(first), _ABSENT, dtype=np.int8)
            np.maximum.at(per_item, inverse, np.frombuffer(codes[kind], dtype=np.int8)[rows])
            item_codes.append(per_item[order])
        n = len(first)
        asked = int(np.count_nonzero(np.all([c != _ABSENT for c in item_codes], axis=0)))
        if asked < n:
            return {
                "skipped": f"not every model labelled the same {KIND_TITLES[kind]} pairs "
                f"({asked} of {n} labelled by all)"
            }
        items = np.all([c >= 0 for c in item_codes], axis=0)
        if not items.any():
            return {"skipped": f"no {KIND_TITLES[kind]} pair has a label from every model"}
        judges = {
            spec: [LABELS[c] for c in codes[items]]
            for (spec, _), codes in zip(self._codes, item_codes, strict=True)
        }
        gold = None
        if kind == PH:
            gold_codes = np.frombuffer(self._gold, dtype=np.int8)[rows]
            item_gold = np.full(n, _NO_LABEL, dtype=np.int8)
            given = np.flatnonzero(gold_codes != _NO_LABEL)
            items_given, first_given = np.unique(inverse[given], return_index=True)
            item_gold[items_given] = gold_codes[given[first_given]]
            gold = [None if g == _NO_LABEL else LABELS[g] for g in item_gold[order][items]]
        return {
            "left_out_unlabelled": int(n - np.count_nonzero(items)),
            **alarm_entry(judges, gold),
        }


# --------------------------------------------------------------------------- report.md
def report_lines(summary: Mapping[str, Any]) -> list[str]:
    """The report.md section (empty without alarms)."""
    section = summary.get("alarms")
    if not section:
        return []
    lines = [
        "## No-knowledge alarms",
        "",
        "From the label counts alone (no gold labels), per dataset and kind of pair: theta* is "
        "the largest accuracy every model could have on every label at once, for some true "
        "label distribution. So it is **proven** that, whatever the true labels of these "
        "pairs are, at least one model has accuracy at most theta* on at least one label; an "
        "alarm set at any threshold above theta* fires. Where gold labels exist for every "
        "pair, the models' weakest true per-label accuracy is shown beside it (it cannot "
        "exceed theta*).",
        "",
        "theta* (M = 2) uses, beyond the paper, how each pair of models labelled the same pairs "
        "(their joint counts): also proven, and never higher; it is the bound to set alarms "
        "against (the dashed lines of plots/alarm_curve.png). The items are the distinct pairs "
        "of each kind (a (P,H) pair shared by several triples counts once): `transnli alarm` on "
        "this run's samples.jsonl or predictions.jsonl prints the same two numbers.",
        "",
        "| dataset | pairs | items (distinct pairs) | theta* (M = 1) | answer key at theta* "
        "(E/N/C) | theta* (M = 2) | weakest true accuracy |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in section["results"]:
        title = KIND_TITLES[e["pairs"]]
        if "skipped" in e:
            lines.append(f"| {e['dataset']} | {title} | – | – | {e['skipped']} | – | – |")
            continue
        key = "/".join(str(e["answer_key_at_theta"][lab]) for lab in LABELS)
        gold = e.get("gold") or {}
        weakest = pct(gold.get("weakest_true_accuracy")) if "weakest_true_accuracy" in gold else "–"
        m2 = e.get("m2_pairs", {})
        m2_text = (
            f"{pct(m2['theta_star'])} ({m2['theta_star_exact']})" if "theta_star" in m2 else "–"
        )
        lines.append(
            f"| {e['dataset']} | {title} | {e['items']} | {pct(e['theta_star'])} "
            f"({e['theta_star_exact']}) | {key} | {m2_text} | {weakest} |"
        )
    lines.append("")
    return lines


# --------------------------------------------------------------------------- plot
def curve_points(entry: Mapping[str, Any]) -> tuple[list[float], list[float]]:
    """The alarm curve of one entry in percent: x, the share of answer keys (most favourable
    first) and y, the accuracy every model can still reach on every label at that share (a step
    function, matplotlib's where="pre"). It starts at one key (the best, y = theta*), so a log x
    axis shows it."""
    first = 1.0 / entry["answer_keys"]
    best: dict[float, float] = {first: entry["theta_star"]}
    counts = [tuple(c.values()) for c in entry["counts"].values()]
    for t, s in A.curve_shares(counts, PLOT_LEVELS):
        if s > 0:
            best[float(s)] = max(float(t), best.get(float(s), 0.0))
    shares = sorted(x for x in best if x >= first)
    return [100 * x for x in shares], [100 * best[x] for x in shares]
