"""The pair judge on a lent GPU machine, in one prepared run: rebuild the language model from the
pack (gpu_pack.py), read the shipped judge there to check that the GPU gives the CPU's scores, and
train pair judges on the GPU, as many of a queue of variants as fit the time given.

    python3 benchmarks/gpu_pair_judge.py probe --config CONFIG.json --out PROBE.json
    python3 benchmarks/gpu_pair_judge.py run --pack PACK --probe PROBE.json --out DIR --seconds 420

`probe` times fine-tuning steps of the pair judge's shape (a randomly initialised model of the
config, LoRA on every projection, batch 8 of 56 tokens) with one process and with several at
once, so that `run` knows how many trainings to start side by side. `run` writes, under DIR:
agree.json (the shipped judge's p on the GPU against the CPU's saved p, candidate by candidate),
and for each training variant that finished its train_pair_judge.py result and scores. A variant
is started only while its estimated time still fits `--seconds`; one still running at the end is
killed and reported as such. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "resources" / "models" / "pair_judge_gemma3_270m"
#: the CPU's p of the shipped judge on the genres it never saw (saved when trained and read)
CPU_SCORES = (
    HERE / "data" / "pair_judge_compact_all_sets_read_test_scores.jsonl",
    HERE / "data" / "pair_judge_compact_all_sets_read_genres5_genres6_scores.jsonl",
)
#: the shipped judge's recipe (its pair_judge.json 'training'), read on the genres it left out
RECIPE = ["--leave-out", "test,genres5,genres6", "--score", "gate", "--template", "compact"]
#: (name, extra arguments, epochs, whether to write the judge folder) in the order they are
#: started; an entry's own --leave-out replaces the recipe's. The first run (2026-11-29) trained
#: the recipe with seeds 0-2, rank 16, lr 1e-4 and half the data (seed 1); the second the folds of
#: genre set 3 and of dev with genre set 1, the recipe on every set but test (which ships since),
#: the question template and a fourth seed (docs/quality-model.md, "A second lent GPU"). Next: the
#: judge that ships, trained with other seeds and settings on the same sets, each read on the 15
#: genres no training set holds (test, genre sets 5 and 6), its folder written for a seed.
LEFT_OUT = RECIPE[:2]
VARIANTS = (
    ("all_sets_seed2", ["--epochs", "1", *LEFT_OUT, "--seed", "2"], 1, True),
    ("all_sets_seed3", ["--epochs", "1", *LEFT_OUT, "--seed", "3"], 1, True),
    ("all_sets_question", ["--epochs", "1", *LEFT_OUT, "--template", "question"], 1, False),
    ("all_sets_lr1e-4", ["--epochs", "1", *LEFT_OUT, "--learning-rate", "1e-4"], 1, False),
    ("all_sets_rank16", ["--epochs", "1", *LEFT_OUT, "--lora-rank", "16"], 1, False),
    ("all_sets_epochs2", ["--epochs", "2", *LEFT_OUT], 2, False),
)
#: batches of 8 in an epoch on every judged set but test (17,581 rows: 2,198; the recipe without
#: genre set 4, 12,691: 1,587)
STEPS_PER_EPOCH = 2200
OVERHEAD_SECONDS = 75  # loading, calibration and reading the left-out genres


def probe_steps(config_path: Path, steps: int) -> float:
    """Milliseconds a fine-tuning step of the pair judge's shape takes on this process's GPU (the
    CPU where there is none)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM
    from transnli.generator.pair_judge import PROJECTIONS

    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = AutoConfig.from_pretrained(config_path.parent)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).to(device)
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=list(PROJECTIONS)))
    head = torch.nn.Linear(config.hidden_size, 1).to(device)
    params = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
    optimiser = torch.optim.AdamW(params, lr=2e-4)
    ids = torch.randint(3, 20000, (8, 56), device=device)
    mask = torch.ones_like(ids)
    target = torch.ones(8, device=device)
    body = model.get_base_model().model
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        hidden = body(input_ids=ids, attention_mask=mask).last_hidden_state
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            head(hidden[:, -1]).squeeze(-1), target
        )
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        loss.item()
        if i >= 5:  # the first steps build kernels and caches
            times.append(time.perf_counter() - t0)
    return 1000 * sorted(times)[len(times) // 2]


def probe(config_path: Path, out: Path, together: int, steps: int) -> dict:
    import torch

    single = probe_steps(config_path, steps)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "probe-one",
                "--config",
                str(config_path),
                "--steps",
                str(steps),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(together)
    ]
    shared = [float(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    result = {
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "torch": torch.__version__,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "ms_per_step_alone": round(single, 1),
        "together": together,
        "ms_per_step_together": round(sorted(shared)[len(shared) // 2], 1),
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return result


def compare_with_cpu(gpu_scores: Path) -> dict:
    """The GPU's p against the CPU's saved p, on the candidates both scored."""
    from train_pair_judge import read_score_files, read_scores

    cpu = read_score_files(CPU_SCORES)
    gpu = read_scores(gpu_scores)
    both = sorted(set(cpu) & set(gpu))
    diffs = [abs(cpu[k] - gpu[k]) for k in both]
    return {
        "candidates": len(both),
        "identical": sum(d == 0 for d in diffs),
        "max_abs_difference": max(diffs) if diffs else None,
        "decisions_differing_at_0.5": sum((cpu[k] >= 0.5) != (gpu[k] >= 0.5) for k in both),
        # beyond a rounding tie of the 4-digit raw score: the candidates to look into
        "differing": [
            {"key": k, "cpu_p": cpu[k], "gpu_p": gpu[k]}
            for k in both
            if abs(cpu[k] - gpu[k]) > 0.001
        ],
    }


def train_queue(args, lm: Path, probe_result: dict, deadline: float) -> tuple[int, dict]:
    """Train VARIANTS side by side (as many at once as the probe says fit), each started only
    while its estimate fits before `deadline`; those still running then are killed. Returns the
    number of workers and each variant's fate."""
    py = [sys.executable, "-u"]
    together = int(probe_result.get("together", 1))
    ms = float(probe_result.get("ms_per_step_together", 150.0))
    workers = together if ms * STEPS_PER_EPOCH / 1000 + OVERHEAD_SECONDS < 0.8 * args.seconds else 2
    running: dict[str, tuple[subprocess.Popen, float]] = {}
    status: dict[str, str] = {}
    queue = list(VARIANTS[: args.variants])
    env = {**os.environ, "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false"}
    while queue or running:
        for name, (proc, started) in list(running.items()):
            if proc.poll() is not None:
                status[name] = f"rc {proc.returncode} in {time.monotonic() - started:.0f} s"
                del running[name]
        while queue and len(running) < workers:
            name, extra, epochs, write = queue.pop(0)
            estimate = ms * STEPS_PER_EPOCH * epochs / 1000 + OVERHEAD_SECONDS
            if time.monotonic() + estimate > deadline:
                status[name] = f"not started: about {estimate:.0f} s would pass the deadline"
                continue
            cmd = [
                *py,
                str(HERE / "train_pair_judge.py"),
                *RECIPE,
                *extra,
                "--lm",
                str(lm),
                "--device",
                args.device,
                "--out",
                str(args.out / f"{name}.json"),
                "--scores",
                str(args.out / f"{name}_scores.jsonl"),
                "--calibration-scores",
                str(args.out / f"{name}_cal_scores.jsonl"),
            ]
            if args.limit:
                cmd += ["--limit", str(args.limit)]
            if write:
                cmd += ["--write", str(args.out / f"{name}_judge")]
            with open(args.out / f"{name}.log", "w", encoding="utf-8") as fh:
                running[name] = (
                    subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env),
                    time.monotonic(),
                )
        if time.monotonic() > deadline:
            for name, (proc, started) in running.items():
                proc.kill()
                status[name] = f"killed at the deadline after {time.monotonic() - started:.0f} s"
            break
        time.sleep(2)
    return workers, status


def run(args) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    deadline = t_start + args.seconds
    lm = args.lm_folder
    py = [sys.executable, "-u"]

    def step(name, cmd):
        t0 = time.monotonic()
        with open(args.out / "run.log", "a", encoding="utf-8") as log:
            done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
            log.write(f"## {name}: rc {done.returncode} in {time.monotonic() - t0:.1f} s\n")
        if done.returncode:
            raise SystemExit(f"{name} failed (rc {done.returncode}); see run.log")

    step("unpack", [*py, str(HERE / "gpu_pack.py"), "unpack", str(args.pack), str(lm)])
    step("check", [*py, str(HERE / "gpu_pack.py"), "check", str(lm)])
    read = [*py, str(HERE / "read_pair_judge.py"), "--folder", str(SHIPPED), "--score", "gate"]
    gpu_scores = args.out / "agree_gpu_scores.jsonl"
    step(
        "read shipped judge on the GPU",
        [
            *read,
            "--genres",
            args.agree_genres,
            "--lm",
            str(lm),
            "--device",
            args.device,
            "--scores",
            str(gpu_scores),
            "--out",
            str(args.out / "agree_gpu.json"),
        ],
    )
    agree = compare_with_cpu(gpu_scores)
    (args.out / "agree.json").write_text(json.dumps(agree, indent=1) + "\n")

    probe_result = json.loads(args.probe.read_text()) if args.probe.is_file() else {}
    workers, status = train_queue(args, lm, probe_result, deadline)
    summary = {
        "probe": probe_result,
        "workers": workers,
        "agree": agree,
        "variants": status,
        "seconds": round(time.monotonic() - t_start, 1),
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


def main(argv=None) -> None:
    sys.path.insert(0, str(HERE.parent))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--together", type=int, default=6)
    p.add_argument("--steps", type=int, default=40)
    one = sub.add_parser("probe-one")
    one.add_argument("--config", type=Path, required=True)
    one.add_argument("--steps", type=int, default=40)
    r = sub.add_parser("run")
    r.add_argument("--pack", type=Path, required=True)
    r.add_argument("--probe", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--seconds", type=float, default=420)
    r.add_argument("--device", default="cuda")
    r.add_argument("--agree-genres", default="test,genres5,genres6")
    r.add_argument("--limit", type=int, default=None, help="train on N rows (a dry run)")
    r.add_argument("--variants", type=int, default=len(VARIANTS), help="the first N variants")
    r.add_argument("--lm-folder", type=Path, default=Path("/tmp/gemma"))
    args = ap.parse_args(argv)
    if args.command == "probe":
        probe(args.config, args.out, args.together, args.steps)
    elif args.command == "probe-one":
        print(probe_steps(args.config, args.steps))
    else:
        run(args)


if __name__ == "__main__":
    main()
