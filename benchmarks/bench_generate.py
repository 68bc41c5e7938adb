"""Generation speed and memory on real English text nobody here wrote: WordNet's example sentences.

    .venv/bin/python benchmarks/bench_generate.py [--n 5000] [--preset default] [--workers N]
    .venv/bin/python benchmarks/bench_generate.py --repeat 3  # fresh process per run, medians
    .venv/bin/python benchmarks/bench_generate.py --memory-check  # peak RSS at 1k vs 20k sentences
    .venv/bin/python benchmarks/bench_generate.py --n 500 --set acceptability=lm  # LM on

The examples (about 48k; the synset's definition as premise, the example as hypothesis) are
written once to a JSONL file in the transnli cache; the timed loop then does what `transnli
generate` does: reads that file through transnli's reader (streaming), runs the pipeline's
batches (in this process, or on N worker processes with --workers N) and writes every batch
through the resumable RunWriter into a temporary folder.

Prints one JSON object. Keys: sentences_per_s (input sentences per second of the timed loop),
triples_per_s, seconds, stage_seconds (seconds per stage: tagging, antonyms, ranking, realising,
grammar, acceptability, plus writing in the parent; with several workers the pipeline stages are
summed over the workers), peak_rss_mb (this process, up to the end of the timed loop; with workers
also peak_rss_workers_mb, the largest worker), startup_seconds (loading resources and starting
workers, outside the timed loop), load_avg (the machine's 1-minute load average before and after:
other work on a shared machine slows the figures down). With the lm acceptability check (--set
acceptability=lm) the model scores every candidate afresh (its score cache is left out, so a rerun
measures the model, not the cache), and `lm` reports the check's own rate (sentences_per_s: H and H'
each count) beside the bare model's: a plain full forward pass over the same sentences, batched the
same way without the check's savings (bare_forward_sentences_per_s), and their ratio. That reference
computes the full logits (batch x tokens x 262k words for Gemma) and reads the whole output layer
into memory, which generation never does: it comes after the timed loop, and its peak is reported
apart (lm.peak_rss_with_reference_mb). A pair judge that is not stacked (the default preset's;
another with --set judge_model=FOLDER) gets the same reference: the bare forward pass of its base
model, adapter switched off, in the scorer's batches. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def examples_file() -> Path:
    """All WordNet example sentences as generic JSONL, in synset order (written once)."""
    from nltk.corpus import wordnet as wn
    from transnli.resources.provision import cache_dir

    path = cache_dir() / "bench" / f"wordnet-{wn.get_version()}" / "wordnet-examples.jsonl"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as fh:
        for synset in wn.all_synsets():
            for k, example in enumerate(synset.examples()):
                record = {
                    "id": f"{synset.name()}:{k}",
                    "premise": synset.definition(),
                    "hypothesis": example,
                }
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path


def load_avg() -> float:
    return round(os.getloadavg()[0], 2)


def one_run(args) -> dict:
    from transnli.generator.build import build_wordnet_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.output import RunWriter
    from transnli.generator.parallel import ParallelRunner, run_batches, warm_up
    from transnli.generator.readers import read_pairs

    source = examples_file()
    load_before = load_avg()
    t0 = time.perf_counter()
    config = resolve_config(args.preset, batch_size=args.batch_size, **overrides(args))
    pipeline = build_wordnet_pipeline(config)
    lm_pairs = uncached_lm(pipeline)
    warm_up(pipeline)
    if lm_pairs is not None:
        lm_pairs.clear()  # the warm-up's sentences are not the benchmark's
    runner = None
    if args.workers > 1:
        runner = ParallelRunner(config, args.workers, stats=pipeline.stats, timer=pipeline.timer)
        runner.wait_ready()
    startup = time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
        writer = RunWriter(tmp, "bench")
        writer.open()
        n_triples = n_sentences = 0
        writing = 0.0
        t0 = time.perf_counter()
        pairs = itertools.islice(read_pairs(source), args.n)
        for batch in run_batches(pipeline, pairs, args.workers, runner=runner):
            tw = time.perf_counter()
            writer.write_batch(
                batch.accepted, batch.rejected, batch.n_pairs, pipeline.stats.checkpoint_dict()
            )
            writing += time.perf_counter() - tw
            n_triples += len(batch.accepted)
            n_sentences += batch.n_pairs
        elapsed = time.perf_counter() - t0
        writer.finish(pipeline.stats.to_dict())
    if runner is not None:
        runner.close()
    stages = {k: round(v, 3) for k, v in pipeline.timer.seconds.items()}
    stages["writing"] = round(writing, 3)
    peak = peak_rss_mb()  # the run's own: before the bare-forward reference below
    out = {
        "benchmark": "generate",
        "preset": args.preset,
        "workers": args.workers,
        "batch_size": args.batch_size,
        "n_sentences": n_sentences,
        "seconds": round(elapsed, 3),
        "startup_seconds": round(startup, 3),
        "sentences_per_s": round(n_sentences / elapsed, 2),
        "triples_per_s": round(n_triples / elapsed, 2),
        "triples": n_triples,
        "stage_seconds": stages,
        "peak_rss_mb": peak,
        "load_avg": [load_before, load_avg()],
        "cpus": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "stats": pipeline.stats.to_dict(),
    }
    if lm_pairs is not None:
        out["lm"] = lm_rates(pipeline, lm_pairs, stages.get("acceptability", 0.0))
        out["lm"]["peak_rss_with_reference_mb"] = peak_rss_mb()
    if args.workers > 1:
        out["peak_rss_workers_mb"] = round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
        )
    return out


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def overrides(args) -> dict:
    from bench_quality import parse_value

    return {k.strip(): parse_value(v.strip()) for k, _, v in (s.partition("=") for s in args.set)}


LM_BACKENDS = ("lm", "judge")  # the acceptability checks that read the language model


def lm_check(pipeline):
    """The check that reads the language model (lm, judge, or a stacked pair judge's linear
    judge), or None."""
    check = next((c for c in pipeline.checks if c.backend in LM_BACKENDS), None)
    if check is None:
        stacks = (getattr(c, "linear", None) for c in pipeline.checks)
        check = next((c for c in stacks if c is not None), None)
    return check


def lone_pair_check(pipeline):
    """A pair-judge check that is not stacked (its judge reads the language model through its own
    adapter, with no scorer), or None."""
    check = next((c for c in pipeline.checks if c.backend == "pair-judge"), None)
    return check if check is not None and check.linear is None else None


def uncached_lm(pipeline) -> list | None:
    """With a check that reads the language model: take its score cache away and record the
    pairs it scores (a lone pair judge keeps no cache across runs: only the pairs)."""
    from transnli.common.lm.scorer import CausalLMScorer

    check = lm_check(pipeline)
    if check is None:
        lone = lone_pair_check(pipeline)
        if lone is None:
            return None
        judge = lone.judge
        seen_pairs: list = []
        probabilities = judge.probabilities

        def probabilities_recording(pairs):
            seen_pairs.extend(pairs)
            return probabilities(pairs)

        judge.probabilities = probabilities_recording
        return seen_pairs
    old = check.scorer
    check.scorer = CausalLMScorer(old.model, old.tokenizer, old.identity, old.settings, cache=None)
    seen: list = []
    compare, read = check.scorer.compare_many, check.scorer.read_pairs

    def compare_recording(pairs):
        seen.extend(pairs)
        return compare(pairs)

    def read_recording(pairs, layers):
        seen.extend(pairs)
        return read(pairs, layers)

    check.scorer.compare_many = compare_recording
    check.scorer.read_pairs = read_recording
    return seen


def lm_rates(pipeline, pairs: list, check_seconds: float) -> dict:
    """The check's rate, and a bare full forward pass over the same sentences (no cache, every
    position's logits, equal-length batches of the check's batch size)."""
    import contextlib

    import torch

    check = lm_check(pipeline)
    if check is not None:
        scorer = check.scorer
        model, encode, size, identity = (
            scorer.model,
            scorer.encode,
            scorer.settings.batch_size,
            scorer.identity,
        )
        bare_model = contextlib.nullcontext
    else:  # a lone pair judge: the same bare forward of its base model, adapter switched off,
        # in the batches a scorer would use, so the reference is the default preset's
        from transnli.common.lm.settings import LMSettings

        lone = lone_pair_check(pipeline)
        judge = lone.judge
        model, size, identity = judge.model.model, LMSettings().batch_size, lone.identity

        def encode(text):
            return judge.model.tokenizer(text)["input_ids"]

        bare_model = model.disable_adapter
    sentences = [s for pair in pairs for s in pair]
    by_length: dict[int, list] = {}
    for ids in map(encode, sentences):
        by_length.setdefault(len(ids), []).append(ids)
    t0 = time.perf_counter()
    with torch.inference_mode(), bare_model():
        for group in by_length.values():
            for k in range(0, len(group), size):
                ids = torch.tensor(group[k : k + size], device=model.device)
                model(input_ids=ids).logits.log_softmax(-1)
    bare = time.perf_counter() - t0
    check_rate = len(sentences) / check_seconds if check_seconds else None
    bare_rate = len(sentences) / bare if bare else None
    return {
        "model": identity,
        "pairs_scored": len(pairs),
        "check_seconds": round(check_seconds, 3),
        "sentences_per_s": round(check_rate, 2) if check_rate else None,
        "bare_forward_seconds": round(bare, 3),
        "bare_forward_sentences_per_s": round(bare_rate, 2) if bare_rate else None,
        "check_over_bare": round(check_rate / bare_rate, 3) if check_rate and bare_rate else None,
        "torch_threads": torch.get_num_threads(),
    }


def fresh_run(args, n: int) -> dict:
    """One run in a new Python process (nothing cached in memory from an earlier run)."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--n",
        str(n),
        "--preset",
        args.preset,
        "--batch-size",
        str(args.batch_size),
        "--workers",
        str(args.workers),
        *(f"--set={item}" for item in args.set),
    ]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def median_of(runs: list[dict]) -> dict:
    med = {
        k: round(statistics.median(r[k] for r in runs), 3)
        for k in ("sentences_per_s", "triples_per_s", "seconds", "startup_seconds", "peak_rss_mb")
    }
    med["stage_seconds"] = {
        k: round(statistics.median(r["stage_seconds"][k] for r in runs), 3)
        for k in runs[0]["stage_seconds"]
    }
    return med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--n", type=int, default=5000, help="input sentences (default 5000; about 48k exist)"
    )
    ap.add_argument("--preset", default="default")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A configuration override, e.g. acceptability=lm, lm_threshold=-8.",
    )
    ap.add_argument(
        "--workers", type=int, default=1, help="worker processes (as transnli generate --workers)"
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs, each in a fresh process; prints every run and the medians",
    )
    ap.add_argument(
        "--memory-check",
        action="store_true",
        help="peak RSS of fresh runs at each of --sizes; flat means within 10%%",
    )
    ap.add_argument("--sizes", default="1000,20000", help="input sizes for --memory-check")
    args = ap.parse_args()

    if args.memory_check:
        sizes = [int(s) for s in args.sizes.split(",")]
        runs = {n: fresh_run(args, n) for n in sizes}
        key = "peak_rss_workers_mb" if args.workers > 1 else "peak_rss_mb"
        first, last = runs[sizes[0]][key], runs[sizes[-1]][key]
        result = {
            "benchmark": "generate-memory",
            "preset": args.preset,
            "workers": args.workers,
            "peak_rss_mb": {str(n): r["peak_rss_mb"] for n, r in runs.items()},
            **(
                {"peak_rss_workers_mb": {str(n): r["peak_rss_workers_mb"] for n, r in runs.items()}}
                if args.workers > 1
                else {}
            ),
            "growth": round(last / first - 1, 4),
            "flat_within_10_percent": last <= first * 1.10,
            "sentences_per_s": {str(n): r["sentences_per_s"] for n, r in runs.items()},
            "load_avg": {str(n): r["load_avg"] for n, r in runs.items()},
        }
    elif args.repeat > 1:
        runs = [fresh_run(args, args.n) for _ in range(args.repeat)]
        result = {
            "benchmark": "generate",
            "preset": args.preset,
            "workers": args.workers,
            "n_sentences": args.n,
            "repeat": args.repeat,
            "statistic": "median of the runs",
            **median_of(runs),
            "runs": [
                {
                    k: r[k]
                    for k in (
                        "sentences_per_s",
                        "triples_per_s",
                        "seconds",
                        "startup_seconds",
                        "stage_seconds",
                        "peak_rss_mb",
                        "load_avg",
                    )
                }
                for r in runs
            ],
        }
    else:
        result = one_run(args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
