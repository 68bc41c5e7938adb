"""Build the fifth set of quality *genre* sentences: real English of seven genres that no judged
set has yet (neither genre set 1, 2, 3 or 4, nor the dev or test set), for more hand-judged
candidates.

- spaceopera: what is told and said in the mission conversations of Endless Sky
  (endless-sky-data, data/*.txt: the quoted lines of each `conversation` block, second-person
  narration of a space captain's travels and what the people met say), one text a
  conversation, one collection a data file (a storyline, a people's missions, the jobs);
- worlds: the descriptions of the planets and stations a player lands on, in Endless Sky's
  map (endless-sky-data, data/map.txt, the `description` lines of a `planet`) and Naev's assets
  (naev-data, dat/assets/*.xml, `<description>`): landscapes, peoples, industries and histories of
  invented worlds, one text a world, one collection a game;
- xenobiology: FreeOrion's descriptions of its alien species and space monsters (freeorion-data,
  default/stringtables/en.txt, the SP_*_DESC and SM_*_DESC entries: bodies, societies,
  histories), one text and one collection an entry; the *_GAMEPLAY_DESC entries (game rules) and
  heading lines ("Society:") are left out;
- chemistry: Kalzium's glossaries of chemical concepts and laboratory tools (kalzium-data,
  kalzium/data/knowledge.xml and tools.xml, `<desc>`) and the origins of the elements' names
  (libkdeedu/data/elements.xml, bo:nameOrigin), one text an entry, one collection a file;
- chess: the commentary of PyChess's chess lectures (pychess, learn/lectures/*.txt, the `k`
  lines a lecturer says between moves, joined: one remark runs over several) and of its Lichess
  studies (learn/lessons/*.pgn, the `{...}` comments without Lichess' board-drawing marks), one
  text a lecture or a study chapter, one collection a lecture or a study;
- city: LinCity-NG's help (lincity-ng-data, help/en/*.xml, `<p style="hp">`): what the buildings
  of a city need and make (jobs, food, goods, coal, pollution, money), one collection a page;
- procedures: the Debian Developer's Reference (developers-reference, HTML, one collection a
  chapter; the one-page edition, which repeats them, the index and the search page are left
  out): how a Debian developer joins, uploads, hands over and orphans packages.

Sentences are cut and kept by the rules of benchmarks/quality_genres_sentences.py, with set 2's HTML
helpers and set 3's cut rule and sampling (all imported, not copied): 6-28 words, letters and
ordinary punctuation only, a capital first and . ! or ? last (so a line with a game's placeholder,
"<ship>", "[[KEY]]", or a chess move, "3. Nd2", is dropped); the premise is the sentence before it
in the same text. Dropped: a row whose premise had a code span or whose premise or sentence ends in
an abbreviation (set 3's rule), and a sentence already in the dev, test or genre sets 1-4 (same
hypothesis text) or in an earlier genre of this set. Every row names its source: package, version
(from the package's DEBIAN/control), the file's installed path and the place in it. A fixed-seed
sample of N per genre, spread evenly over the genre's collections, is written to
benchmarks/data/quality_genres5_sentences.jsonl (kept in the repository: the Debian packages differ
between releases). xenobiology (308), chemistry (96) and city (294) have fewer usable sentences than
N and are taken whole.

Not used: the sources and genres of the other judged sets (dev: WordNet examples; test: man pages,
papers; set 1: news, reviews, chatterbot chats, the Emacs and vim tutorials, the Debian Handbook;
set 2: licences, the Debian Constitution and Social Contract, The Devil's Dictionary, GCIDE
quotations, FOLDOC and the Jargon File, LibreOffice help, solitaire and backgammon rules, R data
sets; set 3: the King James Bible, Stellarium's sky cultures, Debian package descriptions, the
Python tutorial, Debian Policy, Wesnoth's campaigns, freeciv's nation legends; set 4: the Debian,
KStars and Crawl FAQs, Crawl's descriptions, KStars' AstroInfo, NetHack's Pratchett tribute and
encyclopedia, Colossal Cave Adventure, Warzone 2100's briefings), anything ../shared/RESOURCES.md
reserves for measurement (gensim test corpora, fortune files, movie-review sentences), and news,
film reviews, sayings, NLI hypotheses, man pages and papers. Also left out: gbrainy's puzzles
(games.xml and verbal_analogies.xml: a few dozen prose texts, most with a "[number]" placeholder);
FreeDroid RPG's dialogues (character chat, genre set 1's dialogue); Naev's mission scripts (the same
space-opera genre as Endless Sky's, in Lua strings); Kalzium's handbook (the program's manual) and
its element data other than the name origins (numbers); Endless Sky's spaceport descriptions (worlds
has enough sentences without them) and its ship and outfit blurbs (an equipment catalogue): both are
left for a later set; doc-debian (set 2) and debian-history (set 3 rejected it: few sentences,
news-like); Tux Paint's stamps (set 3 rejected them: nearly all under six words).

Sources (Debian 12 packages, extracted, not installed: `apt-get download` and `dpkg-deb -R`
into one folder a package under SRC, which keeps each package's DEBIAN/control for its version):

    mkdir -p /work/src5/debs && cd /work/src5/debs && apt-get download endless-sky-data \
        naev-data freeorion-data kalzium-data pychess lincity-ng-data developers-reference
    # (the versions here: endless-sky-data 0.9.8-1.2, naev-data 0.8.2-1, freeorion-data
    # 0.4.10.2-1, kalzium-data 4:22.12.3-1, pychess 1.0.3-1, lincity-ng-data
    # 2.9~git20150314-5, developers-reference 12.18)
    cd /work/src5 && for d in debs/*.deb; do dpkg-deb -R "$d" "$(dpkg-deb -f "$d" Package)"; done
    .venv/bin/python benchmarks/quality_genres5_sentences.py --src /work/src5 --per-genre 500
"""

from __future__ import annotations

import argparse
import functools
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality_genres2_sentences import (  # noqa: E402 - one set of cleaning rules for all sets
    html_paragraphs,
    untag,
)
from quality_genres3_sentences import (  # noqa: E402 - one way to sample a genre set
    judged_hypotheses,
    sample_genres,
)
from quality_genres_sentences import write_sentences  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
OUT = DATA / "quality_genres5_sentences.jsonl"
JUDGED = ("quality_dev_sentences.jsonl", "quality_test_sentences.jsonl")
JUDGED += tuple(f"quality_genres{n}_sentences.jsonl" for n in ("", "2", "3", "4"))
SRC = Path("/work/src5")
ENDLESS_SKY = "endless-sky-data", "usr/share/games/endless-sky/data"
NAEV = "naev-data", "usr/share/naev/dat/assets"
FREEORION = "freeorion-data", "usr/share/games/freeorion/default/stringtables/en.txt"
KALZIUM = "kalzium-data", "usr/share/kalzium/data"
PYCHESS = "pychess", "usr/share/pychess/learn"
LINCITY = "lincity-ng-data", "usr/share/games/lincity-ng/help/en"
# The elements' data of Kalzium (in kalzium-data, beside its glossaries)
ELEMENTS = "usr/share/libkdeedu/data/elements.xml"
DEVREF = "developers-reference", "usr/share/developers-reference"
SOURCES = (ENDLESS_SKY, NAEV, FREEORION, KALZIUM, PYCHESS, LINCITY, DEVREF)
# A line of Endless Sky's data files: its indent (tabs) and its text
ES_LINE = re.compile(r"^(\t*)(.*)$")
# A `description` line of an Endless Sky block (one tab in): `...` or "..."
ES_DESCRIPTION = re.compile(r"^\tdescription\s+(?:`([^`]*)`|\"([^\"]*)\")\s*$")
# A quoted string of Endless Sky's data: `...` or "..."
ES_STRING = re.compile(r'^(?:`([^`]*)`|"([^"]*)")$')
# A FreeOrion stringtable entry: a KEY line, then one line or a '''...''' block
FO_ENTRY = re.compile(r"^([A-Z][A-Z0-9_]*)\n(?:'''(.*?)'''|([^\n]*))$", re.S | re.M)
# The lore of a species or a space monster (the *_GAMEPLAY_DESC entries say how it plays)
FO_DESC = re.compile(r"^(SP|SM)_(?!.*GAMEPLAY)[A-Z0-9_]+_DESC$")
# Markup of FreeOrion ([[KEY]] links, <i>) and Kalzium ([i]...[/i])
BRACKET_TAG = re.compile(r"\[/?[a-z]\]")
DEVREF_SKIP = {"index", "search", "developers-reference"}


def package_version(src: Path, package: str) -> str:
    control = (src / package / "DEBIAN" / "control").read_text(encoding="utf-8")
    return re.search(r"^Version: (.*)$", control, re.M).group(1)


def where(src: Path, source: tuple[str, str], path: Path) -> str:
    """A row's provenance: package, version and the file's path once installed."""
    package, _ = source
    return f"{package} {package_version(src, package)}:/{path.relative_to(src / package)}"


def folder(src: Path, source: tuple[str, str]) -> Path:
    return src / source[0] / source[1]


# A text is (collection, source, [(place, paragraph)]): the premise never crosses a text.


def es_blocks(path: Path, keyword: str):
    """The blocks of an Endless Sky data file that open with `keyword` (a line of its own, or
    followed by a name): (line number, the quoted strings inside, in order)."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    i = 0
    while i < len(lines):
        indent, text = ES_LINE.match(lines[i]).groups()
        if text == keyword or text.startswith(keyword + " "):
            start, strings = i, []
            i += 1
            while i < len(lines) and (
                not lines[i].strip() or len(ES_LINE.match(lines[i]).group(1)) > len(indent)
            ):
                m = ES_STRING.match(lines[i].strip())
                if m:
                    strings.append(m.group(1) if m.group(1) is not None else m.group(2))
                i += 1
            yield start + 1, strings
        else:
            i += 1


def spaceopera_texts(src: Path):
    """What is told and said in Endless Sky's mission conversations, one text a conversation,
    one collection a data file (a storyline or a people)."""
    for path in sorted(folder(src, ENDLESS_SKY).glob("**/*.txt")):
        for line, strings in es_blocks(path, "conversation"):
            paras = [(f"line{line}.p{i}", s) for i, s in enumerate(strings)]
            yield path.stem, where(src, ENDLESS_SKY, path), paras


def es_descriptions(lines: list[str], line: int) -> list[tuple[str, str]]:
    """The `description` lines of the top-level Endless Sky block that opens at `line` (1-based):
    (place, text), up to the next top-level line."""
    paras = []
    for k in range(line, len(lines)):
        if lines[k] and not lines[k].startswith("\t"):
            break
        m = ES_DESCRIPTION.match(lines[k])
        if m:
            paras.append((f"line{k + 1}", m.group(1) or m.group(2) or ""))
    return paras


def naev_descriptions(path: Path) -> list[tuple[str, str]]:
    """The `<description>` texts of a Naev data file: (place, text)."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    found = re.findall(r"<description>(.*?)</description>", raw, re.S)
    return [(f"description{i}", untag(d)) for i, d in enumerate(found)]


def worlds_texts(src: Path):
    """The descriptions of the planets and stations a player lands on: Endless Sky's map
    (`planet` blocks' `description` lines) and Naev's assets (`<description>`), one text a
    world."""
    path = folder(src, ENDLESS_SKY) / "map.txt"
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for line, _ in es_blocks(path, "planet"):
        yield "endless-sky", where(src, ENDLESS_SKY, path), es_descriptions(lines, line)
    for path in sorted(folder(src, NAEV).glob("*.xml")):
        yield "naev", where(src, NAEV, path), naev_descriptions(path)


def fo_entries(src: Path, keys: re.Pattern):
    """(key, source, paragraphs) of each entry of FreeOrion's English stringtable whose key
    `keys` matches: one paragraph a line, a heading line ("Society:") is no sentence, and a link
    to another entry ([[...]]) spoils its sentence."""
    path = folder(src, FREEORION)
    raw = path.read_text(encoding="utf-8", errors="replace")
    for m in FO_ENTRY.finditer(raw):
        key = m.group(1)
        if not keys.match(key):
            continue
        body = m.group(2) if m.group(2) is not None else m.group(3)
        body = re.sub(r"\[\[[^\]]*\]\]", " \x00 ", untag(body))
        lines = [ln.strip() for ln in body.splitlines()]
        paras = [(f"{key}.line{i}", ln) for i, ln in enumerate(lines) if ln and ln[-1] != ":"]
        yield key, where(src, FREEORION, path), paras


def xenobiology_texts(src: Path):
    """FreeOrion's descriptions of its species and space monsters (body, society, history),
    one text and one collection an entry."""
    yield from fo_entries(src, FO_DESC)


def chemistry_texts(src: Path):
    """Kalzium's glossary of chemistry (its concepts and its laboratory tools, one text an
    entry, one collection a glossary) and where the elements' names come from (one text an
    element)."""
    for name in ("knowledge", "tools"):
        path = folder(src, KALZIUM) / f"{name}.xml"
        raw = path.read_text(encoding="utf-8", errors="replace")
        for item in re.findall(r"<item>(.*?)</item>", raw, re.S):
            title = untag(re.search(r"<name>(.*?)</name>", item, re.S).group(1)).strip()
            desc = re.search(r"<desc>(.*?)</desc>", item, re.S)
            if desc:
                text = BRACKET_TAG.sub("", untag(desc.group(1)))
                yield name, where(src, KALZIUM, path), [(title, text)]
    path = src / KALZIUM[0] / ELEMENTS
    raw = path.read_text(encoding="utf-8", errors="replace")
    for atom in re.findall(r"<atom\b[^>]*>(.*?)</atom>", raw, re.S):
        symbol = re.search(r'dictRef="bo:symbol"[^>]*value="([^"]+)"', atom)
        origin = re.search(r'dictRef="bo:nameOrigin" xml:lang="en">(.*?)</scalar>', atom, re.S)
        if symbol and origin:
            paras = [(symbol.group(1), untag(origin.group(1)))]
            yield "name-origins", where(src, KALZIUM, path), paras


def chess_texts(src: Path):
    """The commentary of PyChess's chess lectures (the `k` lines, what the lecturer says between
    moves) and of its Lichess studies (PGN `{...}` comments), one text a lecture or a study
    chapter, one collection a lecture or a study."""
    base = folder(src, PYCHESS)
    for path in sorted((base / "lectures").glob("*.txt")):
        said = [
            ln[2:]
            for ln in path.read_text(encoding="utf-8", errors="replace").splitlines()
            if ln.startswith("k ")
        ]
        # A remark is often cut over several `k` lines with moves between: one paragraph
        yield path.stem, where(src, PYCHESS, path), [("k", " ".join(said))]
    for path in sorted((base / "lessons").glob("*.pgn")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        study = re.sub(r"^lichess_study_|_by_.*$", "", path.stem)
        for n, game in enumerate(re.split(r"\n(?=\[Event )", raw)):
            comments = re.findall(r"\{([^}]*)\}", game)
            # Lichess' own annotations ([%cal ...], [%csl ...]) draw arrows on the board
            paras = [
                (f"game{n}.c{i}", re.sub(r"\[%[^\]]*\]", " ", c)) for i, c in enumerate(comments)
            ]
            yield study, where(src, PYCHESS, path), paras


def city_texts(src: Path):
    """LinCity-NG's help: what each building of a city does, needs and makes (jobs, goods,
    pollution, money), one text and one collection a page."""
    for path in sorted(folder(src, LINCITY).glob("*.xml")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        paras = html_paragraphs(raw, r'<p style="hp">(.*?)</p>')
        yield path.stem, where(src, LINCITY, path), [(f"p{i}", p) for i, p in enumerate(paras)]


def procedures_texts(src: Path):
    """The Debian Developer's Reference, one collection a chapter (the one-page edition repeats
    them, the index and search pages only link)."""
    for path in sorted(folder(src, DEVREF).glob("*.html")):
        if path.stem in DEVREF_SKIP:
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        paras = html_paragraphs(raw, r"<p\b[^>]*>(.*?)</p>")
        yield path.stem, where(src, DEVREF, path), [(f"p{i}", p) for i, p in enumerate(paras)]


GENRES = {
    "spaceopera": spaceopera_texts,
    "worlds": worlds_texts,
    "xenobiology": xenobiology_texts,
    "chemistry": chemistry_texts,
    "chess": chess_texts,
    "city": city_texts,
    "procedures": procedures_texts,
}


def build_from_packages(argv, doc: str, *, sources, genres, judged, src, seed, out) -> None:
    """The command line of a genre set read from extracted Debian packages (this one and later
    ones): each genre's texts from --src, a fixed-seed sample per genre, written to --out."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=src, help="one extracted package a folder")
    ap.add_argument("--per-genre", type=int, default=500)
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--out", type=Path, default=out)
    args = ap.parse_args(argv)
    for source in sources:
        for p in (args.src / source[0] / "DEBIAN" / "control", folder(args.src, source)):
            if not p.exists():
                raise SystemExit(f"{p}: not found (see this script's docstring for how to get it)")
    readers = {g: functools.partial(texts, args.src) for g, texts in genres.items()}
    rng = random.Random(args.seed)
    write_sentences(
        args.out, sample_genres(readers, judged_hypotheses(judged), args.per_genre, rng)
    )


def main(argv=None) -> None:
    build_from_packages(
        argv,
        __doc__,
        sources=SOURCES,
        genres=GENRES,
        judged=JUDGED,
        src=SRC,
        seed=20261201,
        out=OUT,
    )


if __name__ == "__main__":
    main()
