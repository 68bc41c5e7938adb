"""Digests of every file the main commands write, to show that a change leaves outputs
byte-identical.

    .venv/bin/python benchmarks/output_snapshot.py OUT [--limit 2000] [--compare BEFORE.json]

Runs, through the installed `transnli` command:
- `generate` on the bundled SNLI sample, with Parquet and a dataset card;
- `generate` on the first --limit WordNet example sentences (text nobody here wrote; 2,000
  sentences give about 2,000 triples);
- `evaluate` of those triples with two random-weight MiniLM-sized models (seeds 0 and 1), so the
  report has two models, alarms and plots;
- `evaluate --families` of the sample's triples with the same two models.

Prints one JSON object: the sha256 of every file under OUT (timing and clock fields of JSON files
removed first, listed under "volatile_keys"; run.lock, which holds a PID, left out), and with
--compare, the files that differ from an earlier snapshot. Outputs record their own paths, so
compare snapshots taken with the same OUT. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# JSON keys whose values are clock readings or durations: they differ between any two runs.
VOLATILE_KEYS = frozenset(
    {
        "created",
        "created_at",
        "date_utc",
        "started",
        "started_at",
        "finished",
        "finished_at",
        "seconds",
        "elapsed",
        "elapsed_seconds",
        "duration",
        "duration_s",
        "timestamp",
        "wall_seconds",
        "stage_seconds",
        "sentences_per_s",
        "pairs_per_s",
        "time",
    }
)


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def file_digest(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".json":
        with contextlib.suppress(ValueError):
            data = json.dumps(_strip(json.loads(data)), sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()


def transnli(*args: str) -> None:
    exe = str(Path(sys.executable).with_name("transnli"))
    subprocess.run([exe, *args], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--limit", type=int, default=2000)
    ap.add_argument("--compare", type=Path, default=None)
    args = ap.parse_args()

    from bench_evaluate import build_random_bert
    from bench_generate import examples_file

    out = args.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    runs = out / "runs"
    models = out / "models"
    model_args = []
    for seed in (0, 1):
        build_random_bert(models / f"m{seed}", "tiny", seed)
        model_args += ["--model", f"m{seed}={models / f'm{seed}'}"]
    sample = ROOT / "resources" / "samples" / "snli_sample.jsonl"
    transnli(
        "generate",
        str(sample),
        "--out",
        str(runs / "sample"),
        "--export",
        "parquet",
        "--export",
        "card",
        "-q",
    )
    transnli(
        "generate",
        str(examples_file()),
        "--out",
        str(runs / "wordnet"),
        "--limit",
        str(args.limit),
        "-q",
    )
    transnli(
        "evaluate",
        str(runs / "wordnet" / "triples.jsonl"),
        "--out",
        str(runs / "eval"),
        "--no-cache",
        "-q",
        *model_args,
    )
    transnli(
        "evaluate",
        str(runs / "sample" / "triples.jsonl"),
        "--out",
        str(runs / "eval_families"),
        "--families",
        "--no-cache",
        "-q",
        *model_args,
    )

    digests = {
        str(p.relative_to(runs)): file_digest(p)
        for p in sorted(runs.rglob("*"))
        if p.is_file() and p.name != "run.lock"
    }
    with open(runs / "wordnet" / "triples.jsonl", encoding="utf-8") as fh:
        triples = sum(1 for _ in fh)
    result = {
        "wordnet_triples": triples,
        "files": len(digests),
        "volatile_keys": sorted(VOLATILE_KEYS),
        "digests": digests,
    }
    if args.compare:
        before = json.loads(args.compare.read_text())["digests"]
        result["differ"] = sorted(
            k for k in before.keys() & digests.keys() if before[k] != digests[k]
        )
        result["only_before"] = sorted(before.keys() - digests.keys())
        result["only_after"] = sorted(digests.keys() - before.keys())
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
