"""What a candidate filter would reject among a preset's output, item by item, with the judgements.

    .venv/bin/python benchmarks/filter_rejections.py relational_adj [nominal_adj ...] [--preset
    default]

bench_quality.py gives a filter's totals (rejected, good_lost, precision_as_filter); this lists the
triples behind them, so a rule can be read against the judged errors while it is designed. It runs
the preset once with a pass-through probe after its own filters, so each named filter sees exactly
the items the preset's filters let through (those the checks then accept or reject, marked
"accepted"/"checks"), and prints one tab-separated line per rejection: filter, G(ood)/B(ad)/?
(unjudged), error type, status, word -> antonym, the filter's reason, the sentence. Lines follow the
pipeline's batches (accepted, then checks-rejected, per batch), so two runs print the same.
Use it on the dev set only (see docs/development.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_quality as bq  # noqa: E402


class _Probe:
    """A filter that keeps every item it is shown, for the named filters to judge afterwards."""

    name = "probe"

    def __init__(self):
        self.items = {}

    def judge_many(self, items):
        from transnli.generator.filters import PASS

        for it in items:
            self.items[(it.sentence.text, it.modified)] = it
        return [PASS] * len(items)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "filters", nargs="+", help="Filter names (transnli.generator.filters.filter_names())."
    )
    ap.add_argument("--preset", default="default")
    ap.add_argument("--sentences", type=Path, default=bq.SENTENCES)
    ap.add_argument("--judgements", type=Path, default=bq.JUDGEMENTS)
    args = ap.parse_args(argv)

    from transnli.generator.build import build_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.filters import build_filters
    from transnli.generator.readers import read_pairs

    candidates = build_filters(args.filters)
    pipeline = build_pipeline(resolve_config(args.preset))
    probe = _Probe()
    pipeline.filters.append(probe)
    records = []
    for batch in pipeline.run(read_pairs(str(args.sentences))):
        records += [(r, "accepted") for r in batch.accepted]
        records += [
            (r, "checks")
            for r in batch.rejected
            if r.rejected_by not in {f.name for f in pipeline.filters}
        ]
    judged = bq.load_judgements(args.judgements)
    totals = {f.name: [0, 0] for f in candidates}
    for rec, status in records:
        item = probe.items.get((rec.hypothesis, rec.modified_hypothesis))
        if item is None:
            continue
        j = judged.get(bq.key(rec.hypothesis, rec.modified_hypothesis))
        mark = "?" if j is None else ("G" if j["good"] else "B")
        for flt in candidates:
            verdict = flt.judge_many([item])[0]
            if verdict.passed:
                continue
            totals[flt.name][0] += 1
            totals[flt.name][1] += mark == "G"
            err = (j or {}).get("error_type") or "-"
            print(
                "\t".join(
                    [
                        flt.name,
                        mark,
                        err,
                        status,
                        f"{rec.word} -> {rec.antonym}",
                        verdict.reason,
                        rec.hypothesis,
                    ]
                )
            )
    for name, (n, good) in totals.items():
        print(f"# {name}: rejects {n}, of which judged good {good}", file=sys.stderr)


if __name__ == "__main__":
    main()
