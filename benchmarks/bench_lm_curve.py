"""How well the language model's score separates good from bad candidates, on a judged set.

    .venv/bin/python benchmarks/bench_lm_curve.py [--set dev|test] [--lm SPEC] [--preset default]

For the judged set (benchmarks/data/quality_{dev,test}.jsonl and its sentences):
1. scores every judged candidate with d = log p(H') - log p(H) (transnli.common.lm, from the
   first differing token) and reports the AUC of d for good against bad, over all judged
   candidates;
2. runs the preset on the set's sentences and scores what it accepts: the AUC among those, and
   the curve of precision against the share of the preset's good triples kept, for thresholds on
   d (a triple is kept when d >= threshold).

Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import DATA, key, load_judgements, run_preset  # noqa: E402

SETS = {
    "dev": (DATA / "quality_dev_sentences.jsonl", DATA / "quality_dev.jsonl"),
    "test": (DATA / "quality_test_sentences.jsonl", DATA / "quality_test.jsonl"),
}
THRESHOLDS = (-16, -14, -12, -10, -9, -8, -7, -6.4, -6, -5, -4, -3, -2, -1, 0)


def auc(scores_good: list[float], scores_bad: list[float]) -> float | None:
    """Probability that a good candidate scores above a bad one (ties count half)."""
    from scipy.stats import mannwhitneyu

    if not scores_good or not scores_bad:
        return None
    u = mannwhitneyu(scores_good, scores_bad, alternative="two-sided").statistic
    return round(float(u) / (len(scores_good) * len(scores_bad)), 4)


def curve(rows: list[tuple[float, bool]], baseline_good: int) -> list[dict]:
    out = []
    for t in THRESHOLDS:
        kept = [good for d, good in rows if d >= t]
        good = sum(kept)
        out.append(
            {
                "threshold": t,
                "kept": len(kept),
                "good_kept": good,
                "precision": round(good / len(kept), 4) if kept else None,
                "share_of_good_kept": round(good / baseline_good, 4) if baseline_good else None,
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", dest="which", choices=sorted(SETS), default="dev")
    ap.add_argument("--lm", default="gemma3-270m")
    ap.add_argument("--preset", default="default")
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()

    from transnli.common.lm.scorer import CausalLMScorer
    from transnli.common.lm.settings import LMSettings

    sentences, judgements = SETS[args.which]
    judged = load_judgements(judgements)
    lm = CausalLMScorer.load(LMSettings(spec=args.lm, batch_size=args.batch_size))

    items = list(judged.values())
    t0 = time.perf_counter()
    scores = lm.compare_many([(j["hypothesis"], j["modified_hypothesis"]) for j in items])
    seconds = time.perf_counter() - t0
    d_of = {
        key(j["hypothesis"], j["modified_hypothesis"]): s.delta
        for j, s in zip(items, scores, strict=True)
    }
    all_good = [d_of[k] for k, j in judged.items() if j["good"]]
    all_bad = [d_of[k] for k, j in judged.items() if not j["good"]]

    _, _, accepted, _, _ = run_preset(args.preset, {}, sentences)
    rows = []
    unjudged = 0
    for r in accepted:
        k = key(r.hypothesis, r.modified_hypothesis)
        if k not in judged:
            unjudged += 1
            continue
        rows.append((d_of[k], bool(judged[k]["good"])))
    good = [d for d, g in rows if g]
    bad = [d for d, g in rows if not g]
    result = {
        "benchmark": "lm_curve",
        "set": args.which,
        "lm": lm.identity,
        "judged_candidates": len(items),
        "auc_all_judged": auc(all_good, all_bad),
        "preset": args.preset,
        "preset_accepted": len(accepted),
        "preset_accepted_unjudged": unjudged,
        "preset_precision": round(len(good) / len(rows), 4) if rows else None,
        "preset_good": len(good),
        "auc_among_accepted": auc(good, bad),
        "curve": curve(rows, len(good)),
        "pairs_scored": len(items),
        "pairs_per_s": round(len(items) / seconds, 2) if seconds else None,
        "sentences_computed": lm.computed,
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
