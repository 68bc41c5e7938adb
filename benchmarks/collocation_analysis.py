"""Which web-bigram signal separates good from bad swaps? The analysis behind the collocation
filter.

    .venv/bin/python benchmarks/collocation_analysis.py [--preset default] [--set KEY=VALUE]

Runs a preset over the dev sentences (as bench_quality.py does), and for every accepted triple that
has a judgement computes, from symspellpy's word and word-pair counts, the drop in association (PMI,
in nats; generator/filters/collocation.py) between H's and H''s bigrams around the replaced word.
Each variant restricts which neighbour's bigram counts. Prints one JSON object: per variant the AUC
(bad = positive; 0.5 = no signal) and, per threshold, how many triples it would reject, how many of
them were bad and the good ones it would lose. Design and tune on the dev set only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_quality  # noqa: E402

CONTENT = frozenset({"NOUN", "VERB", "ADJ", "ADV", "PROPN"})
THRESHOLDS = (0.5, 1.0, 1.5, 2.0, 3.0)


def auc(scores: list[float], bad: list[bool]) -> float | None:
    """Probability that a bad triple scores above a good one (ties count half)."""
    from scipy.stats import mannwhitneyu

    pos = [s for s, b in zip(scores, bad, strict=True) if b]
    neg = [s for s, b in zip(scores, bad, strict=True) if not b]
    if not pos or not neg:
        return None
    u = mannwhitneyu(pos, neg).statistic
    return round(float(u) / (len(pos) * len(neg)), 3)


def neighbours(tagged, word_index: int) -> dict:
    toks = tagged.tokens
    left = toks[word_index - 1] if word_index > 0 else None
    right = toks[word_index + 1] if word_index + 1 < len(toks) else None
    return {
        "left_pos": left.pos if left else None,
        "right_pos": right.pos if right else None,
        "right_governed": bool(right and right.head == word_index),
    }


def variants(row: dict) -> dict[str, float]:
    drop = {s.side: s.drop for s in row["sides"]}
    left, right = drop.get("left", 0.0), drop.get("right", 0.0)
    n = row["nb"]
    return {
        "any side": max(left, right),
        "left": left,
        "right": right,
        "right content word": right if n["right_pos"] in CONTENT else 0.0,
        "left content word": left if n["left_pos"] in CONTENT else 0.0,
        "right ADP/PART": right if n["right_pos"] in ("ADP", "PART") else 0.0,
        "right governed ADP (the filter)": right
        if n["right_pos"] == "ADP" and n["right_governed"]
        else 0.0,
    }


def main(argv=None) -> None:
    from transnli.generator.filters.collocation import load_ngrams, side_bigrams
    from transnli.generator.tagging import SpacyTagger

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    overrides = {}
    for item in args.set:
        k, _, v = item.partition("=")
        overrides[k.strip()] = v if k.strip() == "filters" else bench_quality.parse_value(v.strip())

    judged = bench_quality.load_judgements()
    _, _, accepted, _, _ = bench_quality.run_preset(args.preset, overrides)
    data = load_ngrams()
    rows = []
    for rec in accepted:
        j = judged.get(bench_quality.key(rec.hypothesis, rec.modified_hypothesis))
        if j is not None:
            rows.append(
                {
                    "rec": rec,
                    "bad": not j["good"],
                    "sides": side_bigrams(data, rec.hypothesis, rec.modified_hypothesis),
                }
            )
    hyps = sorted({r["rec"].hypothesis for r in rows})
    tagged = dict(zip(hyps, SpacyTagger().tag(hyps), strict=True))
    for r in rows:
        r["nb"] = neighbours(tagged[r["rec"].hypothesis], r["rec"].word_index)

    bad = [r["bad"] for r in rows]
    scores = [variants(r) for r in rows]
    out = {
        "preset": args.preset,
        "overrides": overrides,
        "judged_accepted": len(rows),
        "bad": sum(bad),
        "variants": {},
    }
    for name in scores[0]:
        col = [s[name] for s in scores]
        table = []
        for t in THRESHOLDS:
            hit = [b for s, b in zip(col, bad, strict=True) if s >= t]
            table.append(
                {
                    "min_drop": t,
                    "rejected": len(hit),
                    "bad": sum(hit),
                    "good_lost": len(hit) - sum(hit),
                    "precision_as_filter": round(sum(hit) / len(hit), 3) if hit else None,
                }
            )
        out["variants"][name] = {"auc": auc(col, bad), "thresholds": table}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
