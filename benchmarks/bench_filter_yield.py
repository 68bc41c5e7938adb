"""Benchmark the candidate filters' yield under the trained judge: what each filter of a preset
costs in good triples, and what it buys in precision, once the judge decides after it.

    .venv/bin/python benchmarks/bench_filter_yield.py [--preset default] \
        [--sets dev,genres,genres2,test] [--tune dev,genres,genres2] [--extra sense_fit,...] \
        [--max-per-sentence 1,2,3] [--lm-antonyms 2,3] [--lm-sets dev,genres,test] \
        [--verify -collocation] [--judged-only] [--out FILE]

For each judged set (the sentences and their hand-judged raw candidates, benchmarks/data/), the
preset's pipeline builds every candidate once; every filter studied (the preset's own and the
`--extra` ones) judges every candidate, not only the survivors of the filters before it; then the
grammar check and the judge read every candidate. With the default `lm_antonyms` 1 and
`max_per_sentence` 0 a candidate's fate depends on it alone, so the triples a configuration
accepts are those every one of its filters, the grammar check and the judge pass, and each
configuration is scored from the one table. Configurations, each scored like bench_quality.py
(good accepted, precision over the judged accepted ones, coverage = judged share):

- `baseline`: the preset as it is;
- `-NAME`: the preset with one of its filters switched off; `+NAME`: with an `--extra` filter on;
- `proposed`: the preset without every filter whose switching-off keeps more good triples at no
  lower precision, pooled over the `--tune` sets (the decision rule; test is only reported);
- `max_per_sentence=K` of the baseline and of `proposed` (the pipeline's own limit_per_sentence
  over the accepted records, ranked by p_good);
- `lm_antonyms=N` (the baseline with N of a word's antonyms realised and the judge's best kept):
  a real pipeline run each, as bench_quality.py runs it (other candidates are built, so the table
  cannot say), with its coverage: alternatives nobody judged are reported, not guessed.

`--verify SPEC` runs the real pipeline (bench_quality.run_preset) with `filters=SPEC` on the first
set and checks it accepts exactly what the table says; the baseline is always checked this way on
the first set. Prints one JSON object. Not a test: nothing is asserted beyond those checks.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_quality import (  # noqa: E402
    judged_sentence_lines,
    key,
    load_judgements,
    ratio,
    run_preset,
)
from judge_data import SETS as JUDGEMENT_FILES  # noqa: E402
from train_judge import SENTENCE_FILES  # noqa: E402

TUNE = ("dev", "genres", "genres2")
TEST = "test"


@dataclass
class Row:
    """One built candidate: its record (after the checks), each studied filter's verdict, the
    grammar check's and the judge's (None: the grammar check rejected it first)."""

    record: object
    filters: dict[str, bool]
    grammar: bool
    judge: bool | None
    good: bool | None  # the hand judgement; None: nobody judged this (H, H')


def candidate_table(config, sentences: Path, judged: dict[str, dict]) -> list[Row]:
    """Every candidate the preset builds from `sentences`, with every studied filter's verdict and
    the checks'. The pipeline is the real one; only the filters' sequencing is undone."""
    from transnli.generator.build import build_pipeline
    from transnli.generator.pipeline import GenerationStats, StageTimer, batched
    from transnli.generator.readers import read_pairs

    pipeline = build_pipeline(config)
    studied = list(pipeline.filters)
    rows: list[Row] = []
    for pairs in batched(read_pairs(str(sentences)), config.batch_size):
        usable = [p for p in pairs if pipeline.usable(p, GenerationStats())]
        tagged = pipeline.tagger.tag([p.hypothesis for p in usable])
        choices = pipeline.built_choices(usable, tagged, Counter(), StageTimer())
        for flt in studied:  # each filter over every candidate, not the previous one's survivors
            pipeline.filters = [flt]
            pipeline.apply_filters(choices, Counter(), [])
        records = [c.record for c in choices]
        verdicts = [{f.name: r.checks[f.name]["passed"] for f in studied} for r in records]
        for r in records:  # a filter's rejection is a verdict here, not the record's fate
            r.rejected_by, r.reason = None, ""
        pipeline.apply_checks(records, GenerationStats(), StageTimer())
        for rec, verdict in zip(records, verdicts, strict=True):
            j = judged.get(key(rec.hypothesis, rec.modified_hypothesis))
            acc = rec.checks.get("acceptability")
            rows.append(
                Row(
                    rec,
                    verdict,
                    rec.checks["grammar"]["passed"],
                    None if acc is None else acc["passed"],
                    None if j is None else bool(j["good"]),
                )
            )
    return rows


def accepted_rows(rows: list[Row], filters: list[str]) -> list[Row]:
    return [r for r in rows if r.grammar and r.judge and all(r.filters[f] for f in filters)]


def scores(acc: list[Row], base: list[Row] | None = None) -> dict:
    judged = [r for r in acc if r.good is not None]
    good = sum(r.good for r in judged)
    out = {
        "accepted": len(acc),
        "judged": len(judged),
        "coverage": ratio(len(judged), len(acc)),
        "good": good,
        "precision": ratio(good, len(judged)),
    }
    if base is not None:  # what the change adds to and takes from the baseline's triples
        now, before = {id(r) for r in acc}, {id(r) for r in base}
        added = [r for r in acc if id(r) not in before]
        lost = [r for r in base if id(r) not in now]
        out["added"] = {"accepted": len(added), "good": sum(r.good is True for r in added)}
        out["added"]["bad"] = sum(r.good is False for r in added)
        out["removed"] = {"accepted": len(lost), "good": sum(r.good is True for r in lost)}
        out["removed"]["bad"] = sum(r.good is False for r in lost)
    return out


def pooled(per_set: dict[str, dict], names) -> dict:
    """Sums over sets, precision recomputed from the sums."""
    tot = Counter()
    for n in names:
        tot.update({k: per_set[n][k] for k in ("accepted", "judged", "good")})
    return {**tot, "precision": ratio(tot["good"], tot["judged"])}


def limited(acc: list[Row], k: int) -> list[Row]:
    """The pipeline's max_per_sentence over these accepted records (ranked by p_good)."""
    from transnli.generator.lm_choice import limit_per_sentence

    by_id = {id(r.record): r for r in acc}
    kept, _ = limit_per_sentence([r.record for r in acc], k, "judge", "p_good")
    return [by_id[id(rec)] for rec in kept]


def filter_configs(preset_filters: list[str], extra: list[str]) -> dict[str, list[str]]:
    out = {"baseline": list(preset_filters)}
    out.update({f"-{f}": [g for g in preset_filters if g != f] for f in preset_filters})
    out.update({f"+{f}": [*preset_filters, f] for f in extra})
    return out


def decide(per_config: dict[str, dict], preset_filters: list[str], tune) -> dict[str, str]:
    """Drop a filter whose switching-off keeps more good triples at no lower precision, pooled
    over the tuning sets; keep the others."""
    base = pooled(per_config["baseline"], tune)
    out = {}
    for f in preset_filters:
        off = pooled(per_config[f"-{f}"], tune)
        cheaper = off["good"] > base["good"] and off["precision"] >= base["precision"]
        out[f] = "drop" if cheaper else "keep"
    return out


def run_real(preset: str, overrides: dict, sets: dict) -> dict:
    """A real pipeline run per set (bench_quality.run_preset), scored against the judgements."""
    out = {}
    for name, (sentences, judged) in sets.items():
        _, _, accepted, _, seconds = run_preset(preset, dict(overrides), sentences)
        good = [judged.get(key(r.hypothesis, r.modified_hypothesis)) for r in accepted]
        hits = [g["good"] for g in good if g is not None]
        out[name] = {
            "accepted": len(accepted),
            "judged": len(hits),
            "coverage": ratio(len(hits), len(accepted)),
            "good": sum(hits),
            "precision": ratio(sum(hits), len(hits)),
            "seconds": round(seconds, 1),
        }
    return out


def verify(preset: str, spec: list[str], rows: list[Row], sentences: Path) -> dict:
    """The real pipeline with these filters accepts exactly the table's triples (as a multiset
    of (H, H'))."""
    _, _, accepted, _, _ = run_preset(preset, {"filters": ",".join(spec) or "none"}, sentences)
    real = Counter(key(r.hypothesis, r.modified_hypothesis) for r in accepted)
    table = Counter(
        key(r.record.hypothesis, r.record.modified_hypothesis) for r in accepted_rows(rows, spec)
    )
    if real != table:
        sys.exit(
            f"bench_filter_yield: filters {spec}: the table accepts {sum(table.values())} on "
            f"{sentences.name}, the real pipeline {sum(real.values())} "
            f"({sum((real - table).values())} only in the run, {sum((table - real).values())} "
            "only in the table)"
        )
    return {"filters": spec, "set": sentences.name, "accepted": len(accepted), "identical": True}


def measure(args, config, sets: dict) -> dict:
    """Every filter configuration on every set, from each set's one table."""
    studied = [*config.filters, *args.extra]
    table_config = replace(config, filters=studied)
    configs = filter_configs(list(config.filters), args.extra)
    per_config: dict[str, dict] = {c: {} for c in configs}
    ks = [int(k) for k in args.max_per_sentence.split(",") if k]
    limits: dict[str, dict] = {}
    verified, tables, t0 = [], {}, time.perf_counter()
    for name, (sentences, judged) in sets.items():
        rows = tables[name] = candidate_table(table_config, sentences, judged)
        base = accepted_rows(rows, configs["baseline"])
        for c, filters in configs.items():
            acc = accepted_rows(rows, filters)
            per_config[c][name] = scores(acc, None if c == "baseline" else base)
        for k in ks:
            limits.setdefault(f"max_per_sentence={k}", {})[name] = scores(limited(base, k), base)
    first = next(iter(sets))
    for spec in [configs["baseline"], *(configs[v] for v in args.verify)]:
        verified.append(verify(args.preset, spec, tables[first], sets[first][0]))
    tune = [n for n in args.tune if n in sets]
    decision = decide(per_config, list(config.filters), tune)
    proposed = [f for f in config.filters if decision[f] == "keep"]
    per_config["proposed"] = {}
    for name, rows in tables.items():
        base = accepted_rows(rows, configs["baseline"])
        acc = accepted_rows(rows, proposed)
        per_config["proposed"][name] = scores(acc, base)
        for k in ks:
            limits.setdefault(f"proposed, max_per_sentence={k}", {})[name] = scores(
                limited(acc, k), base
            )
    for results in (*per_config.values(), *limits.values()):
        results["tune_pooled"] = pooled(results, tune)
    return {
        "candidates": {n: len(r) for n, r in tables.items()},
        "configs": per_config,
        "decision": decision,
        "proposed_filters": proposed,
        "max_per_sentence": limits,
        "verified": verified,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv=None) -> None:
    from transnli.generator.config import resolve_config

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument("--sets", default="dev,genres,genres2,test", help="Judged sets, in order.")
    ap.add_argument("--tune", default=",".join(TUNE), help="Sets the decision reads (not test).")
    ap.add_argument("--extra", default="", help="Filters outside the preset to try adding.")
    ap.add_argument("--max-per-sentence", default="1,2,3", help="K values ('' for none).")
    ap.add_argument("--lm-antonyms", default="2,3", help="N values, a real run each ('' for none).")
    ap.add_argument(
        "--lm-sets",
        help="The sets the lm_antonyms runs read (default: --sets); its alternatives "
        "are new H' the language model must read, slow on a CPU where the score cache lacks them.",
    )
    ap.add_argument(
        "--verify", action="append", default=[], help="-NAME or +NAME: also check on the real run."
    )
    ap.add_argument(
        "--judged-only",
        action="store_true",
        help="Read only the sentences that have judged candidates (a genre set's judged "
        "candidates are a choice of whole sentences; as bench_quality.py --judged-only).",
    )
    ap.add_argument("--out", type=Path, help="Also write the JSON here.")
    args = ap.parse_args(argv)
    args.extra = [f for f in args.extra.split(",") if f]
    args.tune = [n for n in args.tune.split(",") if n]
    names = [n for n in args.sets.split(",") if n]
    unknown = [n for n in names if n not in SENTENCE_FILES]
    if unknown or TEST in args.tune:
        sys.exit(
            f"bench_filter_yield: --sets knows {sorted(SENTENCE_FILES)}; test is never tuned on"
        )
    config = resolve_config(args.preset)
    if config.lm_antonyms != 1 or config.max_per_sentence:
        sys.exit(f"bench_filter_yield: preset {args.preset} chooses among candidates; see --help")
    with tempfile.TemporaryDirectory() as tmp:
        sets = {n: read_set(n, args.judged_only, Path(tmp)) for n in names}
        result = {"preset": args.preset, "preset_filters": list(config.filters), "tune": args.tune}
        result["judged_only"] = args.judged_only
        result["sets"] = {
            n: {"sentences": SENTENCE_FILES[n].name, "judgements": len(j)}
            for n, (_, j) in sets.items()
        }
        result |= measure(args, config, sets)
        result["lm_antonyms"] = lm_antonyms_runs(args, sets, result)
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


def read_set(name: str, judged_only: bool, tmp: Path) -> tuple[Path, dict[str, dict]]:
    """A judged set's sentences file (with `judged_only`, a copy in `tmp` holding only the
    sentences that have judged candidates) and its judgements."""
    judged = load_judgements(JUDGEMENT_FILES[name])
    if not judged_only:
        return SENTENCE_FILES[name], judged
    lines = SENTENCE_FILES[name].read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp / SENTENCE_FILES[name].name
    path.write_text("".join(judged_sentence_lines(lines, judged)), encoding="utf-8")
    return path, judged


def lm_antonyms_runs(args, sets: dict, result: dict) -> dict:
    """The baseline pooled over the tuning sets the lm_antonyms runs read, and a real run of each
    `--lm-antonyms` N."""
    lm_sets = {k: v for k, v in sets.items() if k in (args.lm_sets or args.sets).split(",")}
    lm_tune = [t for t in args.tune if t in lm_sets]
    # the baseline over the same sets, to compare with
    lm = {"baseline_tune_pooled": pooled(result["configs"]["baseline"], lm_tune)}
    for n in [int(x) for x in args.lm_antonyms.split(",") if x]:
        lm[f"lm_antonyms={n}"] = runs = run_real(args.preset, {"lm_antonyms": n}, lm_sets)
        runs["tune_pooled"] = pooled(runs, lm_tune)
    return lm


if __name__ == "__main__":
    main()
