"""Does a pair judge folder give each pair the same probability however a run batches it? Reads
the first --n judged candidates of a set with the folder at several batch sizes, and once more
split over two calls (as two workers' shards would be), against the judge's usual batch of 16.

    .venv/bin/python benchmarks/pair_judge_batches.py \
        --folder resources/models/pair_judge_gemma3_270m --set test --n 200

The shipped judge gives the same probabilities to the last digit; a judge read under bfloat16
would not (docs/quality-model.md, "A larger base"). Prints one JSON object. Not a test: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from train_pair_judge import judged_rows  # noqa: E402 - the judged sets

USUAL = 16  # PairJudge.batch_size


def differences(a: list[float], b: list[float]) -> dict:
    gaps = [abs(x - y) for x, y in zip(a, b, strict=True)]
    return {"differ": sum(g > 0 for g in gaps), "max_abs_difference": round(max(gaps), 6)}


def main(argv=None) -> None:
    from transnli.common.lm.conversion import resolve_model_folder
    from transnli.common.lm.settings import LMSettings
    from transnli.generator.pair_judge import load_pair_judge, read_pair_judge_meta

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a pair judge folder")
    ap.add_argument("--lm", default=None, help="its base model (default: the one it records)")
    ap.add_argument("--set", default="test", help="a judged set or genre")
    ap.add_argument("--n", type=int, default=200, help="candidates read")
    ap.add_argument("--batch-sizes", default="1,7,64", help="read against the usual 16")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = [r for r in judged_rows() if args.set in (r["set"], r["genre"])][: args.n]
    if not rows:
        sys.exit(f"--set {args.set}: no judged candidate of that set or genre")
    meta = read_pair_judge_meta(args.folder)
    lm_folder, _ = resolve_model_folder(LMSettings(spec=args.lm or meta["language_model"]))
    judge = load_pair_judge(args.folder, lm_folder)
    pairs = [(r["hypothesis"], r["modified"]) for r in rows]

    def read(batch_size: int, part: list[tuple[str, str]]) -> list[float]:
        judge.batch_size = batch_size
        judge.seen.clear()  # as a fresh process would read it
        return judge.probabilities(part)

    usual = read(USUAL, pairs)
    result = {
        "benchmark": "pair_judge_batches",
        "folder": str(args.folder),
        "set": args.set,
        "pairs": len(pairs),
        "against_batch_size": USUAL,
        "batch_sizes": {
            size: differences(read(size, pairs), usual)
            for size in (int(x) for x in args.batch_sizes.split(","))
        },
    }
    halves = read(USUAL, pairs[::2]) + read(USUAL, pairs[1::2])
    result["split_over_two_calls"] = differences(halves, usual[::2] + usual[1::2])
    print_result(result, args.out)


if __name__ == "__main__":
    main()
