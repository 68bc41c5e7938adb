"""The lm acceptability check's threshold against quality: precision and good triples kept.

    .venv/bin/python benchmarks/bench_lm_threshold.py [--set dev|test] [--preset fast] [--lm SPEC]

For the judged set (benchmarks/data/quality_{dev,test}.jsonl and its sentences), runs the preset
with `--acceptability lm` and no threshold, so every candidate the filters and the grammar check
let through is scored, then reads off, for each threshold t on d = log p(H') - log p(H), what
`--lm-threshold t` would accept: how many, how many judged good, the precision, and the share of
the preset's own good triples (the preset as it is, without the language model) still accepted.
Scores come from the language model's score cache when the sentences were scored before.

Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lm_curve import SETS  # noqa: E402
from bench_quality import key, load_judgements, run_preset  # noqa: E402

THRESHOLDS = (-14, -12, -11, -10, -9.5, -9, -8.5, -8, -7.5, -7, -6, -5, -4, -3, -2)


def ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def threshold_rows(scored: list[tuple[float, bool | None]], baseline_good: int) -> list[dict]:
    rows = []
    for t in THRESHOLDS:
        kept = [good for d, good in scored if d >= t]
        judged = [g for g in kept if g is not None]
        good = sum(judged)
        rows.append(
            {
                "threshold": t,
                "accepted": len(kept),
                "judged": len(judged),
                "good": good,
                "precision": ratio(good, len(judged)),
                "share_of_good_kept": ratio(good, baseline_good),
                "coverage": ratio(len(judged), len(kept)),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", dest="which", choices=sorted(SETS), default="dev")
    ap.add_argument("--preset", default="fast")
    ap.add_argument("--lm", default="gemma3-270m")
    args = ap.parse_args()

    sentences, judgements = SETS[args.which]
    judged = load_judgements(judgements)

    def verdict(rec) -> bool | None:
        j = judged.get(key(rec.hypothesis, rec.modified_hypothesis))
        return None if j is None else bool(j["good"])

    _, _, baseline, _, _ = run_preset(args.preset, {}, sentences)
    baseline_good = sum(verdict(r) is True for r in baseline)
    overrides = {"acceptability": "lm", "lm": args.lm, "lm_threshold": float("-inf")}
    config, _, accepted, _, seconds = run_preset(args.preset, overrides, sentences)
    scored = [(r.checks["acceptability"]["d"], verdict(r)) for r in accepted]
    print(
        json.dumps(
            {
                "benchmark": "lm_threshold",
                "set": args.which,
                "preset": args.preset,
                "lm": config.lm,
                "baseline_accepted": len(baseline),
                "baseline_good": baseline_good,
                "baseline_precision": ratio(
                    baseline_good, sum(verdict(r) is not None for r in baseline)
                ),
                "scored": len(scored),
                "unjudged_scored": sum(g is None for _, g in scored),
                "curve": threshold_rows(scored, baseline_good),
                "seconds": round(seconds, 1),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
