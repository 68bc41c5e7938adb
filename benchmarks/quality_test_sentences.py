"""Build the quality *test* sentences: real English of two genres the dev set (WordNet example
sentences) does not have, to check that what was tuned on the dev set carries over.

- academic prose: the three papers transnli implements (../shared/papers), sentence by sentence;
- technical documentation: the DESCRIPTION paragraphs of the section-1 man pages installed on the
  machine that built the set (Debian 12), troff markup removed, at most 3 sentences a page.

Kept: sentences of 6-28 words, made of letters and ordinary punctuation only (no digits, formulas,
code, citations or URLs), which start with a capital and end with a full stop; each sentence's
premise is the sentence before it in the same text (the generator needs a premise; the quality
judgement looks at H and H' only). A fixed-seed sample of N per genre is written as
benchmarks/data/quality_test_sentences.jsonl. The output is kept in the repository: the man pages
differ between machines, so rerunning elsewhere gives another sample.

    .venv/bin/python benchmarks/quality_test_sentences.py --papers ../shared/papers --per-genre 220
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "quality_test_sentences.jsonl"
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
CLEAN = re.compile(r"^[A-Z][A-Za-z ,;:'()-]*[a-z]\.$")
SPLIT = re.compile(r"(?<=[a-z]\.)\s+(?=[A-Z])")


def sentences(text: str) -> list[str]:
    text = re.sub(r"\s+", " ", text)
    return [s.strip() for s in SPLIT.split(text)]


def keep(s: str) -> bool:
    n = len(WORD.findall(s))
    return (
        6 <= n <= 28
        and bool(CLEAN.match(s))
        and " et al" not in s
        and "e.g" not in s
        and "i.e" not in s
    )


def paper_paragraphs(folder: Path):
    for path in sorted(folder.glob("*")):
        for para in re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace")):
            if para.lstrip().startswith(("#", "|", "$", "```")):
                continue
            yield path.stem, para


def man_paragraphs(folder: Path):
    for path in sorted(folder.glob("*.1.gz")):
        try:
            raw = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        except OSError:
            continue
        m = re.search(r"^\.SH\s+\"?DESCRIPTION\"?\s*$(.*?)^\.SH", raw, flags=re.M | re.S)
        if not m:
            continue
        body = m.group(1)
        paras = re.split(r"^\.(?:PP|P|LP|TP|IP|sp|br)\b.*$", body, flags=re.M)
        for para in paras:
            lines = [ln for ln in para.splitlines() if not ln.startswith((".", "'", '\\"'))]
            text = " ".join(lines)
            if "\\f" in text or "\\(" in text or "\\-" in text or "\\*" in text:
                continue  # markup inside: names of options and files, not prose
            yield path.name.removesuffix(".1.gz"), text


def collect(paragraphs, genre: str) -> list[dict]:
    rows = []
    for source, para in paragraphs:
        prev = ""
        for s in sentences(para):
            if keep(s) and prev:
                rows.append(
                    {
                        "id": f"{genre}:{source}:{len(rows)}",
                        "premise": prev,
                        "hypothesis": s,
                        "genre": genre,
                        "source": source,
                    }
                )
            prev = s
    seen, unique, per_source = set(), [], {}
    for r in rows:
        # at most 3 sentences of one man page: thousands of gcloud pages would otherwise dominate
        if r["hypothesis"] not in seen and (
            genre != "manpage" or per_source.get(r["source"], 0) < 3
        ):
            seen.add(r["hypothesis"])
            per_source[r["source"]] = per_source.get(r["source"], 0) + 1
            unique.append(r)
    return unique


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--papers", type=Path, required=True)
    ap.add_argument("--man", type=Path, default=Path("/usr/share/man/man1"))
    ap.add_argument("--per-genre", type=int, default=220)
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    out = []
    for genre, paras in (
        ("academic", paper_paragraphs(args.papers)),
        ("manpage", man_paragraphs(args.man)),
    ):
        rows = collect(paras, genre)
        picked = rng.sample(rows, min(args.per_genre, len(rows)))
        print(f"{genre}: {len(rows)} usable sentences, {len(picked)} sampled")
        out += sorted(picked, key=lambda r: r["id"])
    args.out.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8"
    )
    print(f"wrote {len(out)} sentences to {args.out}")


if __name__ == "__main__":
    main()
