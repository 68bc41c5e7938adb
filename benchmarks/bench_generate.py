"""Generation speed on real English text nobody here wrote: WordNet's example sentences.

    .venv/bin/python benchmarks/bench_generate.py --n 2000 [--preset default]

Prints one JSON object: input sentences/s, triples/s, seconds per stage, peak RSS.
Start-up (loading spaCy, vectors, WordNet, checkers) is reported apart from the timed loop.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def wordnet_examples(n: int) -> list:
    from nltk.corpus import wordnet as wn

    from generator.readers import NLIPair

    pairs = []
    for synset in wn.all_synsets():
        for k, example in enumerate(synset.examples()):
            pairs.append(NLIPair(f"{synset.name()}:{k}", synset.definition(), example, None, "wordnet-examples", "", 0))
            if len(pairs) >= n:
                return pairs
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--preset", default="default")
    ap.add_argument("--batch-size", type=int, default=256)
    args = ap.parse_args()

    from generator.build import build_wordnet_pipeline
    from generator.config import resolve_config

    pairs = wordnet_examples(args.n)
    t0 = time.perf_counter()
    pipeline = build_wordnet_pipeline(resolve_config(args.preset, batch_size=args.batch_size))
    # Warm up lazy loads (WordNet is read on first lookup) outside the timed loop.
    pipeline.process(pairs[:8])
    startup = time.perf_counter() - t0
    pipeline.stats = type(pipeline.stats)()
    pipeline.timer = type(pipeline.timer)()

    t0 = time.perf_counter()
    n_triples = sum(len(b.accepted) for b in pipeline.run(pairs))
    elapsed = time.perf_counter() - t0
    print(json.dumps({
        "benchmark": "generate",
        "preset": args.preset,
        "n_sentences": len(pairs),
        "seconds": round(elapsed, 3),
        "startup_seconds": round(startup, 3),
        "sentences_per_s": round(len(pairs) / elapsed, 2),
        "triples_per_s": round(n_triples / elapsed, 2),
        "triples": n_triples,
        "stage_seconds": {k: round(v, 3) for k, v in pipeline.timer.seconds.items()},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "stats": pipeline.stats.to_dict(),
    }, indent=2))


if __name__ == "__main__":
    main()
