"""Read every judged candidate of a judged set with the language model, once, and keep what the
trained judge learns from: the scalar features and the hidden-state blocks at several layers
(transnli.generator.judge), with the judgement, its source sentence and its error type.

    .venv/bin/python benchmarks/judge_data.py --set dev [--layers 6] [--device cuda] [--no-cache]

Writes one .npz a layer (default folder: benchmarks/.judge-cache/, ignored by git), SET_L{L}.npz:
keys, sentences (the hypothesis: the group for grouped cross-validation), y (1 = good),
error_type, scalars [n, len(SCALARS)], and per layer L and block B `L{L}_{B}` [n, width]. The
readings go through the model's score cache, so a rerun costs no model time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_quality import DATA, load_judgements  # noqa: E402 - one reader of judged files

SETS = {
    "dev": DATA / "quality_dev.jsonl",
    "test": DATA / "quality_test.jsonl",
    "genres": DATA / "quality_genres.jsonl",
    "genres2": DATA / "quality_genres2.jsonl",
    "genres3": DATA / "quality_genres3.jsonl",
    "genres4": DATA / "quality_genres4.jsonl",
    "genres5": DATA / "quality_genres5.jsonl",
    "genres6": DATA / "quality_genres6.jsonl",
}
CACHE = Path(__file__).resolve().parent / ".judge-cache"


def read_set(
    judgements: Path, layers: tuple[int, ...], settings=None, batch: int = 64
) -> dict[str, np.ndarray]:
    from transnli.common.lm.scorer import CausalLMScorer
    from transnli.common.lm.settings import LMSettings
    from transnli.generator.judge import VECTORS, scalar_features, vector_features

    judged = load_judgements(judgements)
    keys = sorted(judged)
    pairs = [(judged[k]["hypothesis"], judged[k]["modified_hypothesis"]) for k in keys]
    scorer = CausalLMScorer.load(settings or LMSettings())
    scalars, blocks = [], {f"L{x}_{b}": [] for x in layers for b in VECTORS}
    t0 = time.perf_counter()
    for lo in range(0, len(pairs), batch):
        for reading in scorer.read_pairs(pairs[lo : lo + batch], layers):
            scalars.append(scalar_features(reading))
            for x in layers:
                for name, vec in vector_features(reading, x).items():
                    blocks[f"L{x}_{name}"].append(vec.astype(np.float32))
        done = min(lo + batch, len(pairs))
        rate = done / (time.perf_counter() - t0)
        print(f"{done}/{len(pairs)} pairs, {rate:.1f}/s", file=sys.stderr, flush=True)
    scorer.close()
    return {
        "keys": np.array(keys),
        "sentences": np.array([judged[k]["hypothesis"] for k in keys]),
        "y": np.array([int(bool(judged[k]["good"])) for k in keys]),
        "error_type": np.array([judged[k].get("error_type") or "" for k in keys]),
        "scalars": np.array(scalars, dtype=np.float64),
        **{k: np.stack(v) for k, v in blocks.items()},
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=sorted(SETS), required=True)
    ap.add_argument("--layers", default="6", help="Comma-separated layers (the judge reads 6).")
    ap.add_argument("--out", type=Path, default=CACHE, help="Folder for SET_L{layer}.npz files.")
    ap.add_argument("--lm", default=None, help="Language model spec (default: gemma3-270m).")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--no-cache", action="store_true", help="Do not use the LM score cache.")
    args = ap.parse_args(argv)
    from transnli.common.lm.settings import DEFAULT_LM, LMSettings

    settings = LMSettings(
        spec=args.lm or DEFAULT_LM,
        device=args.device,
        batch_size=args.batch_size,
        use_cache=not args.no_cache,
    )
    layers = tuple(int(x) for x in args.layers.split(","))
    data = read_set(SETS[args.set], layers, settings)
    args.out.mkdir(parents=True, exist_ok=True)
    shared = {k: v for k, v in data.items() if not k.startswith("L")}
    for x in layers:  # one file a layer: each stays small
        blocks = {k: v for k, v in data.items() if k.startswith(f"L{x}_")}
        np.savez(args.out / f"{args.set}_L{x}.npz", **shared, **blocks)
    print(
        json.dumps(
            {
                "set": args.set,
                "rows": len(data["y"]),
                "good": int(data["y"].sum()),
                "layers": layers,
                "out": str(args.out),
            }
        )
    )


if __name__ == "__main__":
    main()
