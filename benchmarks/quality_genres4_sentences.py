"""Build the fourth set of quality *genre* sentences: real English of seven genres that no judged
set has yet (neither genre set 1, 2 or 3, nor the dev or test set), for more hand-judged
candidates.

- faq: questions and their answers: the Debian FAQ (debian-faq, HTML; a question is a section
  title, one collection a chapter), the KStars handbook's FAQ (kstars-data, faq.docbook) and
  Dungeon Crawl's FAQ (crawl-common, dat/database/FAQ.txt), one text a chapter or a question;
- bestiary: the in-game descriptions of Dungeon Crawl Stone Soup (crawl-common,
  dat/descript/*.txt): its monsters, items, artefacts, spells, gods, places and peoples, one text
  an entry, one collection a file; the quotations (literature), the tutorial, hints and commands
  (instructions) and the game-rule files (abilities, mutations, skills, status) are left out;
- astronomy: the AstroInfo articles of the KStars handbook (kstars-data, the `ai-*` sections of
  the DocBook sources): sky coordinates, time, telescopes, stars and galaxies explained to the
  public, one collection an article;
- fiction: the passages of Terry Pratchett's Discworld novels in NetHack's tribute file
  (nethack-common, `tribute` in the nhdat archive, read with the package's own `dlb`), one text a
  passage, one collection a novel; the "Death Quotes" section (sayings) is left out;
- adventure: the messages of Colossal Cave Adventure (open-adventure, the NUL-ended strings of
  /usr/games/advent: rooms, objects, hints and replies told to "you"), one text the game, in the
  program's order; a sentence with a "%d" placeholder or a word cut at a line's end is dropped;
- lore: the entries of NetHack's encyclopedia (nethack-common, `data` in the nhdat archive: gods,
  myths, monsters and weapons described, often in a quotation from fantasy fiction), one text an
  entry, one collection its first letter; the citation lines ("[ The Columbia Encyclopedia ]"),
  verse (every line capitalised) and the entries quoting The Devil's Dictionary (set 2) are left
  out;
- briefing: the mission briefings, radio transmissions and cut-scene narration of Warzone 2100's
  three campaigns (warzone2100-data, base.wz: messages/strings/cam*strings.txt and
  sequenceaudio/*/*.txt, the `_("...")` strings), one text a file, one collection a campaign.

Sentences are cut and kept by the rules of benchmarks/quality_genres_sentences.py, with set 2's
HTML and plain-text helpers and set 3's cut rule (all imported, not copied): 6-28 words, letters
and ordinary punctuation only, a capital first and . ! or ? last; the premise is the sentence
before it in the same text. Dropped: a row whose premise had a code span or whose premise or
sentence ends in an abbreviation (set 3's rule), and a sentence already in the dev, test or genre
sets 1-3 (same hypothesis text) or in an earlier genre of this set (the encyclopedia quotes the
novels), so no text is judged twice. Every row names its source: package, version, file and
place. A fixed-seed sample of N per genre, spread evenly over the genre's collections, is
written to benchmarks/data/quality_genres4_sentences.jsonl (kept in the repository: the Debian
packages differ between releases). astronomy (281) and briefing (271) have fewer usable
sentences than N and are taken whole.

Not used: the sources and genres of the other judged sets (dev: WordNet examples; test: man
pages, papers; set 1: news, reviews, chatterbot chats, the Emacs and vim tutorials, the Debian
Handbook; set 2: licences, The Devil's Dictionary, GCIDE quotations, FOLDOC and the Jargon File,
LibreOffice help, solitaire and backgammon rules, R data sets; set 3: the King James Bible,
Stellarium's sky cultures, Debian package descriptions, the Python tutorial, Debian Policy,
Wesnoth's campaigns, freeciv's nation legends), anything ../shared/RESOURCES.md reserves for
measurement (gensim test corpora, fortune files, movie-review sentences), and news, film
reviews, sayings and NLI hypotheses. Also left out: recipes (gnome-recipes is not in Debian 12,
gourmand and kookbook ship no recipes, the recipe-scrapers sdists no test pages); the Python
port of Adventure (adventure 1.7 sdist: its advent.dat is all in capitals); NetHack's quest texts
(quest.dat is scrambled), rumours and oracles (sayings); Crawl's quotations (literature, set 2's
genre) and monster speech (templates with @placeholders@); Warzone 2100's research messages
(headings, no sentences) and campaign scripts (objective lines without a full stop); the GNU
Manifesto (not in Debian's emacs-common); GNU Solfege's help (a few theory pages, mostly the
program's manual); GCompris (its activity texts are compiled into the program); the test data of
the markovify, email_reply_parser, summa, sumy and yake sdists (none ships English prose);
Widelands' campaigns (fantasy, Wesnoth's genre in set 3); 0ad-data-common (fonts and settings).

Sources (Debian 12 here):

    apt-get install --no-install-recommends debian-faq crawl-common kstars-data \
        nethack-common open-adventure warzone2100-data
    .venv/bin/python benchmarks/quality_genres4_sentences.py --per-genre 620
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality_genres2_sentences import (  # noqa: E402 - one set of cleaning rules for all sets
    blocks,
    html_paragraphs,
)
from quality_genres3_sentences import (  # noqa: E402 - one way to sample a genre set
    judged_hypotheses,
    sample_genres,
)
from quality_genres_sentences import (  # noqa: E402
    debian_version,
    write_sentences,
)

DATA = Path(__file__).resolve().parent / "data"
OUT = DATA / "quality_genres4_sentences.jsonl"
JUDGED = ("quality_dev_sentences.jsonl", "quality_test_sentences.jsonl")
JUDGED += tuple(f"quality_genres{n}_sentences.jsonl" for n in ("", "2", "3"))
FAQ = Path("/usr/share/doc/debian/FAQ")
# The contents page only links; faqinfo is about the FAQ's authors and licence
FAQ_SKIP = {"index", "faqinfo"}
# A question is the title of its section ("1.2. What is Debian GNU/Linux?")
FAQ_PARAGRAPH = r'<(?:p|h[23] class="title")>(.*?)</(?:p|h[23])>'
SECTION_NUMBER = re.compile(r"^\s*\d+(?:\.\d+)*\.\s+")
CRAWL = Path("/usr/share/crawl/dat/descript")
CRAWL_FILES = (
    *("monsters", "items", "unrand", "spells", "gods", "branches", "features", "species"),
    *("backgrounds", "clouds", "cards"),
)
CRAWL_FAQ = Path("/usr/share/crawl/dat/database/FAQ.txt")
KSTARS = Path("/usr/share/doc/HTML/en/kstars")
# The handbook's own entities; any other stays as "&name;" and its sentence is dropped
KSTARS_ENTITIES = {"kstars": "KStars", "kde": "KDE", "GUI": "GUI", "FAQ": "FAQ"}
NETHACK = Path("/usr/lib/games/nethack")
ADVENT = Path("/usr/games/advent")
# The encyclopedia quotes The Devil's Dictionary (genre set 2's satire)
LORE_SKIP = re.compile(r"Bierce|Devil's Dictionary")
WARZONE = Path("/usr/share/games/warzone2100/base.wz")
# The spoken transmissions of the cut scenes and the briefings of the missions, by campaign
WARZONE_FILES = re.compile(r"^(?:sequenceaudio/(cam\d)/.*|messages/strings/(cam\d)strings)\.txt$")
# A translatable string: _("...")
WZ_STRING = re.compile(r'_\("((?:[^"\\]|\\.)*)"\)')
# A compound word cut at the end of a line ("double-\nheaded"): joined, the hyphen kept
HYPHEN_BREAK = re.compile(r"(?<=[A-Za-z]-)\n[ \t]*(?=[A-Za-z])")
# A citation line of the encyclopedia: "[ The Tough Guide to Fantasyland, by Diana Wynne Jones ]"
CITATION = re.compile(r"^\s*\[.*\]\s*$")


# A text is (collection, source, [(place, paragraph)]): the premise never crosses a text.


def debian_faq_texts():
    where = f"debian-faq {debian_version('debian-faq')}"
    for path in sorted(FAQ.glob("*.en.html")):
        name = path.name.removesuffix(".en.html")
        if name in FAQ_SKIP:
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        # The table of contents repeats every question as a link: keep the page's body only
        raw = re.sub(r'<div class="toc">.*?</dl></div>', " ", raw, flags=re.S)
        paras = [SECTION_NUMBER.sub("", p) for p in html_paragraphs(raw, FAQ_PARAGRAPH)]
        yield name, f"{where}:{path}", [(f"p{i}", p) for i, p in enumerate(paras)]


def kstars_faq_texts():
    """The questions and answers of the KStars handbook, one text a question."""
    path = KSTARS / "faq.docbook"
    raw = kstars_entities(path.read_text(encoding="utf-8", errors="replace"))
    where = f"kstars-data {debian_version('kstars-data')}:{path}"
    for i, entry in enumerate(re.findall(r"<qandaentry>(.*?)</qandaentry>", raw, re.S)):
        paras = html_paragraphs(entry, r"<para\b[^>]*>(.*?)</para>")
        yield "kstars-faq", where, [(f"q{i}.p{k}", p) for k, p in enumerate(paras)]


def crawl_faq_texts():
    """Crawl's FAQ: "Q:key" and "A:key" entries, one text a question and its answer."""
    path = CRAWL_FAQ
    where = f"crawl-common {debian_version('crawl-common')}:{path}"
    entries: dict[str, list[str]] = {}
    for entry in path.read_text(encoding="utf-8", errors="replace").split("%%%%")[1:]:
        lines = [ln for ln in entry.strip().splitlines() if not ln.startswith("#")]
        m = re.match(r"^([QA]):(.*)$", lines[0]) if lines else None
        if m:
            body = re.sub(r"^A:\s*", "", "\n".join(lines[1:]).strip())
            body = HYPHEN_BREAK.sub("", body)
            entries.setdefault(m.group(2).strip(), []).append(body)
    for key, bodies in entries.items():
        paras = [b for body in bodies for b in blocks(body)]
        yield "crawl-faq", where, [(f"{key}.p{i}", p) for i, p in enumerate(paras)]


def faq_texts():
    yield from debian_faq_texts()
    yield from kstars_faq_texts()
    yield from crawl_faq_texts()


def bestiary_texts():
    where = f"crawl-common {debian_version('crawl-common')}"
    for stem in CRAWL_FILES:
        path = CRAWL / f"{stem}.txt"
        raw = path.read_text(encoding="utf-8", errors="replace")
        for entry in raw.split("%%%%"):
            lines = [ln for ln in entry.splitlines() if not ln.startswith("#")]
            text = "\n".join(lines).strip()
            if "\n" not in text:
                continue  # a name alone, or an entry that only points to another
            name, body = text.split("\n", 1)
            body = HYPHEN_BREAK.sub("", body)
            paras = [(f"{name.strip()}.p{i}", b) for i, b in enumerate(blocks(body))]
            yield stem, f"{where}:{path}", paras


def kstars_entities(raw: str) -> str:
    return re.sub(r"&(\w+);", lambda m: KSTARS_ENTITIES.get(m.group(1), m.group(0)), raw)


def astronomy_texts():
    where = f"kstars-data {debian_version('kstars-data')}"
    for path in sorted(KSTARS.glob("*.docbook")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        head = re.search(r'<sect1 id="(ai-[^"]+)"', raw)
        if not head or head.group(1) == "ai-contents":
            continue  # a chapter of the program's manual, or AstroInfo's table of contents
        raw = kstars_entities(raw)
        paras = html_paragraphs(raw, r"<para\b[^>]*>(.*?)</para>")
        yield (
            head.group(1),
            f"{where}:{path}",
            [(f"p{i}", p) for i, p in enumerate(paras)],
        )


def nethack_file(name: str) -> str:
    """One file of NetHack's nhdat archive, extracted by the package's own dlb tool."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [str(NETHACK / "dlb"), "xf", str(NETHACK / "nhdat"), name],
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        return (Path(tmp) / name).read_text(encoding="latin-1")


def fiction_texts():
    where = f"nethack-common {debian_version('nethack-common')}:{NETHACK}/nhdat/tribute"
    title = ""
    passage: list[str] | None = None
    for line in nethack_file("tribute").splitlines():
        if line.startswith("%title "):
            title = re.sub(r"\s*\(\d+\)\s*$", "", line[len("%title ") :])
        elif line.startswith("%passage "):
            passage, number = [], line.split()[1]
        elif line.startswith("%e passage") and passage is not None:
            if title != "Death Quotes":  # sayings, held out of every set
                body = "\n".join(ln for ln in passage if not CITATION.match(ln))
                body = HYPHEN_BREAK.sub("", body)
                body = body.replace("[...]", " ").replace("--", " -- ")
                paras = [(f"{title}.passage{number}.p{i}", b) for i, b in enumerate(blocks(body))]
                yield title, where, paras
            passage = None
        elif passage is not None and not line.startswith("#"):
            passage.append(line)


def adventure_texts():
    """Every message of the game, in the order the program holds them (rooms, then objects, ...)."""
    where = f"open-adventure {debian_version('open-adventure')}:{ADVENT}"
    raw = ADVENT.read_bytes()
    paras, start = [], 0
    for chunk in raw.split(b"\x00"):
        if len(chunk) >= 20 and chunk.isascii() and b" " in chunk:
            # A "%d" is filled in at play: the sentence is not what the player reads
            text = re.sub(r"%\w", " \x00 ", chunk.decode("ascii"))
            # The 1970s text also cuts plain words at a line's end ("under-\ngrowth"): such a
            # sentence cannot be mended, so it is dropped like a placeholder
            text = re.sub(r"(?<=[A-Za-z])-\n\s*(?=[a-z])", "-\x00", text)
            paras.append((f"0x{start:x}", text))
        start += len(chunk) + 1
    yield "advent", where, paras


def briefing_texts():
    where = f"warzone2100-data {debian_version('warzone2100-data')}:{WARZONE}"
    with zipfile.ZipFile(WARZONE) as z:
        for name in sorted(z.namelist()):
            m = WARZONE_FILES.match(name)
            if not m:
                continue
            raw = z.read(name).decode("utf-8", errors="replace")
            raw = re.sub(r"^\s*//.*$", "", raw, flags=re.M)  # strings the game no longer shows
            lines = [
                (f"string{i}", text.replace('\\"', '"'))
                for i, text in enumerate(WZ_STRING.findall(raw))
            ]
            collection = next(g for g in m.groups() if g)
            yield collection, f"{where}/{name}", lines


def is_verse(para: str) -> bool:
    lines = [ln.strip() for ln in para.splitlines() if ln.strip()]
    return len(lines) > 1 and all(ln[:1].isupper() for ln in lines)


def lore_texts():
    """The encyclopedia: a header line, the text's offset (hex), an index of entries (their keys,
    then "offset,lines"), then the entries' text."""
    where = f"nethack-common {debian_version('nethack-common')}:{NETHACK}/nhdat/data"
    raw = nethack_file("data")
    start = int(raw.splitlines()[1], 16)
    text = raw[start:]
    keys: list[str] = []
    for line in raw[:start].splitlines()[2:]:
        m = re.match(r"^(\d+),(\d+)$", line.strip())
        if not m:
            keys.append(line.strip().lstrip("~*").strip())
            continue
        name, keys = keys[0], []
        entry = text[int(m.group(1)) :].splitlines()[: int(m.group(2))]
        if any(LORE_SKIP.search(ln) for ln in entry if CITATION.match(ln)):
            continue
        body = HYPHEN_BREAK.sub("", "\n".join(ln for ln in entry if not CITATION.match(ln)))
        paras = [" ".join(b.split()) for b in re.split(r"\n\s*\n", body) if not is_verse(b)]
        yield name[:1].upper(), where, [(f"{name}.p{i}", p) for i, p in enumerate(paras)]


GENRES = {
    "faq": faq_texts,
    "bestiary": bestiary_texts,
    "astronomy": astronomy_texts,
    "fiction": fiction_texts,
    "adventure": adventure_texts,
    "lore": lore_texts,
    "briefing": briefing_texts,
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-genre", type=int, default=620)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    for p in (
        FAQ / "basic-defs.en.html",
        CRAWL,
        KSTARS / "ai-contents.docbook",
        NETHACK / "nhdat",
        ADVENT,
        WARZONE,
    ):
        if not p.exists():
            raise SystemExit(f"{p}: not found (see this script's docstring for how to get it)")
    out = sample_genres(GENRES, judged_hypotheses(JUDGED), args.per_genre, random.Random(args.seed))
    write_sentences(args.out, out)


if __name__ == "__main__":
    main()
