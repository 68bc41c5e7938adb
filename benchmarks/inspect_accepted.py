"""List the triples a preset accepts on the dev sentences, joined with their judgements and the
parse facts a filter sees, to look for what separates good from bad ones (how the verb filters of
generator/filters/verb.py were found).

    .venv/bin/python benchmarks/inspect_accepted.py [--preset default] [--set filters=+clause_link]
    \
        [--pos VERB] [--out FILE.jsonl]

One JSON object a line, sorted bad first: the judgement (good, error_type, reason), the word's tag,
dependency and children, the antonym and its WordNet POS, and for verbs WordNet's frames of the word
and of the antonym. Design on the dev set only (benchmarks/bench_quality.py's method rules): the
test set's items are for held-out figures, not for reading.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_quality  # noqa: E402


class _Recorder:
    """A filter that passes everything and keeps what it saw: appended last, it sees exactly the
    candidates the preset's filters let through."""

    name = "inspect"

    def __init__(self):
        self.items = {}

    def judge_many(self, items):
        from transnli.generator.filters import FilterVerdict

        for item in items:
            self.items[(item.sentence.text, item.modified)] = item
        return [FilterVerdict(True) for _ in items]


def facts(item) -> dict:
    from transnli.generator.filters.base import children
    from transnli.generator.filters.verb import verb_frames

    tok = item.token
    out = {
        "tag": tok.tag,
        "dep": tok.dep,
        "antonym_pos": item.antonym_pos,
        "children": [[k.text, k.dep] for k in children(item.sentence, tok.i)],
    }
    if tok.pos == "VERB":
        out["frames_word"] = sorted(verb_frames(tok.lemma))
        out["frames_antonym"] = sorted(verb_frames(item.antonym)) if item.antonym_pos == "v" else []
    return out


def main(argv=None) -> None:
    from transnli.generator.build import build_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.readers import read_pairs

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--pos", default="VERB", help="spaCy POS of the replaced word (VERB, ADJ, NOUN, ADV)"
    )
    ap.add_argument("--out", type=Path, help="Write the JSONL here instead of stdout.")
    args = ap.parse_args(argv)

    overrides = {}
    for entry in args.set:
        k, _, v = entry.partition("=")
        overrides[k.strip()] = v if k.strip() == "filters" else bench_quality.parse_value(v.strip())
    pipeline = build_pipeline(resolve_config(args.preset, **overrides))
    recorder = _Recorder()
    pipeline.filters.append(recorder)
    judged = bench_quality.load_judgements()
    rows = []
    for batch in pipeline.run(read_pairs(str(bench_quality.SENTENCES))):
        for rec in batch.accepted:
            if rec.pos != args.pos:
                continue
            j = judged.get(bench_quality.key(rec.hypothesis, rec.modified_hypothesis)) or {}
            item = recorder.items[(rec.hypothesis, rec.modified_hypothesis)]
            rows.append(
                {
                    "good": j.get("good"),
                    "error_type": j.get("error_type"),
                    "reason": j.get("reason"),
                    "word": rec.word,
                    "antonym": rec.antonym,
                    "modified_hypothesis": rec.modified_hypothesis,
                    **facts(item),
                }
            )
    rows.sort(key=lambda r: (r["good"] is not False, r["good"] is None))
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
