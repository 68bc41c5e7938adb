"""Memory and time of `transnli evaluate` as the run grows: does memory stay flat?

    .venv/bin/python benchmarks/bench_scale.py [--sizes 100000,200000,500000,1000000] [--window N]

Each size is a triples file of that many distinct triples: the WordNet-example triples that
bench_evaluate.py --tiny uses (generated once, kept in transnli's cache folder), recombined cycle
by cycle (each premise with another triple's H and H', both with the cycle number appended), so no
pair repeats and every triple costs four labels. The model is bench_evaluate's tiny one (1 layer,
hidden 32): labelling is cheap, so the run's own memory is what shows. Each size runs as a user
runs it, in a process of its own: `transnli evaluate FILE --model hf:TINY --no-cache --device cpu
--threads 1 --no-plots -q`. Peak memory is the process's maximum resident set (wait4).

Prints JSON: per size the wall time, peak memory and pairs labelled, and the growth of peak memory
per triple between the smallest and the largest size (flat: a few bytes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_evaluate import build_tiny_model, tiny_triples, transnli_command  # noqa: E402

BASE_TRIPLES = 10_000


def write_triples(base: list[dict], n: int, path: Path) -> None:
    """n distinct triples recombined from `base` (see the module's docstring)."""
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            cycle, k = divmod(i, len(base))
            t = base[k]
            out.write(
                json.dumps(
                    {
                        "premise": base[(k + cycle) % len(base)]["premise"],
                        "hypothesis": f"{t['hypothesis']} ({cycle})",
                        "modified_hypothesis": f"{t['modified_hypothesis']} ({cycle})",
                        "dataset": t.get("dataset", "wordnet-examples"),
                        "gold_label": t.get("gold_label"),
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )


def run(triples: Path, model: Path, out: Path, window: int | None) -> dict:
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
        "--threads",
        "1",
        "--no-plots",
        "-q",
    ]
    if window is not None:
        cmd += ["--window", str(window)]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "pairs_labelled": summary["provenance"]["models"][0]["pairs_labelled"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sizes", default="100000,200000,500000,1000000", help="triples per run, comma-separated"
    )
    ap.add_argument(
        "--window", type=int, default=None, help="--window for every run (default: the CLI's)"
    )
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base_path = tiny_triples(BASE_TRIPLES, None)
    base = [
        json.loads(line)
        for line in base_path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        tmp = Path(tmp)
        model = build_tiny_model(tmp / "tiny")
        runs = []
        for n in sizes:
            path = tmp / f"triples-{n}.jsonl"
            write_triples(base, n, path)
            result = {"triples": n, **run(path, model, tmp / f"out-{n}", args.window)}
            print(json.dumps(result), file=sys.stderr)
            runs.append(result)
            path.unlink()
    small, large = runs[0], runs[-1]
    growth = (
        (large["peak_rss_mb"] - small["peak_rss_mb"])
        * 2**20
        / (large["triples"] - small["triples"])
        if large["triples"] > small["triples"]
        else None
    )
    print(
        json.dumps(
            {
                "benchmark": "scale",
                "window": args.window,
                "runs": runs,
                "peak_growth_bytes_per_triple": None if growth is None else round(growth),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
