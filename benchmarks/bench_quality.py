"""Benchmark quality: run a preset over the dev sentences and score what it accepts against the
hand-judged candidates (docs/judging.md says how they were judged).

    .venv/bin/python benchmarks/bench_quality.py [--preset default] [--set filters=none] \
        [--set antonyms=broad --set include_aux=true] [--baseline OLD.json] [--save NEW.json] \
        [--unjudged-out FILE.jsonl]
    .venv/bin/python benchmarks/bench_quality.py --rescore SAVED.json --judgements FILE \
        [--baseline OLD.json] [--save SAVED.json]   # a saved run scored again once its
                                # unjudged triples are judged (--set, --sentences: an error)

Data (benchmarks/data/):
- quality_dev_sentences.jsonl: the dev sentences, WordNet 3.0 example sentences sampled with a fixed
  seed (at least 6 words; the synset's definition as premise);
- quality_dev.jsonl: one judged candidate a line (hypothesis, word, word_index, antonym,
  modified_hypothesis, coherent, meaning_changed, good, error_type, reason, annotator), made from
  those sentences with the checks off in both antonym modes.

Scores (docs/judging.md): precision = good share of the accepted triples that have a judgement;
recall = share of the judged-good candidates the run *built* that it still accepts (what the
filters and checks give up); recall_dev = share of every judged-good candidate in the dev set
that is accepted; coverage = share of accepted triples that have a judgement (judge the ones
listed under `unjudged` before trusting a figure whose coverage fell). With --baseline (a JSON
this script saved with --save), it also prints how many of the baseline's good triples are still
accepted.

Prints one JSON object. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATA = Path(__file__).resolve().parent / "data"
SENTENCES = DATA / "quality_dev_sentences.jsonl"
JUDGEMENTS = DATA / "quality_dev.jsonl"


def key(hypothesis: str, modified: str) -> str:
    return f"{hypothesis}\x1f{modified}"


def load_judgements(path: Path = JUDGEMENTS) -> dict[str, dict]:
    """Judged candidates by (H, H'); reads a `transnli review` log (RUN/review.jsonl) too: the last
    line about a candidate stands, an `undone` line takes it back, a skip (good null) is none."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                j = json.loads(line)
                k = key(j["hypothesis"], j["modified_hypothesis"])
                if j.get("undone"):
                    out.pop(k, None)
                elif j.get("good") is not None:
                    out[k] = j
    return out


def parse_value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# Settings whose value is a name, where "none" names the stage switched off (not "the default").
NAMED = ("filters", "grammar", "acceptability")


def parse_override(item: str) -> tuple[str, object]:
    """`KEY=VALUE` of --set: `grammar=none` switches the grammar check off, `seed=3` is an int."""
    k, _, v = item.partition("=")
    k = k.strip()
    return k, (v.strip() if k in NAMED else parse_value(v.strip()))


def run_preset(preset: str, overrides: dict, sentences: Path = SENTENCES):
    """Every candidate the configuration builds, accepted and rejected, in input order."""
    from transnli.generator.build import build_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.readers import read_pairs

    config = resolve_config(preset, **overrides)
    pipeline = build_pipeline(config)
    accepted, rejected = [], []
    t0 = time.perf_counter()
    for batch in pipeline.run(read_pairs(str(sentences))):
        accepted += batch.accepted
        rejected += batch.rejected
    return config, pipeline, accepted, rejected, time.perf_counter() - t0


def ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def genre_figures(rows: list[tuple[bool, float | None]]) -> dict:
    """Judged accepted triples of one genre: their precision and their mean p_good (the card's
    estimate; None when no judge scored them) with its error."""
    p = [x for _, x in rows if x is not None]
    precision = ratio(sum(g for g, _ in rows), len(rows))
    mean_p = round(sum(p) / len(p), 4) if p and len(p) == len(rows) else None
    return {
        "judged": len(rows),
        "precision": precision,
        "mean_p_good": mean_p,
        "estimate_error": None if mean_p is None else round(mean_p - precision, 4),
    }


def score(accepted, rejected, judged: dict[str, dict], n_sentences: int) -> dict:
    def verdict(rec):
        return judged.get(key(rec.hypothesis, rec.modified_hypothesis))

    acc_j = [(r, verdict(r)) for r in accepted]
    acc_judged = [(r, j) for r, j in acc_j if j is not None]
    good_acc = [r for r, j in acc_judged if j["good"]]
    built_good = good_acc + [r for r in rejected if (j := verdict(r)) is not None and j["good"]]
    all_good = sum(1 for j in judged.values() if j["good"])

    per_pos: dict[str, Counter] = defaultdict(Counter)
    for r, j in acc_judged:
        per_pos[r.pos]["judged"] += 1
        per_pos[r.pos]["good"] += bool(j["good"])
    errors = Counter(j["error_type"] or "other" for _, j in acc_judged if not j["good"])
    # by the judged file's genre (where its rows name one): what the preset keeps there, and the
    # mean p_good of it, the estimate the card would state for a run of that genre alone
    per_genre: dict[str, list] = defaultdict(list)
    for r, j in acc_judged:
        if j.get("genre"):
            per_genre[j["genre"]].append((bool(j["good"]), r.p_good))
    stages: dict[str, Counter] = defaultdict(Counter)
    for r in rejected:
        j = verdict(r)
        stage = stages[r.rejected_by or "?"]
        stage["rejected"] += 1
        if j is not None:
            stage["judged"] += 1
            stage["good_lost"] += bool(j["good"])
    return {
        "sentences": n_sentences,
        "candidates_built": len(accepted) + len(rejected),
        "accepted": len(accepted),
        "triples_per_sentence": ratio(len(accepted), n_sentences),
        "judged_accepted": len(acc_judged),
        "coverage": ratio(len(acc_judged), len(accepted)),
        "good_accepted": len(good_acc),
        "precision": ratio(len(good_acc), len(acc_judged)),
        "recall": ratio(len(good_acc), len(built_good)),
        "recall_dev": ratio(len(good_acc), all_good),
        "per_pos": {
            p: {"judged": c["judged"], "precision": ratio(c["good"], c["judged"])}
            for p, c in sorted(per_pos.items())
        },
        "per_genre": {g: genre_figures(rows) for g, rows in sorted(per_genre.items())},
        "accepted_errors": dict(errors.most_common()),
        "rejected_by": {
            s: {**c, "precision_as_filter": ratio(c["judged"] - c["good_lost"], c["judged"])}
            for s, c in sorted(stages.items())
        },
        "good_keys": sorted(key(r.hypothesis, r.modified_hypothesis) for r in good_acc),
        "unjudged": [
            {
                "hypothesis": r.hypothesis,
                "word": r.word,
                "word_index": r.word_index,
                "pos": r.pos,
                "antonym": r.antonym,
                "modified_hypothesis": r.modified_hypothesis,
            }
            for r, j in acc_j
            if j is None
        ],
    }


def rescored(run: dict, judged: dict[str, dict]) -> dict:
    """A saved run's headline figures again, with judgements added since to its unjudged triples
    (no re-run: the accepted triples are those it lists, judged or not); its per-POS, per-genre
    and per-stage tables are left as the run had them, and say so."""
    newly = [judged.get(key(u["hypothesis"], u["modified_hypothesis"])) for u in run["unjudged"]]
    good_keys = set(run["good_keys"]) | {
        key(u["hypothesis"], u["modified_hypothesis"])
        for u, j in zip(run["unjudged"], newly, strict=True)
        if j is not None and j["good"]
    }
    judged_accepted = run["judged_accepted"] + sum(j is not None for j in newly)
    return {
        **run,
        "judged_accepted": judged_accepted,
        "coverage": ratio(judged_accepted, run["accepted"]),
        "good_accepted": len(good_keys),
        "precision": ratio(len(good_keys), judged_accepted),
        "good_keys": sorted(good_keys),
        "unjudged": [u for u, j in zip(run["unjudged"], newly, strict=True) if j is None],
        "rescored": {
            "judgements": len(judged),
            # a run rescored again counts every judgement added since it ran
            "newly_judged": (run.get("rescored") or {}).get("newly_judged", 0)
            + sum(j is not None for j in newly),
            "tables_as_run": [
                "recall",
                "recall_dev",
                "per_pos",
                "per_genre",
                "accepted_errors",
                "rejected_by",
            ],
        },
    }


def judged_sentence_lines(lines: list[str], judged: dict[str, dict]) -> list[str]:
    """The sentence lines whose hypothesis has judged candidates: a genre set's candidates were
    chosen whole sentence by whole sentence, so its precision is read on those sentences only."""
    hypotheses = {j["hypothesis"] for j in judged.values()}
    return [line for line in lines if line.strip() and json.loads(line)["hypothesis"] in hypotheses]


def default_run_errors(path: Path, backend: str) -> tuple[dict, dict[str, dict]]:
    """A run this script saved (--save) with the default preset's settings judged by `backend`
    (no override but --set acceptability=BACKEND; a run saved before the backend was recorded
    was the linear judge's), and per genre its judged triples and the card estimate's error;
    exits naming the file on another run, or on a genre without an error."""
    run = json.loads(path.read_text(encoding="utf-8"))
    overrides = run.get("overrides") or {}
    used = run.get("acceptability", overrides.get("acceptability", "judge"))
    if run.get("preset") != "default" or set(overrides) - {"acceptability"} or used != backend:
        sys.exit(
            f"{path}: not a run of the default preset's settings with acceptability {backend} "
            f"(--set acceptability={backend} and no other override)"
        )
    genres = {}
    for genre, g in sorted((run.get("per_genre") or {}).items()):
        if g.get("estimate_error") is None:
            sys.exit(f"{path}: per_genre.{genre} has no estimate_error")
        genres[genre] = {"judged": g["judged"], "error": g["estimate_error"]}
    return run, genres


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A configuration override, e.g. filters=none, antonyms=broad, include_aux=true.",
    )
    ap.add_argument(
        "--baseline", type=Path, help="A JSON this script saved (--save) to compare with."
    )
    ap.add_argument(
        "--save", type=Path, help="Write the full result (with the good triples' keys) here."
    )
    ap.add_argument(
        "--unjudged-out", type=Path, help="Write accepted triples with no judgement here (JSONL)."
    )
    ap.add_argument("--show", type=int, default=10, help="How many unjudged triples to print.")
    ap.add_argument(
        "--sentences",
        type=Path,
        default=SENTENCES,
        help="Sentences to generate from (default: the dev sentences; the test set is "
        "data/quality_test_sentences.jsonl).",
    )
    ap.add_argument(
        "--judgements",
        type=Path,
        action="append",
        help="Judged candidates of those sentences (default: data/quality_dev.jsonl; test set: "
        "data/quality_test.jsonl); give it again to add a file (a later file's verdict stands).",
    )
    ap.add_argument(
        "--rescore",
        type=Path,
        help="Score a run this script saved again, with the judgements given now, instead of "
        "generating (its unjudged triples judged since count; --save writes the result).",
    )
    ap.add_argument(
        "--judged-only",
        action="store_true",
        help="Generate from the sentences that have judged candidates only (a genre set, whose "
        "judged candidates are a choice of whole sentences).",
    )
    args = ap.parse_args(argv)

    overrides = dict(parse_override(item) for item in args.set)
    judgement_files = args.judgements or [JUDGEMENTS]
    judged = {k: j for path in judgement_files for k, j in load_judgements(path).items()}
    if args.rescore:
        generating = [
            flag
            for flag, given in (
                ("--preset", args.preset != ap.get_default("preset")),
                ("--set", args.set),
                ("--sentences", args.sentences != ap.get_default("sentences")),
                ("--judged-only", args.judged_only),
            )
            if given
        ]
        if generating:  # the saved run's own settings stand; these would silently do nothing
            ap.error(f"--rescore reads a saved run: {', '.join(generating)} cannot change it")
        result = rescored(json.loads(args.rescore.read_text(encoding="utf-8")), judged)
        result["rescored"]["judgements_files"] = [path.name for path in judgement_files]
        report(compared(result, args.baseline), args)
        return
    lines = args.sentences.read_text(encoding="utf-8").splitlines(keepends=True)
    if args.judged_only:
        lines = judged_sentence_lines(lines, judged)
    n_sentences = sum(1 for line in lines if line.strip())
    with tempfile.TemporaryDirectory() as tmp:
        sentences = Path(tmp) / args.sentences.name
        sentences.write_text("".join(lines), encoding="utf-8")
        config, pipeline, accepted, rejected, seconds = run_preset(
            args.preset, overrides, sentences
        )
    result = {
        "preset": args.preset,
        "overrides": overrides,
        "acceptability": config.acceptability,
        "filters": config.filters,
        "sentences_file": args.sentences.name,
        "judged_only": args.judged_only,
        "judgements_file": ",".join(path.name for path in judgement_files),
        "judgements": len(judged),
        **score(accepted, rejected, judged, n_sentences),
        "seconds": round(seconds, 1),
    }
    report(compared(result, args.baseline), args)


def compared(result: dict, baseline: Path | None) -> dict:
    """`result` with how many of a saved baseline's good triples it still has, when one is given."""
    if baseline:
        base = json.loads(baseline.read_text())
        base_good = set(base["good_keys"])
        now_good = set(result["good_keys"])
        result["baseline"] = {
            "file": str(baseline),
            "precision": base["precision"],
            "good_accepted": len(base_good),
            "good_kept": len(base_good & now_good),
            "good_kept_share": ratio(len(base_good & now_good), len(base_good)),
            "good_accepted_vs_baseline": ratio(len(now_good), len(base_good)),
        }
    return result


def report(result: dict, args) -> None:
    """Save, list the unjudged triples, and print, as the options ask."""
    if args.save:
        args.save.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    if args.unjudged_out:
        with open(args.unjudged_out, "w", encoding="utf-8") as fh:
            for u in result["unjudged"]:
                fh.write(json.dumps(u, ensure_ascii=False) + "\n")
    printed = {k: v for k, v in result.items() if k not in ("good_keys", "unjudged")}
    printed["unjudged_count"] = len(result["unjudged"])
    printed["unjudged"] = result["unjudged"][: args.show]
    print(json.dumps(printed, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
