"""Checks on a model's labels once it has labelled a run: signs that the model, not the test set,
is broken. Pure functions of summary.json's content; report.md shows them under "Warnings" and
`evaluate` says them on stderr.

- One label for more than ONE_LABEL_SHARE of the labels a model gave (counted per triple and kind
  of pair, as summary.json's label_counts): what a model that reads nothing does (a tokenizer
  without its vocabulary, a random head).
- More than UNKNOWN_SHARE of the tokens of the run's first sentences mapped to the tokenizer's
  unknown token ([UNK]): a tokenizer whose vocabulary does not cover the text (another model's
  tokenizer, a cut-down vocabulary) leaves the model reading placeholders (summary.json's
  `unknown_tokens`, measured by evaluate.py on the first UNKNOWN_SAMPLE triples).
- Accuracy below chance (a third) on the gold-labelled (P,H) pairs: an NLI model that is right
  less often than a coin with three sides most likely has its labels in another order than its
  config says (ids swapped), which a label map fixes.

- Pairs left without a label (an LLM judge's unparseable replies or failed requests), with the
  share it labelled: its rates are over the triples it labelled only.

The label checks need a minimum of evidence (MIN_LABELS, MIN_GOLD_PAIRS), so a tiny run does not
cry wolf.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .labels import LABELS

log = logging.getLogger("transnli")

ONE_LABEL_SHARE = 0.98
UNKNOWN_SHARE = 0.2
UNKNOWN_SAMPLE = 1000  # triples whose sentences the unknown-token share is measured on
CHANCE = 1 / len(LABELS)
MIN_LABELS = 30
MIN_GOLD_PAIRS = 30


def one_label_warning(name: str, label_counts: Mapping[str, Mapping[str, int]]) -> str | None:
    """A warning when one label is more than ONE_LABEL_SHARE of a model's labels."""
    totals = {label: sum(kind.get(label, 0) for kind in label_counts.values()) for label in LABELS}
    n = sum(totals.values())
    top = max(LABELS, key=lambda label: totals[label])
    if n < MIN_LABELS or totals[top] <= ONE_LABEL_SHARE * n:
        return None
    return (
        f"{name} labelled {totals[top] / n:.1%} of {n} pairs {top}: a model that cannot read its "
        "input (a tokenizer without its vocabulary, an untrained head) does that; check the "
        f"model with `transnli doctor --model` and a few pairs by hand"
    )


def unknown_tokens_warning(name: str, share: float | None) -> str | None:
    """A warning when more than UNKNOWN_SHARE of the tokens were the unknown token."""
    if share is None or share <= UNKNOWN_SHARE:
        return None
    return (
        f"{name}'s tokenizer maps {share:.1%} of the tokens of these sentences to its unknown "
        "token ([UNK]): the model reads placeholders, not the words; check that the tokenizer "
        "files in its folder are the model's own"
    )


def below_chance_warning(
    name: str, accuracy: float | None, gold_pairs: int, label_map: str | None
) -> str | None:
    """A warning when accuracy on gold labels is below chance (a likely label-order problem)."""
    if accuracy is None or gold_pairs < MIN_GOLD_PAIRS or accuracy >= CHANCE:
        return None
    fix = (
        f"its labels are read as {label_map}; give the order its model card states with the "
        "spec option label_map, e.g. --model "
        f"'{name}=SPEC?label_map=0=contradiction,1=neutral,2=entailment'"
        if label_map
        else "check which label each of its outputs means"
    )
    return (
        f"{name} is right on {accuracy:.1%} of {gold_pairs} gold-labelled (P,H) pairs, below "
        f"chance ({CHANCE:.1%}): its labels are likely in another order; {fix}"
    )


def unlabelled_warning(name: str, unlabelled: int, described: Mapping[str, Any]) -> str | None:
    """A warning when a model (an LLM judge) left pairs without a label: the rules then count only
    the triples it labelled, so the share labelled belongs beside every rate."""
    asked = described.get("pairs_labelled") or 0
    if not unlabelled or not asked:
        return None
    why = [
        f"{described[key]} {what}"
        for key, what in (("unparseable", "unparseable replies"), ("request_failures", "failed"))
        if described.get(key)
    ]
    return (
        f"{name} labelled {(asked - unlabelled) / asked:.1%} of the {asked} pairs it was asked "
        f"({unlabelled} without a label{': ' + ', '.join(why) if why else ''}): its rates count "
        "only the triples it labelled; an LLM judge may need room to answer (--llm-max-tokens)"
    )


def model_warnings(summary: Mapping[str, Any]) -> list[str]:
    """Every warning for every model of an evaluation, in model order."""
    described = {m.get("name"): m for m in summary.get("provenance", {}).get("models", [])}
    out = []
    for entry in summary.get("models", []):
        name, overall = entry["model"], entry["overall"]
        warning = unlabelled_warning(
            name, entry.get("unlabelled_pairs", 0), described.get(name, {})
        )
        if warning:
            out.append(warning)
        warning = unknown_tokens_warning(name, described.get(name, {}).get("unknown_tokens"))
        if warning:
            out.append(warning)
        warning = one_label_warning(name, overall["label_counts"])
        if warning:
            out.append(warning)
        label_map = described.get(name, {}).get("label_map")
        warning = below_chance_warning(
            name, overall["accuracy"], overall["accuracy_pairs"], label_map
        )
        if warning:
            out.append(warning)
    return out


def report_lines(summary: Mapping[str, Any]) -> list[str]:
    """report.md's Warnings section; nothing when there is no warning."""
    warnings = model_warnings(summary)
    if not warnings:
        return []
    return ["## Warnings", "", *(f"- {w}" for w in warnings), ""]


def warn_about_models(summary: Mapping[str, Any]) -> None:
    """Each warning as a log warning (the command line shows them on stderr)."""
    for warning in model_warnings(summary):
        log.warning("%s", warning)
