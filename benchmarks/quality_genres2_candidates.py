"""Raw candidates of the second genre set (issue 39), what the presets make of them, and the
selection people judge.

    build   every raw candidate of benchmarks/data/quality_genres2_sentences.jsonl, made as the
            first genre set's were (benchmarks/quality_dataset.py: spaCy, WordNet antonyms in both
            modes with auxiliaries, ranking, realising; no filters, no checks; a candidate both
            modes make is kept once, as direct), with what the default and the fast presets'
            gates say of it (each preset's filters and harper grammar check; genre set 2 was
            built when the two were the same, and records them once) and whether the presets
            build it at all (direct antonyms, no auxiliaries).
            Writes WORK/raw.jsonl.
    select  per genre, whole sentences until about --per-genre candidates, those with the larger
            share of candidates the presets build and gate-pass first (the choice does not
            depend on p_good, so the batches can go out before the language model has read
            them); writes benchmarks/data/quality_genres2_candidates.jsonl (provenance, gates,
            p_good as far as read) and the annotation batches (--batches: bNN.jsonl of 250
            items with only what an annotator sees, a fixed-seed shuffle, each listed in
            ../READY once written; ../overlap.jsonl: a fixed-seed 10% of each batch for a
            second annotator). Batches on disk are never rewritten.
    judge   the default judge's p_good (its acceptability check on Gemma 3 270M) of the selected
            candidates, first batch first, appended to WORK/p_good.jsonl; a rerun goes on.
    fast    link-grammar (the fast preset's acceptability check) on the selected candidates the
            presets build and gate-pass: WORK/fast.jsonl.
    select  again: the candidates file with the p_good and link-grammar verdicts read since.

    .venv/bin/python benchmarks/quality_genres2_candidates.py build --work /work/annot/work
    .venv/bin/python benchmarks/quality_genres2_candidates.py select --work /work/annot/work \
        --batches /work/annot/batches --final
    .venv/bin/python benchmarks/quality_genres2_candidates.py judge --work /work/annot/work \
        --batches /work/annot/batches
    .venv/bin/python benchmarks/quality_genres2_candidates.py fast --work /work/annot/work
    .venv/bin/python benchmarks/quality_genres2_candidates.py select --work /work/annot/work
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import key  # noqa: E402 - one (H, H') key for every judged file
from quality_dataset import raw_choices  # noqa: E402 - one way to build the raw candidates

DATA = Path(__file__).resolve().parent / "data"
SENTENCES = DATA / "quality_genres2_sentences.jsonl"
OUT = DATA / "quality_genres2_candidates.jsonl"
NEAR = (0.35, 0.75)  # "near the threshold" (0.55): what the judge gets wrong most often
BATCH = 250
# What an annotator sees (docs/judging.md); nothing of what the pipeline decided.
SHOWN = ("item", "genre", "hypothesis", "word", "pos", "antonym", "modified_hypothesis")


def item_id(hypothesis: str, modified: str) -> str:
    """As in quality_genres.jsonl: the first 16 hex digits of sha256 of the (H, H') key."""
    return hashlib.sha256(key(hypothesis, modified).encode()).hexdigest()[:16]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


# -- build ------------------------------------------------------------------------------------


def gate_verdicts(choices: list, preset: str) -> list[str | None]:
    """The name of the first of the preset's filters or its grammar check that rejects each
    candidate (None: all pass)."""
    from transnli.generator.build import build_wordnet_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.filters import FilterItem

    pipeline = build_wordnet_pipeline(resolve_config(preset, acceptability="none"))
    verdict: list[str | None] = [None] * len(choices)
    for flt in pipeline.filters:
        alive = [i for i, v in enumerate(verdict) if v is None]
        items = []
        for i in alive:
            c = choices[i]
            ant_pos = c.lookup.pos[c.lookup.antonyms.index(c.record.antonym)]
            items.append(
                FilterItem(
                    c.sentence,
                    c.token,
                    c.record.antonym,
                    ant_pos,
                    c.record.modified_hypothesis,
                    tuple(c.record.candidates),
                )
            )
        for i, v in zip(alive, flt.judge_many(items), strict=True):
            if not v.passed:
                verdict[i] = flt.name
    grammar = pipeline.checks[0]
    alive = [i for i, v in enumerate(verdict) if v is None]
    results = grammar.check_many(
        [choices[i].record.hypothesis for i in alive],
        [choices[i].record.modified_hypothesis for i in alive],
    )
    for i, res in zip(alive, results, strict=True):
        if not res.passed:
            verdict[i] = "grammar"
    return verdict


def fast_gates_pass(row: dict) -> bool:
    """The fast preset's gates; a row built when both presets had the same ones (genre set 2)
    records them once."""
    return row.get("fast_gates_pass", row["gates_pass"])


def fast_check(args) -> None:
    """The fast preset's acceptability check (link-grammar) on the selected candidates it would
    see (the presets build them and the gates pass them): WORK/fast.jsonl. Others get no
    verdict: on long sentences link-grammar takes seconds a parse."""
    from transnli.generator.checks.registry import build_check

    selected = {r["item"] for r in read_jsonl(args.out)}
    rows = [
        r
        for r in read_jsonl(args.work / "raw.jsonl")
        if r["in_presets"] and fast_gates_pass(r) and r["item"] in selected
    ]
    t0 = time.perf_counter()
    check = build_check("acceptability", "link-grammar")
    results = check.check_many(
        [r["hypothesis"] for r in rows], [r["modified_hypothesis"] for r in rows]
    )
    out = [
        {"item": r["item"], "link_grammar_pass": res.passed}
        for r, res in zip(rows, results, strict=True)
    ]
    write_jsonl(args.work / "fast.jsonl", out)
    print(f"link-grammar on {len(rows)} candidates in {time.perf_counter() - t0:.0f} s")


def build(args) -> None:
    by_id = {s["id"]: s for s in read_jsonl(args.sentences)}
    t0 = time.perf_counter()
    made, _ = raw_choices(args.sentences)
    choices = [c for c, _ in made]
    verdicts = gate_verdicts(choices, "default")
    fast_verdicts = gate_verdicts(choices, "fast")
    rows = []
    for (choice, mode), verdict, fast_verdict in zip(made, verdicts, fast_verdicts, strict=True):
        rec, sent = choice.record, by_id[choice.record.source_id]
        rows.append(
            {
                "item": item_id(rec.hypothesis, rec.modified_hypothesis),
                "source_id": rec.source_id,
                "genre": sent["genre"],
                "source": sent["source"],
                "hypothesis": rec.hypothesis,
                "word": rec.word,
                "word_index": rec.word_index,
                "pos": rec.pos,
                "antonym": rec.antonym,
                "modified_hypothesis": rec.modified_hypothesis,
                "antonym_mode": mode,
                # the presets build only direct antonyms of non-auxiliary words
                "in_presets": mode == "direct" and rec.pos != "AUX",
                # the default preset's filters and grammar check: what its judge decides on
                "gates_pass": verdict is None,
                "gates_rejected_by": verdict,
                # the fast preset's (its filters are not all the default's)
                "fast_gates_pass": fast_verdict is None,
                "fast_gates_rejected_by": fast_verdict,
            }
        )
    write_jsonl(args.work / "raw.jsonl", rows)
    per: dict[str, int] = {}
    for r in rows:
        per[r["genre"]] = per.get(r["genre"], 0) + 1
    print(f"{len(rows)} raw candidates {per} in {time.perf_counter() - t0:.0f} s")


# -- judge ------------------------------------------------------------------------------------


def judge(args) -> None:
    """p_good of the selected candidates, in the order of the annotation batches (the first
    batches first), appended to WORK/p_good.jsonl a chunk at a time: a run stopped part-way
    keeps what it read, and a rerun reads only what is missing."""
    from transnli.generator.checks.judge_acceptability import JudgeAcceptability

    batches = existing_batches(args.batches) if args.batches else {}
    order = [r["item"] for rows in batches.values() for r in rows]
    selected = {r["item"]: r for r in read_jsonl(args.out)}
    order += sorted(set(selected) - set(order))
    path = args.work / "p_good.jsonl"
    done = {r["item"] for r in read_jsonl(path)} if path.exists() else set()
    todo = [selected[i] for i in order if i not in done]
    if args.reverse:  # a second process reads from the other end (both append to one file)
        todo.reverse()
    check = JudgeAcceptability.from_options()
    t0 = time.perf_counter()
    for lo in range(0, len(todo), args.chunk):
        part = todo[lo : lo + args.chunk]
        results = check.check_many(
            [r["hypothesis"] for r in part], [r["modified_hypothesis"] for r in part]
        )
        with path.open("a", encoding="utf-8") as f:
            f.writelines(
                json.dumps(
                    {"item": r["item"], "p_good": res.details["p_good"], "d": res.details["d"]}
                )
                + "\n"
                for r, res in zip(part, results, strict=True)
            )
        n = lo + len(part)
        rate = n / (time.perf_counter() - t0)
        print(f"{n}/{len(todo)} read, {rate:.2f}/s", file=sys.stderr, flush=True)
    check.close()
    print(f"{len(todo)} read in {time.perf_counter() - t0:.0f} s")


# -- select -----------------------------------------------------------------------------------


def raw_rows(work: Path, threshold: float) -> list[dict]:
    """The raw candidates with what the fast and default presets say of them, as far as the
    `fast` and `judge` steps have read them (None: not read)."""
    path = work / "p_good.jsonl"
    p_good = {r["item"]: r for r in read_jsonl(path)} if path.exists() else {}
    lg_path = work / "fast.jsonl"
    lg = (
        {r["item"]: r["link_grammar_pass"] for r in read_jsonl(lg_path)} if lg_path.exists() else {}
    )
    rows = read_jsonl(work / "raw.jsonl")
    for r in rows:
        gated = r["in_presets"] and r["gates_pass"]
        fast_gated = r["in_presets"] and fast_gates_pass(r)
        # link-grammar is asked only where the fast preset would ask it (its gated candidates)
        r["link_grammar_pass"] = lg.get(r["item"])
        r["fast_accepts"] = (
            None if fast_gated and not lg else bool(fast_gated and lg.get(r["item"]))
        )
        read = p_good.get(r["item"])
        p = None if read is None else round(read["p_good"], 4)
        r["p_good"], r["d"] = p, None if read is None else round(read["d"], 4)
        r["default_accepts"] = None if p is None else bool(gated and p >= threshold)
        r["near_threshold"] = None if p is None else NEAR[0] <= p <= NEAR[1]
    return rows


def pick_sentences(rows: list[dict], target: int, rng: random.Random) -> list[dict]:
    """Whole sentences until about `target` candidates: those with the larger share of
    candidates that the presets build and their gates pass first (what the judge decides on in
    a run; a fixed-seed shuffle breaks ties). The choice does not depend on p_good, so batches
    could go out before the language model had read them."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["source_id"], []).append(r)
    order = sorted(groups)
    rng.shuffle(order)

    def weight(sid: str) -> float:
        return sum(r["in_presets"] and r["gates_pass"] for r in groups[sid]) / len(groups[sid])

    order.sort(key=weight, reverse=True)  # stable: the shuffle orders equal weights
    picked: list[dict] = []
    for sid in order:
        if len(picked) >= target:
            break
        picked += groups[sid]
    return picked


def existing_batches(folder: Path) -> dict[str, list[dict]]:
    return {p.name: read_jsonl(p) for p in sorted(folder.glob("b[0-9][0-9].jsonl"))}


def cut_batches(selected: list[dict], folder: Path, seed: int, final: bool) -> list[str]:
    """New batches of the selected items not yet in a batch (a fixed-seed shuffle); batches
    already on disk are never changed, so annotators can start on them. A last short batch is
    written only when `final` (until then its items wait for the next genres)."""
    done = existing_batches(folder)
    taken = {r["item"] for rows in done.values() for r in rows}
    fresh = sorted((r for r in selected if r["item"] not in taken), key=lambda r: r["item"])
    random.Random(seed + len(done)).shuffle(fresh)
    new = []
    for lo in range(0, len(fresh) if final else len(fresh) - len(fresh) % BATCH, BATCH):
        name = f"b{len(done) + len(new) + 1:02d}.jsonl"
        write_jsonl(folder / name, [{k: r[k] for k in SHOWN} for r in fresh[lo : lo + BATCH]])
        new.append(name)
    return new


def write_overlap(folder: Path, seed: int) -> int:
    """A fixed-seed 10% of every batch (so the set only grows as batches are added), for a
    second annotator to judge blind; each row names its batch."""
    rows = []
    for name, items in existing_batches(folder).items():
        rng = random.Random(f"{seed}:{name}")
        rows += [{**r, "batch": name} for r in rng.sample(items, max(1, len(items) // 10))]
    write_jsonl(folder.parent / "overlap.jsonl", rows)
    return len(rows)


def share(rows: list[dict], field: str) -> str:
    read = [r[field] for r in rows if r[field] is not None]
    return f"{sum(read)}/{len(read)}" if read else "not read"


def select(args) -> None:
    from transnli.generator.judge import load_judge

    threshold = float(load_judge().meta.get("threshold", 0.55))
    rows = raw_rows(args.work, threshold)
    selected = []
    for genre in sorted({r["genre"] for r in rows}):
        pool = [r for r in rows if r["genre"] == genre]
        picked = pick_sentences(pool, args.per_genre, random.Random(f"{args.seed}:{genre}"))
        gated = sum(r["in_presets"] and r["gates_pass"] for r in picked)
        print(
            f"{genre}: {len(pool)} raw, {len(picked)} selected "
            f"({len({r['source_id'] for r in picked})} sentences); gates pass {gated} "
            f"(raw {sum(r['in_presets'] and r['gates_pass'] for r in pool)}); "
            f"near threshold {share(picked, 'near_threshold')}"
        )
        selected += picked
    selected.sort(key=lambda r: (r["genre"], r["source_id"], r["word_index"], r["item"]))
    write_jsonl(args.out, selected)
    print(
        f"wrote {len(selected)} candidates to {args.out}; near threshold "
        f"{share(selected, 'near_threshold')}, default accepts {share(selected, 'default_accepts')}"
    )
    if args.batches:
        new = cut_batches(selected, args.batches, args.seed, args.final)
        overlap = write_overlap(args.batches, args.seed)
        with (args.batches.parent / "READY").open("a", encoding="utf-8") as ready:
            ready.writelines(f"{args.batches / name}\n" for name in new)  # complete batches
        print(f"new batches: {' '.join(new) or 'none'}; overlap {overlap} items")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("build", "fast", "judge", "select"))
    ap.add_argument("--work", type=Path, required=True, help="folder for raw and p_good files")
    ap.add_argument("--sentences", type=Path, default=SENTENCES)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--per-genre", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--batches", type=Path, default=None, help="select: annotation batch folder")
    ap.add_argument("--reverse", action="store_true", help="judge: last batch first")
    ap.add_argument("--final", action="store_true", help="select: write a last short batch too")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    steps = {"build": build, "fast": fast_check, "judge": judge, "select": select}
    steps[args.step](args)


if __name__ == "__main__":
    main()
