"""Benchmark the review page on a large run: how long `transnli review` takes to be ready and to
serve the first page (the page and its first /api/state) over HTTP, for a 100,000-triple run.

    .venv/bin/python benchmarks/bench_review.py [--triples 100000] [--from RUN] [--order random]

The run is made synthetically: the triples of RUN/triples.jsonl (default: records built here,
shaped like the generator's, with every check) repeated, each copy with its own id, until there
are --triples lines. Measured, in a fresh folder: building the line-offset index (first start),
opening it from its cache (a restart), the first page load over HTTP (GET / then GET /api/state,
what the browser does), and the peak memory the session allocates (tracemalloc). The target
(issue 28): first page load < 1 s at 100,000 triples.

Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def base_records(source: Path | None) -> list[dict]:
    if source is not None:
        lines = (source / "triples.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(x) for x in lines if x.strip()]
    from transnli.generator.record import TripleRecord

    checks = {n: {"backend": "rules", "passed": True} for n in ("auxiliary", "fixed_phrase")}
    checks["grammar"] = {"backend": "harper", "passed": True, "errors_candidate": 0, "added": []}
    checks["acceptability"] = {"backend": "link-grammar", "passed": True, "null_count": 0}
    return [
        TripleRecord(
            premise=f"A woman in a red coat is opening door number {i} of a small bakery.",
            hypothesis=f"A woman opens door {i}.",
            modified_hypothesis=f"A man opens door {i}.",
            dataset="synthetic",
            word="woman",
            word_index=1,
            char_start=2,
            char_end=7,
            pos="NOUN",
            tag="NN",
            antonym="man",
            candidates=[{"antonym": "man", "score": 0.75}],
            checks=checks,
        ).to_dict()
        for i in range(100)
    ]


def make_run(folder: Path, n: int, source: Path | None) -> Path:
    base = base_records(source)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "triples.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            rec = dict(base[i % len(base)])
            rec["id"] = f"{rec.get('id') or 'synthetic'}-{i}"
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return folder


def open_session(run: Path, order: str):
    from transnli.review.index import LineIndex
    from transnli.review.log import LOG, JudgementLog
    from transnli.review.session import ReviewSession, SessionSettings

    return ReviewSession(
        LineIndex(run / "triples.jsonl"), JudgementLog(run / LOG), SessionSettings(order=order)
    )


def first_page_load(session) -> tuple[float, dict]:
    from transnli.review.server import ReviewServer

    server = ReviewServer(session, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        t0 = time.perf_counter()
        with urllib.request.urlopen(server.url, timeout=30) as res:
            res.read()
        state_req = urllib.request.Request(
            server.url.split("?")[0] + "api/state", headers={"X-Review-Token": server.token}
        )
        with urllib.request.urlopen(state_req, timeout=30) as res:
            state = json.loads(res.read())
        return time.perf_counter() - t0, state
    finally:
        server.shutdown()
        server.server_close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triples", type=int, default=100_000)
    ap.add_argument("--from", dest="source", type=Path, help="A run whose triples are repeated.")
    ap.add_argument("--order", default="random", choices=("random", "all", "uncertain"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(tmp) / "run", args.triples, args.source)
        size = (run / "triples.jsonl").stat().st_size
        t0 = time.perf_counter()
        session = open_session(run, args.order)
        first_start = time.perf_counter() - t0
        (run / "triples.jsonl.offsets").unlink()
        tracemalloc.start()  # on a run of its own: tracing slows the timed one several-fold
        session = open_session(run, args.order)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        t0 = time.perf_counter()
        session = open_session(run, args.order)
        restart = time.perf_counter() - t0
        load, state = first_page_load(session)
    print(
        json.dumps(
            {
                "triples": args.triples,
                "file_mb": round(size / 1e6, 1),
                "order": args.order,
                "reviewed": state["total"],
                "first_start_s (index built)": round(first_start, 3),
                "restart_s (index from cache)": round(restart, 3),
                "first_page_load_s (GET / + /api/state)": round(load, 3),
                "session_peak_mb (tracemalloc)": round(peak / 1e6, 1),
                "first_triple_shown": state["triple"]["index"] if state["triple"] else None,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
