"""Build the quality *genre* sentences: real English of four genres that neither the dev set
(WordNet example sentences) nor the test set (papers, man pages) has, for more judged candidates.

- news: New York Times opinion/editorial snippets (sentence-segmented articles) shipped in the
  vaderSentiment sdist, additional_resources/hutto_ICWSM_2014.tar.gz, nytEditorialSnippets_*;
- reviews: Amazon customer review snippets (Hu & Liu 2004) from the same archive. They are all in
  lower case: the first letter and the pronoun "i" are capitalised, nothing else is changed;
- dialogue: the English conversations of the chatterbot-corpus sdist (turns of short chats;
  coding.yml is left out: it is programming trivia, not conversation);
- instructions: the Emacs tutorial (Debian emacs-common), vimtutor (vim-runtime) and the Debian
  Administrator's Handbook (debian-handbook, HTML; a sentence with a code span is dropped).

The movie-review snippets and tweets of the vaderSentiment archive are not used (movie reviews are
reserved for measurement, ../shared/RESOURCES.md). Kept: sentences of 6-28 words, letters and
ordinary punctuation only (no digits, code, key names or URLs), which start with a capital and end
with . ! or ?; each sentence's premise is the sentence before it in the same text (the previous
turn in a conversation, the previous snippet of the same article or review). Every row names its
source: package, version, file and place in the file. A fixed-seed sample of N per genre (spread
evenly over the texts of a genre) is written to benchmarks/data/quality_genres_sentences.jsonl. The
output is kept in the repository: the Debian packages differ between releases.

Sources (Debian 12 here; the sdists are read as downloaded, nothing is installed from them):

    apt-get install --no-install-recommends emacs-common vim-runtime debian-handbook
    pip download --no-deps --no-binary :all: -d /tmp/src vaderSentiment==3.3.2 \
        chatterbot-corpus==1.3.3
    .venv/bin/python benchmarks/quality_genres_sentences.py \
        --vader /tmp/src/vaderSentiment-3.3.2.tar.gz \
        --chatterbot /tmp/src/chatterbot_corpus-1.3.3.tar.gz --per-genre 110

Reading the chatterbot YAML needs PyYAML (`pip install pyyaml` where the venv lacks it).
"""

from __future__ import annotations

import argparse
import html
import io
import json
import random
import re
import subprocess
import tarfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "quality_genres_sentences.jsonl"
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
CLEAN = re.compile(r"^[A-Z][A-Za-z ,;:'\"()-]*[a-z][.!?]$")
SPLIT = re.compile(r"(?<=[a-z][.!?])\s+(?=[A-Z\"])")
LONE_LETTER = re.compile(r"(?<![A-Za-z'-])(?![aAI]\b)[A-Za-z](?![A-Za-z'])")
ABBREV = (" et al", "e.g", "i.e", "etc.", " vs.")
QUOTES = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "''": '"', "``": '"'}
VADER_MEMBER = "additional_resources/hutto_ICWSM_2014.tar.gz"
VADER_FILES = {
    "news": "hutto_ICWSM_2014/nytEditorialSnippets_GroundTruth.txt",
    "reviews": "hutto_ICWSM_2014/amazonReviewSnippets_GroundTruth.txt",
}
DIALOGUE_SKIP = {"coding.yml"}
CODE = re.compile(
    r"<(code|pre|kbd|samp|tt)\b[^>]*>.*?</\1>|<em class=\"replaceable\">.*?</em>", re.S
)


def normalise(text: str) -> str:
    for k, v in QUOTES.items():
        text = text.replace(k, v)
    return re.sub(r"\s+", " ", text).strip()


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SPLIT.split(normalise(text)) if s.strip()]


def keep(s: str) -> bool:
    n = len(WORD.findall(s))
    return (
        6 <= n <= 28
        and bool(CLEAN.match(s))
        and s.count('"') % 2 == 0
        and s.count("(") == s.count(")")
        and not LONE_LETTER.search(s)  # key names and variables: "type C-v", "press x"
        and not any(a in s for a in ABBREV)
    )


def capitalise(s: str) -> str:
    s = re.sub(r"(?<![A-Za-z'])i(?=$|[\s,;:.!?']|'[a-z])", "I", s)
    return s[:1].upper() + s[1:]


def debian_version(package: str) -> str:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return "?"
    return out.stdout.strip() or "?"


def sdist_name(path: Path) -> str:
    """`vaderSentiment-3.3.2.tar.gz` -> `vaderSentiment==3.3.2` (the provenance of each row)."""
    stem = path.name.removesuffix(".tar.gz")
    name, _, version = stem.rpartition("-")
    return f"{name}=={version}"


# A text is (collection, source, [(place, paragraph)]): the premise never crosses a text.


def vader_texts(sdist: Path, genre: str, fix_case: bool):
    pkg = sdist_name(sdist)
    with tarfile.open(sdist) as outer:
        member = next(m for m in outer.getmembers() if m.name.endswith(VADER_MEMBER))
        inner_bytes = outer.extractfile(member).read()
    with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
        raw = inner.extractfile(VADER_FILES[genre]).read().decode("utf-8", errors="replace")
    docs: dict[str, list[tuple[str, str]]] = {}
    for line in raw.splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or "_" not in parts[0]:
            continue
        snippet = parts[2].strip()
        if fix_case:
            snippet = capitalise(snippet)
        docs.setdefault(parts[0].split("_")[0], []).append((parts[0], snippet))
    where = f"{pkg}:{VADER_MEMBER}/{VADER_FILES[genre]}"
    for paras in docs.values():
        yield genre, where, paras


def chatterbot_texts(sdist: Path):
    import yaml  # only this source needs it

    pkg = sdist_name(sdist)
    with tarfile.open(sdist) as tar:
        members = sorted(
            (m for m in tar.getmembers() if "/data/english/" in m.name and m.name.endswith(".yml")),
            key=lambda m: m.name,
        )
        for m in members:
            name = m.name.rsplit("/", 1)[1]
            if name in DIALOGUE_SKIP:
                continue
            data = yaml.safe_load(tar.extractfile(m).read().decode("utf-8"))
            path = m.name.split("/", 1)[1]
            for i, conv in enumerate(data.get("conversations") or []):
                turns = [(f"{i}.{j}", str(t)) for j, t in enumerate(conv) if isinstance(t, str)]
                yield name.removesuffix(".yml"), f"{pkg}:{path}", turns


def plain_paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def emacs_texts(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace").split("\n* COPYING")[0]
    where = f"emacs-common {debian_version('emacs-common')}:{path}"
    paras = [(f"p{i}", p) for i, p in enumerate(plain_paragraphs(text))]
    yield "emacs-tutorial", where, paras


def vimtutor_texts(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    where = f"vim-runtime {debian_version('vim-runtime')}:{path}"
    paras = [(f"p{i}", p) for i, p in enumerate(plain_paragraphs(text)) if "~~~~" not in p]
    yield "vimtutor", where, paras


def handbook_texts(folder: Path):
    version = debian_version("debian-handbook")
    for path in sorted(folder.glob("*.html")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        paras = []
        for i, body in enumerate(re.findall(r'<div class="para">(.*?)</div>', raw, re.S)):
            body = CODE.sub(" \x00 ", body)  # a code span poisons its sentence, not the paragraph
            paras.append((f"para{i}", html.unescape(re.sub(r"<[^>]+>", "", body))))
        yield "debian-handbook", f"debian-handbook {version}:{path}", paras


def collect(texts, genre: str) -> list[dict]:
    rows: list[dict] = []
    seen: set[str] = set()
    for collection, where, paras in texts:
        prev = ""
        for place, para in paras:
            for k, s in enumerate(sentences(para)):
                if keep(s) and prev and s not in seen:
                    seen.add(s)
                    rows.append(
                        {
                            "id": f"{genre}:{collection}:{len(rows)}",
                            "premise": prev,
                            "hypothesis": s,
                            "genre": genre,
                            "source": f"{where}#{place}" + (f".s{k}" if k else ""),
                            "collection": collection,
                        }
                    )
                prev = s
    return rows


def balanced_sample(rows: list[dict], n: int, rng: random.Random) -> list[dict]:
    """Spread n over the genre's collections (one tutorial must not be drowned by a handbook):
    an equal share of each, what a small one lacks taken from the others."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["collection"], []).append(r)
    picked: list[dict] = []
    left = dict(groups)
    while len(picked) < n and left:
        share = max(1, (n - len(picked)) // len(left))
        for name in sorted(left):
            pool = left[name]
            take = rng.sample(pool, min(share, len(pool), n - len(picked)))
            picked += take
            ids = {r["id"] for r in take}
            left[name] = [r for r in pool if r["id"] not in ids]
        left = {k: v for k, v in left.items() if v}
    return picked


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vader", type=Path, required=True, help="vaderSentiment-3.3.2.tar.gz sdist")
    ap.add_argument("--chatterbot", type=Path, required=True, help="chatterbot_corpus sdist")
    ap.add_argument(
        "--emacs-tutorial", type=Path, default=Path("/usr/share/emacs/28.2/etc/tutorials/TUTORIAL")
    )
    ap.add_argument("--vimtutor", type=Path, default=Path("/usr/share/vim/vim90/tutor/tutor"))
    ap.add_argument(
        "--handbook", type=Path, default=Path("/usr/share/doc/debian-handbook/html/en-US")
    )
    ap.add_argument("--per-genre", type=int, default=110)
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    for p in (args.vader, args.chatterbot, args.emacs_tutorial, args.vimtutor, args.handbook):
        if not p.exists():
            raise SystemExit(f"{p}: not found (see this script's docstring for how to get it)")
    rng = random.Random(args.seed)
    out = []
    for genre, texts in (
        ("news", vader_texts(args.vader, "news", fix_case=False)),
        ("reviews", vader_texts(args.vader, "reviews", fix_case=True)),
        ("dialogue", chatterbot_texts(args.chatterbot)),
        (
            "instructions",
            [
                *emacs_texts(args.emacs_tutorial),
                *vimtutor_texts(args.vimtutor),
                *handbook_texts(args.handbook),
            ],
        ),
    ):
        out += sample_genre(collect(texts, genre), genre, args.per_genre, rng)
    write_sentences(args.out, out)


def sample_genre(rows: list[dict], genre: str, n: int, rng: random.Random) -> list[dict]:
    """A genre's sample (balanced_sample), said with its spread over the collections, in the
    order of the rows' ids."""
    picked = balanced_sample(rows, n, rng)
    per: dict[str, int] = {}
    for r in picked:
        per[r["collection"]] = per.get(r["collection"], 0) + 1
    spread = dict(sorted(per.items()))
    print(f"{genre}: {len(rows)} usable sentences, {len(picked)} sampled {spread}")
    return sorted(picked, key=lambda r: int(r["id"].rsplit(":", 1)[1]))


def write_sentences(path: Path, rows: list[dict]) -> None:
    path.write_text(
        "".join(
            json.dumps({k: v for k, v in r.items() if k != "collection"}, ensure_ascii=False) + "\n"
            for r in rows
        ),
        encoding="utf-8",
    )
    print(f"wrote {len(rows)} sentences to {path}")


if __name__ == "__main__":
    main()
