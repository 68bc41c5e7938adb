"""Train the pair judge (transnli.generator.pair_judge) on the judged sets and measure it on a genre
it never saw: a LoRA adapter and a head fine-tuned on prompts that show H and H' together.

    .venv/bin/python benchmarks/train_pair_judge.py --leave-out news           # one genre held out
    .venv/bin/python benchmarks/train_pair_judge.py --leave-out test            # the test set
    .venv/bin/python benchmarks/train_pair_judge.py --leave-out test --write FOLDER   # ship it
    .venv/bin/python benchmarks/train_pair_judge.py --lm PATH --device cuda --leave-out test
    .venv/bin/python benchmarks/train_pair_judge.py --leave-out genres2,test --score gate
    .venv/bin/python benchmarks/train_pair_judge.py --leave-out genres2,test --score gate \
        --fraction 0.25      # a learning curve: a quarter of the fine-tuning sentences
    .venv/bin/python benchmarks/train_pair_judge.py --leave-out test --template compact
                             # the pair in a third fewer tokens (pair_judge.TEMPLATES)
    .venv/bin/python benchmarks/train_pair_judge.py --leave-out test --template senses
                             # and WordNet's senses of the swap (measured: no better)
    .venv/bin/python benchmarks/train_pair_judge.py --lm MODEL.gguf --autocast bfloat16 ...
                             # a larger base: forward passes in bfloat16, 1.6-2 times as fast

Training rows: every judged candidate of the training sets (dev: WordNet examples; genres: news,
reviews, dialogue, instructions; genres2, genres3 and genres4, seven genres each), except those of
the genre left out. A share of the training sentences (`--calibration-share`, grouped by source
sentence, so no sentence is on both sides) is held out of the fine-tuning and calibrates the head's
score (Platt scaling). The left-out genre is scored once, at the end: AUC over all its judged
candidates, and on the population the judge decides in the default preset (what the filters and
grammar pass), the precision at 80% and 65% of the fast preset's good triples kept, the precision
at the threshold and the expected calibration error. `test` is never a training set: `--leave-out
test` trains on all the others. `--leave-out` takes several names, genres or whole sets (`genres2`
is its seven genres): one training run then reads every one of them, each reported on its own;
`--score gate` scores only the left-out candidates the judge decides on in the default preset (AUC
over all of them is then not reported), which saves most of the reading time on a large set.

A fine-tuning of hours survives an interruption: with `--write FOLDER` its state is saved to
FOLDER.checkpoint every `--checkpoint-every` steps (or to `--checkpoint FILE`), and the same
command run again resumes there, giving the judge an uninterrupted run would have given.

Prints one JSON object (and writes it with --out). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import load_judgements  # noqa: E402
from gpu_pack import source_identity  # noqa: E402 - a folder rebuilt on a lent GPU
from judge_data import SETS as JUDGED_FILES  # noqa: E402
from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from train_judge import (  # noqa: E402 - one definition of the figures the judges are read by
    at_threshold,
    auc,
    population_keys,
    precision_at_kept,
    reliability,
)

TRAINING_SETS = ("dev", "genres", "genres2", "genres3", "genres4")
# the judged files are judge_data's: the training sets first, then the others (test, ...)
SETS = {
    name: JUDGED_FILES[name]
    for name in (*TRAINING_SETS, *sorted(set(JUDGED_FILES) - set(TRAINING_SETS)))
}


def judged_rows() -> list[dict]:
    """Every judged candidate: key, H, H', good, its genre, its set."""
    rows = []
    for name, path in SETS.items():
        if not path.is_file():
            continue
        for k, j in sorted(load_judgements(path).items()):
            genre = {"dev": "wordnet", "test": "test"}.get(name) or j.get("genre") or name
            rows.append(
                {
                    "key": k,
                    "set": name,
                    "genre": genre,
                    "hypothesis": j["hypothesis"],
                    "modified": j["modified_hypothesis"],
                    "good": int(bool(j["good"])),
                }
            )
    return rows


def data_digest(names) -> str:
    h = hashlib.sha256()
    for name in sorted(names):
        if SETS[name].is_file():
            h.update(name.encode() + b"\0" + SETS[name].read_bytes())
    return h.hexdigest()


def folder_training_sets(meta: dict) -> tuple[str, ...]:
    """The judged sets a saved judge was trained on: its own record, or, for a folder written
    before it kept one, the sets whose files give its recorded training data digest (so a folder
    stays readable after TRAINING_SETS grows)."""
    recorded = (meta.get("training") or {}).get("sets")
    if recorded:
        return tuple(recorded)
    names = [name for name in SETS if SETS[name].is_file()]
    for size in range(len(names), 0, -1):
        for combination in itertools.combinations(names, size):
            if data_digest(combination) == meta.get("training_data_sha256"):
                return combination
    sys.exit(
        "the folder records neither its training sets nor a data digest that today's judged "
        f"sets ({', '.join(names)}) give: their files changed since it was trained"
    )


def split_calibration(rows: list[dict], share: float, seed: int) -> tuple[list, list]:
    """(fine-tuning rows, calibration rows), grouped by source sentence."""
    sentences = sorted({r["hypothesis"] for r in rows})
    rng = np.random.default_rng(seed)
    held = set(rng.choice(sentences, size=int(round(share * len(sentences))), replace=False))
    return [r for r in rows if r["hypothesis"] not in held], [
        r for r in rows if r["hypothesis"] in held
    ]


def sentence_share(rows: list[dict], fraction: float, seed: int) -> list[dict]:
    """The rows of a `fraction` of the source sentences (for the learning curve)."""
    if fraction >= 1:
        return rows
    sentences = sorted({r["hypothesis"] for r in rows})
    rng = np.random.default_rng(seed + 1)
    keep = set(rng.choice(sentences, size=int(round(fraction * len(sentences))), replace=False))
    return [r for r in rows if r["hypothesis"] in keep]


def left_out_genres(rows: list[dict], names: str) -> set[str]:
    """The genres `names` (comma-separated genres or set names) stand for; an unknown one exits."""
    genres = set()
    for name in filter(None, (n.strip() for n in names.split(","))):
        found = {r["genre"] for r in rows if name in (r["genre"], r["set"])}
        if not found:
            sys.exit(f"--leave-out {name}: no judged candidate of that genre or set")
        genres |= found
    return genres


def figures(p: np.ndarray, rows: list[dict], threshold: float) -> dict:
    """How the left-out rows of one genre are judged: everything scored, and the default preset's
    population."""
    y = np.array([r["good"] for r in rows])
    out = {"candidates": len(rows), "good": int(y.sum()), "auc_scored": auc(p, y)}
    try:
        pops = population_keys(rows[0]["set"])
    except Exception as exc:  # noqa: BLE001 - the pipeline's resources may be missing here
        out["population"] = f"not measured: {exc}"
        return out
    gate = np.array([r["key"] in pops["gate"] for r in rows])
    fast_good = sum(1 for r in rows if r["key"] in pops["fast"] and r["good"])
    if gate.any():
        out["gate"] = {
            "candidates": int(gate.sum()),
            "auc": auc(p[gate], y[gate]),
            "precision_at_kept_of_fast_good": precision_at_kept(p[gate], y[gate], fast_good),
            "at_threshold": at_threshold(p[gate], y[gate], threshold),
            "calibration": reliability(p[gate], y[gate]),
            "fast_good": fast_good,
        }
    return out


def leave_out_rows(names: str, score: str) -> tuple[list[dict], list[dict], set[str]]:
    """(training rows, left-out rows, left-out genres) for `--leave-out names`; with `score` "gate"
    the left-out rows are only those the judge decides on in the default preset."""
    rows = judged_rows()
    left_out = left_out_genres(rows, names)
    train = [r for r in rows if r["set"] in TRAINING_SETS and r["genre"] not in left_out]
    held = [r for r in rows if r["genre"] in left_out]
    if score == "gate":
        gates = {name: population_keys(name)["gate"] for name in {r["set"] for r in held}}
        held = [r for r in held if r["key"] in gates[r["set"]]]
    return train, held, left_out


def write_scores(path: Path, held: list[dict], p: np.ndarray) -> None:
    """Each left-out candidate's calibrated p (JSONL: key, genre, good, p), for judge_stack.py."""
    with open(path, "w", encoding="utf-8") as fh:
        for r, x in zip(held, p, strict=True):
            row = {"key": r["key"], "genre": r["genre"], "good": r["good"], "p": float(x)}
            fh.write(json.dumps(row) + "\n")


def read_scores(path: Path) -> dict[str, float]:
    """A file `write_scores` wrote, as {key: p}; a malformed line exits naming it."""
    out = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            out[row["key"]] = float(row["p"])
        except (ValueError, KeyError, TypeError) as exc:
            sys.exit(f"{path}:{n}: not a score line (key, p): {exc}")
    return out


def read_score_files(paths) -> dict[str, float]:
    """Several `read_scores` files as one {key: p} (a later file's p for a key stands)."""
    return {k: p for path in paths for k, p in read_scores(Path(path)).items()}


def held_out_figures(p: np.ndarray, held: list[dict], left_out: set[str], threshold: float):
    """`figures` of each left-out genre."""
    return {
        genre: figures(
            p[[i for i, r in enumerate(held) if r["genre"] == genre]],
            [r for r in held if r["genre"] == genre],
            threshold,
        )
        for genre in sorted(left_out)
    }


def parse_args(argv):
    from transnli.generator.pair_judge import AUTOCAST, TEMPLATES, PairJudgeTraining

    d = PairJudgeTraining()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lm", default="gemma3-270m", help="the base causal LM (spec or folder)")
    ap.add_argument(
        "--leave-out",
        required=True,
        help="genres (news, wordnet, ...) or sets (genres2, test), comma-separated",
    )
    ap.add_argument("--score", choices=("all", "gate"), default="all")
    ap.add_argument("--epochs", type=int, default=d.epochs)
    ap.add_argument("--batch-size", type=int, default=d.batch_size)
    ap.add_argument("--lora-rank", type=int, default=d.lora_rank)
    ap.add_argument("--learning-rate", type=float, default=d.learning_rate)
    ap.add_argument("--calibration-share", type=float, default=0.2)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--limit", type=int, default=None, help="train on the first N rows only")
    ap.add_argument(
        "--fraction",
        type=float,
        default=1.0,
        help="train on the rows of this share of the fine-tuning sentences (a learning curve)",
    )
    ap.add_argument(
        "--template",
        choices=sorted(TEMPLATES),
        default=next(name for name, text in TEMPLATES.items() if text == d.template),
        help="the prompt that shows the pair (transnli.generator.pair_judge.TEMPLATES)",
    )
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--autocast",
        choices=[k for k in AUTOCAST if k],
        default=d.autocast,
        help="train with the forward passes in this dtype (torch.autocast; weights stay float32;"
        " the calibration and every score are read in float32)",
    )
    ap.add_argument("--write", type=Path, default=None, help="save the judge folder here")
    ap.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="save the fine-tuning's state here every --checkpoint-every steps and resume from "
        "it when it exists (default with --write: WRITE.checkpoint, removed once the folder is "
        "saved)",
    )
    ap.add_argument("--checkpoint-every", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None, help="write the JSON result here too")
    ap.add_argument(
        "--scores",
        type=Path,
        default=None,
        help="write each left-out candidate's calibrated p here (JSONL: key, genre, good, p), "
        "for stacking with other judges",
    )
    ap.add_argument(
        "--calibration-scores",
        type=Path,
        default=None,
        help="write each calibration row's calibrated p here (the same JSONL), for "
        "build_judge_stack.py --calibration-scores",
    )
    return ap.parse_args(argv)


def language_model_record(spec: str, folder, identity: dict) -> dict:
    """What a judge records as its language model: the spec and weights digest it was trained
    on; for a folder gpu_pack.py rebuilt from the converted model (same tensors but the embedding
    rows no judged prompt reads), the converted model's, with the rebuilt folder's beside them."""
    source = source_identity(folder) if isinstance(folder, Path) else None
    if source is None:
        return {"language_model": spec, "language_model_sha256": identity.get("weights_sha256")}
    return {
        "language_model": source["spec"],
        "language_model_sha256": source["weights_sha256"],
        "rebuilt_language_model": {"folder": spec, "weights_sha256": identity["weights_sha256"]},
    }


def main(argv=None) -> None:
    import peft
    import torch
    import transformers
    from transnli.common.lm.conversion import resolve_model_folder
    from transnli.common.lm.settings import LMSettings
    from transnli.generator.pair_judge import (
        TEMPLATES,
        PairJudgeError,
        PairJudgeTraining,
        calibrated,
        new_pair_judge,
        pair_prompt,
        platt,
        save_pair_judge,
        train_pair_judge,
    )

    args = parse_args(argv)
    training = PairJudgeTraining(
        lora_rank=args.lora_rank,
        lora_alpha=2 * args.lora_rank,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        seed=args.seed,
        template=TEMPLATES[args.template],
        autocast=args.autocast,
    )
    train, held, left_out = leave_out_rows(args.leave_out, args.score)
    fit_rows, cal_rows = split_calibration(train, args.calibration_share, args.seed)
    fit_rows = sentence_share(fit_rows, args.fraction, args.seed)
    if args.limit:
        fit_rows = fit_rows[: args.limit]
    folder, identity = resolve_model_folder(LMSettings(spec=args.lm))
    lm_record = language_model_record(args.lm, folder, identity)
    judge = new_pair_judge(folder, training, args.device)
    steps = args.epochs * -(-len(fit_rows) // args.batch_size)
    t0 = time.perf_counter()
    checkpoint = args.checkpoint or (
        args.write.with_name(args.write.name + ".checkpoint") if args.write else None
    )
    trained_here = 0  # below `steps` when this run resumed from a checkpoint

    def show(step: int, loss: float) -> None:
        nonlocal trained_here
        trained_here += 1
        # a resumed run's first step jumps the bar past the steps its checkpoint holds
        bar.update(step - bar.n)
        bar.set_postfix(loss=f"{loss:.3f}")

    with tqdm(total=steps, desc="fine-tuning", unit="batch", file=sys.stderr) as bar:
        try:
            losses = train_pair_judge(
                judge,
                [pair_prompt(r["hypothesis"], r["modified"], training.template) for r in fit_rows],
                [r["good"] for r in fit_rows],
                training,
                progress=show,
                checkpoint=checkpoint,
                checkpoint_every=args.checkpoint_every,
            )
        except PairJudgeError as exc:  # a checkpoint of another run: say so, no traceback
            sys.exit(str(exc))
    seconds = time.perf_counter() - t0

    def raw(rs):
        return judge.raw_scores(
            [pair_prompt(r["hypothesis"], r["modified"], training.template) for r in rs]
        )

    cal_raw = raw(cal_rows)
    calibration = platt(cal_raw, [r["good"] for r in cal_rows])
    if args.calibration_scores:  # build_judge_stack.py --calibration-scores then reads no model
        write_scores(
            args.calibration_scores, cal_rows, [calibrated(x, calibration) for x in cal_raw]
        )
    p = np.array([calibrated(x, calibration) for x in raw(held)])
    if args.scores:
        write_scores(args.scores, held, p)
    result = {
        "benchmark": "train_pair_judge",
        **lm_record,
        "left_out": sorted(left_out),
        "scored": args.score,
        "training": {
            **asdict(training),
            "rows": len(fit_rows),
            "calibration_rows": len(cal_rows),
            "fraction": args.fraction,
            "sets": list(TRAINING_SETS),
        },
        "epoch_losses": [round(x, 4) for x in losses],
        "training_seconds": round(seconds, 1),  # this run's share when it resumed
        "resumed_at_step": steps - trained_here,
        "device": args.device,
        "calibration": calibration,
        "held_out": held_out_figures(p, held, left_out, args.threshold),
    }
    if args.write:
        meta = {
            **lm_record,
            "template": training.template,
            "max_tokens": training.max_tokens,
            "calibration": calibration,
            "threshold": args.threshold,
            "training": result["training"],
            "training_data_sha256": data_digest(TRAINING_SETS),
            "validation": result["held_out"],
            "versions": {
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "peft": peft.__version__,
            },
        }
        result["written"] = str(save_pair_judge(args.write, judge, meta))
        if checkpoint is not None and args.checkpoint is None:
            checkpoint.unlink(missing_ok=True)
    print_result(result, args.out)


if __name__ == "__main__":
    main()
