"""Build the third set of quality *genre* sentences: real English of seven genres that no judged
set has yet (neither genre set 1 or 2, nor the dev or test set), for more hand-judged candidates.

- scripture: the King James Bible (bible-kjv-text, read with the `bible` program of bible-kjv),
  one text a chapter, one collection a book (66);
- mythology: the descriptions of Stellarium's sky cultures (stellarium-data,
  skycultures/*/description.en.utf8): the stars and constellations of Norse, Maori, Tukano,
  Chinese, Babylonian, ... lore, one collection a sky culture; the author, licence, link and
  reference sections are left out;
- software: the long descriptions of Debian 12's packages (the apt list
  bookworm/main/i18n/Translation-en), one text a package, one collection a Section (read with
  each package's version from the Packages list of the same mirror);
- programming: the Python 3.11 tutorial and HOWTOs (python3.11-doc, HTML), one collection a
  tutorial chapter or HOWTO;
- policy: the Debian Policy Manual (with its upgrading checklist) and the menu, Perl, debconf
  and autopkgtest specifications (debian-policy, HTML), one collection a document;
- fantasy: what the characters say and the narrator tells in the 16 story campaigns of The Battle
  for Wesnoth (wesnoth-1.16-*, `message=`/`story=` strings of the scenario files), one text a
  scenario, one collection a campaign;
- history: the legends of freeciv's nations (freeciv-data, nation/*.ruleset: a few sentences of
  each people's real history), one collection a region; the "Imaginary" nations are left out.

Sentences are cut and kept by the rules of benchmarks/quality_genres_sentences.py (imported, not
copied; HTML paragraphs and plain-text blocks are read by quality_genres2_sentences.py's helpers):
6-28 words, letters and ordinary punctuation only, a capital first and . ! or ? last; the premise
is the sentence before it in the same text (chapter, page, package, scenario, legend). Two more
drops here: a row whose premise had a code span (the premise would not be what the reader saw) or
whose premise or sentence ends in an abbreviation ("Dr.", "St.": the splitter cut a sentence in
two); and a sentence already in genre set 1 or 2 or in the test set (same hypothesis text), so no
text is judged twice. Every row names its source: package, version, file and place. A fixed-seed
sample of N per genre, spread evenly over the genre's collections, is written to
benchmarks/data/quality_genres3_sentences.jsonl (kept in the repository: the Debian packages and
the apt lists differ between releases and mirror dates).

Not used: the sources of the other judged sets (dev: WordNet examples; test: man pages, papers;
set 1: news, reviews, chatterbot chats, the Emacs and vim tutorials, the Debian Handbook; set 2:
licences, the Debian Constitution and Social Contract, the dictd dictionaries, LibreOffice help,
solitaire and backgammon rules, R data sets), anything ../shared/RESOURCES.md reserves for
measurement (gensim test corpora, fortune files, movie-review sentences), and news, film reviews,
sayings and NLI hypotheses. Also left out: Easton's Bible Dictionary (dict-easton is not in Debian
12); Tux Paint's stamp descriptions (nearly all under six words: "A kettle."); the recipe-scrapers
sdists (their test pages are not shipped); A Short History of Debian (debian-history: about a
hundred usable sentences, and news-like); the Wesnoth tutorial (key presses, genre set 1's
instructions) and World Conquest (no story); the GPL appendix of the Policy Manual (licence text is
set 2's legal); the Python library and language reference (signatures and tables, not prose).

Sources (Debian 12 here; the campaigns pull in wesnoth-1.16-core and -data):

    apt-get install --no-install-recommends bible-kjv bible-kjv-text stellarium-data \
        python3.11-doc debian-policy freeciv-data wesnoth-1.16-dw wesnoth-1.16-dm \
        wesnoth-1.16-did wesnoth-1.16-ei wesnoth-1.16-httt wesnoth-1.16-low wesnoth-1.16-l \
        wesnoth-1.16-nr wesnoth-1.16-sof wesnoth-1.16-sota wesnoth-1.16-sotbe \
        wesnoth-1.16-thot wesnoth-1.16-trow wesnoth-1.16-tsg wesnoth-1.16-ttb wesnoth-1.16-utbs
    apt-get update -o Acquire::Languages=en   # the Translation-en lists (off in this image)
    .venv/bin/python benchmarks/quality_genres3_sentences.py --per-genre 520
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality_genres2_sentences import (  # noqa: E402 - one set of cleaning rules for all sets
    blocks,
    html_paragraphs,
    untag,
)
from quality_genres_sentences import (  # noqa: E402
    collect,
    debian_version,
    sample_genre,
    write_sentences,
)

DATA = Path(__file__).resolve().parent / "data"
OUT = DATA / "quality_genres3_sentences.jsonl"
JUDGED = ("quality_genres_sentences.jsonl", "quality_genres2_sentences.jsonl")
JUDGED += ("quality_test_sentences.jsonl",)
SKYCULTURES = Path("/usr/share/stellarium/skycultures")
APT_LISTS = Path("/var/lib/apt/lists")
APT_MAIN = "deb.debian.org_debian_dists_bookworm_main_"
PYDOC = Path("/usr/share/doc/python3.11/html")
POLICY = Path("/usr/share/doc/debian-policy")
POLICY_DOCS = (
    *("policy.html", "menu-policy.html", "perl-policy.html", "debconf_specification.html"),
    "autopkgtest.html",
)
# Navigation pages, and the GPL appendix (licence text is genre set 2's "legal")
POLICY_SKIP = {"index", "genindex", "search", "ap-license"}
WESNOTH = Path("/usr/share/games/wesnoth/1.16/data/campaigns")
# The tutorial teaches the game's keys; World Conquest is a random-map campaign with no story
WESNOTH_SKIP = {"tutorial", "World_Conquest"}
WESNOTH_PACKAGES = {
    "Dead_Water": "dw",
    "Delfadors_Memoirs": "dm",
    "Descent_Into_Darkness": "did",
    "Eastern_Invasion": "ei",
    "Heir_To_The_Throne": "httt",
    "Legend_of_Wesmere": "low",
    "Liberty": "l",
    "Northern_Rebirth": "nr",
    "Sceptre_of_Fire": "sof",
    "Secrets_of_the_Ancients": "sota",
    "Son_Of_The_Black_Eye": "sotbe",
    "The_Hammer_of_Thursagan": "thot",
    "The_Rise_Of_Wesnoth": "trow",
    "The_South_Guard": "tsg",
    "Two_Brothers": "ttb",
    "Under_the_Burning_Suns": "utbs",
}
# A translatable WML string said by a character or the narrator; "" is an escaped quote
WML_LINE = re.compile(r'\b(message|story)\s*=\s*_\s*"((?:[^"]|"")*)"', re.S)
NATIONS = Path("/usr/share/games/freeciv/nation")
NATION_ERAS = {"Ancient", "Medieval", "Early Modern", "Modern"}
PARAGRAPH = r"<p\b[^>]*>(.*?)</p>"
# The lore of a sky culture is also told in list items and definition lists
SKY_PARAGRAPH = r"<(?:p|li|dd)\b[^>]*>(.*?)</(?:p|li|dd)>"
VERSE = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")
# Sections of a sky culture's page that say who wrote it and where it came from, not the lore
SKY_SKIP = re.compile(r"author|link|reference|fair use|thank|source|licen|further|credit", re.I)


# A premise with a code span (html_paragraphs marks it with NUL) is not the sentence the reader
# saw, and the shared splitter cuts after an abbreviation ("in St. Augustine"): either end of such
# a cut makes a fragment, so the row is dropped.
CUT = re.compile(r"\x00|\b(?:St|Mt|Mr|Mrs|Ms|Dr|Jr|Sr|Ft|Co|Ltd|Inc|vol|ca|approx)\.$")


# A text is (collection, source, [(place, paragraph)]): the premise never crosses a text.


def scripture_texts():
    """The whole King James Bible, one verse a line ("Ge1:1 In the beginning ...")."""
    out = subprocess.run(
        ["bible", "-f", "-l", "0", "-m", "8000", "Gen1:1-Rev22:21"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    where = f"bible-kjv-text {debian_version('bible-kjv-text')}:/usr/lib/bible.data"
    chapters: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for line in out.splitlines():
        m = VERSE.match(line)
        if m:
            book, chapter, _, text = m.groups()
            chapters.setdefault((book, chapter), []).append(text)
    for (book, chapter), verses in chapters.items():
        # One paragraph a chapter (place "Ge1.s3": its fourth sentence): a sentence may run over
        # several verses
        yield book, where, [(f"{book}{chapter}", " ".join(verses))]


def mythology_texts():
    version = debian_version("stellarium-data")
    for path in sorted(SKYCULTURES.glob("*/description.en.utf8")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        # [text before the first heading, heading, its text, heading, its text, ...]
        parts = re.split(r"<h\d[^>]*>(.*?)</h\d>", raw, flags=re.S)
        kept = [parts[0]] + [
            body
            for head, body in zip(parts[1::2], parts[2::2], strict=True)
            if not SKY_SKIP.search(head)
        ]
        paras = html_paragraphs("\n".join(kept), SKY_PARAGRAPH)
        yield (
            path.parent.name,
            f"stellarium-data {version}:{path}",
            [(f"p{i}", p) for i, p in enumerate(paras)],
        )


def apt_stanzas(path: Path):
    """The stanzas of an apt list (lz4 or plain), read by apt's own helper."""
    text = subprocess.run(
        ["/usr/lib/apt/apt-helper", "cat-file", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for stanza in text.split("\n\n"):
        if stanza.strip():
            yield stanza


def software_texts():
    packages = next(APT_LISTS.glob(APT_MAIN + "binary-*_Packages*"))
    sections: dict[str, tuple[str, str]] = {}
    for stanza in apt_stanzas(packages):
        fields = dict(
            re.findall(r"^(Package|Version|Section|Description-md5): (.*)$", stanza, re.M)
        )
        # The translation of this version's description is the one with the same md5
        key = (fields["Package"], fields["Description-md5"])
        sections.setdefault(key, (fields["Section"], fields["Version"]))
    translation = next(APT_LISTS.glob(APT_MAIN + "i18n_Translation-en*"))
    for stanza in apt_stanzas(translation):
        name = re.search(r"^Package: (.*)$", stanza, re.M).group(1)
        md5 = re.search(r"^Description-md5: (.*)$", stanza, re.M).group(1)
        if (name, md5) not in sections:
            continue
        section, version = sections[name, md5]
        long = stanza.split("\nDescription-en: ", 1)[1].split("\n", 1)[1:]
        # Continuation lines start with a space; " ." is an empty line between paragraphs
        text = "\n".join("" if ln == " ." else ln[1:] for ln in "".join(long).splitlines())
        paras = [(f"{name}.p{i}", b) for i, b in enumerate(blocks(text))]
        yield section, f"{name} {version}:{translation}", paras


def programming_texts():
    where = f"python3.11-doc {debian_version('python3.11-doc')}"
    for folder in ("tutorial", "howto"):
        for path in sorted((PYDOC / folder).glob("*.html")):
            if path.name == "index.html":
                continue
            raw = path.read_text(encoding="utf-8", errors="replace")
            paras = html_paragraphs(raw, PARAGRAPH)
            yield (
                f"{folder}/{path.stem}",
                f"{where}:{path}",
                [(f"p{i}", p) for i, p in enumerate(paras)],
            )


def policy_texts():
    where = f"debian-policy {debian_version('debian-policy')}"
    for doc in POLICY_DOCS:
        base = POLICY / doc
        pages = sorted(base.glob("*.html")) if base.is_dir() else [base]
        for path in (p for p in pages if p.stem not in POLICY_SKIP):
            raw = path.read_text(encoding="utf-8", errors="replace")
            paras = html_paragraphs(raw, PARAGRAPH)
            yield (
                doc.removesuffix(".html"),
                f"{where}:{path}",
                [(f"p{i}", p) for i, p in enumerate(paras)],
            )


def fantasy_texts():
    """What the characters say and the narrator tells in each scenario of a campaign."""
    for campaign in sorted(p for p in WESNOTH.iterdir() if p.name not in WESNOTH_SKIP):
        package = f"wesnoth-1.16-{WESNOTH_PACKAGES[campaign.name]}"
        where = f"{package} {debian_version(package)}"
        for path in sorted(campaign.glob("scenarios/**/*.cfg")):
            raw = path.read_text(encoding="utf-8", errors="replace")
            lines = [
                (f"{kind}{i}", untag(text.replace('""', '"')))
                for i, (kind, text) in enumerate(WML_LINE.findall(raw))
            ]
            yield campaign.name, f"{where}:{path}", lines


def nation_region(groups: str) -> str:
    named = [g for g in re.findall(r'"([^"]+)"', groups) if g not in NATION_ERAS]
    return named[0] if named else "other"


def history_texts():
    """The legend of each freeciv nation: a few sentences of the people's real history."""
    where = f"freeciv-data {debian_version('freeciv-data')}"
    for path in sorted(NATIONS.glob("*.ruleset")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        legend = re.search(r'^legend\s*=\s*_\("((?:[^"\\]|\\.)*)"\)', raw, re.M | re.S)
        groups = re.search(r"^\s*groups\s*=(.*)$", raw, re.M)
        region = nation_region(groups.group(1) if groups else "")
        if legend and region != "Imaginary":
            text = re.sub(r"\\\n", "", legend.group(1)).replace('\\"', '"')
            yield region, f"{where}:{path}", [("legend", text)]


GENRES = {
    "scripture": scripture_texts,
    "mythology": mythology_texts,
    "software": software_texts,
    "programming": programming_texts,
    "policy": policy_texts,
    "fantasy": fantasy_texts,
    "history": history_texts,
}


def judged_hypotheses(names: tuple[str, ...] = JUDGED) -> set[str]:
    """The sentences of the sets already judged (or held for measurement): files in DATA."""
    seen: set[str] = set()
    for name in names:
        with (DATA / name).open(encoding="utf-8") as f:
            seen.update(json.loads(line)["hypothesis"] for line in f if line.strip())
    return seen


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-genre", type=int, default=520)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    needed = (
        Path("/usr/bin/bible"),
        Path("/usr/lib/bible.data"),
        SKYCULTURES,
        PYDOC / "tutorial",
        POLICY / "policy.html",
        WESNOTH,
        NATIONS,
    )
    for p in needed:
        if not p.exists():
            raise SystemExit(f"{p}: not found (see this script's docstring for how to get it)")
    if not list(APT_LISTS.glob(APT_MAIN + "i18n_Translation-en*")):
        raise SystemExit(
            f"{APT_LISTS}/{APT_MAIN}i18n_Translation-en*: not found "
            "(run `apt-get update -o Acquire::Languages=en`)"
        )
    rows = sample_genres(GENRES, judged_hypotheses(), args.per_genre, random.Random(args.seed))
    write_sentences(args.out, rows)


def sample_genres(genres: dict, judged: set[str], per_genre: int, rng: random.Random) -> list:
    """Each genre's sample of its whole sentences not judged yet; a sentence of two genres is
    offered to the first only (`judged` grows with each genre's sentences)."""
    out = []
    for genre, texts in genres.items():
        rows = collect(texts(), genre)
        whole = [
            r for r in rows if not CUT.search(r["premise"]) and not CUT.search(r["hypothesis"])
        ]
        fresh = [r for r in whole if r["hypothesis"] not in judged]
        print(
            f"{genre}: {len(rows) - len(whole)} dropped for a cut premise or sentence, "
            f"{len(whole) - len(fresh)} already judged elsewhere"
        )
        # A sentence in two genres (an encyclopedia that quotes novels) is judged once
        judged.update(r["hypothesis"] for r in fresh)
        out += sample_genre(fresh, genre, per_genre, rng)
    return out


if __name__ == "__main__":
    main()
