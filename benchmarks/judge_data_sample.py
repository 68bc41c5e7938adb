"""judge_data.py on a seeded random sample of a judged set's gate candidates (what the filters and
grammar check pass, train_judge.population_keys), for a machine where the language model is too
slow to read the whole set (on 2 shared CPU cores: about 0.2 pairs/s).

    .venv/bin/python benchmarks/judge_data_sample.py --set test --size 320 --part a
    .venv/bin/python benchmarks/judge_data_sample.py --set test --size 320 --part b   # disjoint

Part a: `size` candidates drawn with numpy's default_rng(0) from the sorted keys; part b: `size`
more, drawn with default_rng(1) from those part a left; parts c and d: what a and b left,
alternately (a + b + c + d: the whole set). The parts can be read at once by separate processes
and merged. Writes SET-sample-PART_L6.npz beside judge_data.py's files, with the same keys;
bench_precision_estimate.py --shipped-on test-sample-a,test-sample-b reads them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import load_judgements  # noqa: E402
from judge_data import CACHE, SETS, read_set  # noqa: E402
from train_judge import population_keys  # noqa: E402


def sample_keys(name: str, size: int, part: str) -> list[str]:
    gate = population_keys(name)["gate"]
    keys = sorted(k for k in load_judgements(SETS[name]) if k in gate)
    first = np.random.default_rng(0).choice(len(keys), size=min(size, len(keys)), replace=False)
    if part == "a":
        return [keys[i] for i in sorted(first)]
    taken = set(first.tolist())
    rest = [i for i in range(len(keys)) if i not in taken]
    second = np.random.default_rng(1).choice(rest, size=min(size, len(rest)), replace=False)
    if part == "b":
        return [keys[i] for i in sorted(second)]
    taken |= set(second.tolist())
    left = [i for i in range(len(keys)) if i not in taken]  # c and d: the rest, in two halves
    return [keys[i] for i in (left[0::2] if part == "c" else left[1::2])]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=sorted(SETS), required=True)
    ap.add_argument("--size", type=int, default=320)
    ap.add_argument("--part", choices=("a", "b", "c", "d"), default="a")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    from transnli.common.lm.settings import DEFAULT_LM, LMSettings

    judged = load_judgements(SETS[args.set])
    keys = sample_keys(args.set, args.size, args.part)
    with tempfile.TemporaryDirectory() as tmp:
        subset = Path(tmp) / "sample.jsonl"
        subset.write_text("".join(json.dumps(judged[k]) + "\n" for k in keys), encoding="utf-8")
        settings = LMSettings(spec=DEFAULT_LM, device=args.device, batch_size=16)
        data = read_set(subset, (6,), settings)
    out = CACHE / f"{args.set}-sample-{args.part}_L6.npz"
    np.savez(out, **data)
    print(json.dumps({"set": args.set, "part": args.part, "rows": len(keys), "out": str(out)}))


if __name__ == "__main__":
    main()
