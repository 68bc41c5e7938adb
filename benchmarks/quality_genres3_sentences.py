"""Build the third set of quality *genre* sentences: real English of six genres that no judged set
has yet (neither genre set 1 or 2, nor the dev or test set), for more hand-judged candidates.

- scripture: the King James Bible (bible-kjv-text, read with the `bible` program of bible-kjv),
  one text a chapter, one collection a book;
- mythology: the descriptions of Stellarium's ~50 sky cultures (stellarium-data,
  skycultures/*/description.en.utf8): the stars and constellations of Norse, Maori, Navajo,
  Chinese, Babylonian, ... lore; the author, licence, link and reference sections left out;
- software: the long descriptions of Debian 12's packages (the apt list
  main/i18n/Translation-en, fetched by `apt-get update -o Acquire::Languages=en`), one text a
  package, one collection a Section (read from the list's Packages file, as is each version);
- programming: the Python 3.11 tutorial and HOWTOs (python3.11-doc, HTML; code spans poison
  their sentence, code blocks are not paragraphs), one collection a tutorial chapter or HOWTO;
- policy: the Debian Policy Manual and its sub-policies (debian-policy, HTML: policy, menu, perl,
  debconf specification, autopkgtest; the upgrading checklist is a page of policy.html), one collection a document;
- history: A Short History of Debian and the Debian Manifesto (debian-history, English HTML).

Sentences are cut and kept by the rules of benchmarks/quality_genres_sentences.py (imported, not
copied): 6-28 words, letters and ordinary punctuation only, a capital first and . ! or ? last;
the premise is the sentence before it in the same text (chapter, page, package). Every row names
its source: package, version, file and place. A fixed-seed sample of N per genre, spread evenly
over the genre's collections, is written to benchmarks/data/quality_genres3_sentences.jsonl (kept
in the repository: the Debian packages and apt lists differ between releases and mirror dates). A
sentence already in genre set 1 or 2 or in the test set (same hypothesis text) is dropped before
sampling, so no judged text is judged twice.

Not used: the sources of the other judged sets (dev: WordNet examples; test: man pages, papers;
set 1: news, reviews, chat, Emacs/vim tutorials, the Debian Handbook; set 2: licences, the Debian
Constitution and Social Contract, dictd dictionaries, LibreOffice help, game rules, R data sets),
anything ../shared/RESOURCES.md reserves for measurement (gensim test corpora, fortune files,
movie-review sentences), and news, film reviews, sayings and NLI hypotheses. Easton's Bible
Dictionary (dict-easton) is not in Debian 12; the FHS shipped in debian-policy is left out (a
foreign standard of path tables, not Debian's policy prose); the Python library and language
reference is left out (tables and signatures, not prose).

Sources (Debian 12 here):

    apt-get install --no-install-recommends bible-kjv bible-kjv-text stellarium-data \
        python3.11-doc debian-policy debian-history
    apt-get update -o Acquire::Languages=en
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
            book, chapter, verse, text = m.groups()
            chapters.setdefault((book, chapter), []).append((f"{book}{chapter}:{verse}", text))
    for (book, _), verses in chapters.items():
        # One paragraph a chapter: a sentence may run over several verses
        yield book, where, [(verses[0][0], " ".join(t for _, t in verses))]


def mythology_texts():
    version = debian_version("stellarium-data")
    for path in sorted(SKYCULTURES.glob("*/description.en.utf8")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        kept = [
            body
            for head, body in re.findall(r"<h\d[^>]*>(.*?)</h\d>(.*?)(?=<h\d|$)", raw, re.S)
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
        fields = dict(re.findall(r"^(Package|Version|Section): (.*)$", stanza, re.M))
        sections.setdefault(fields["Package"], (fields["Section"], fields["Version"]))
    translation = next(APT_LISTS.glob(APT_MAIN + "i18n_Translation-en*"))
    for stanza in apt_stanzas(translation):
        name = re.search(r"^Package: (.*)$", stanza, re.M).group(1)
        if name not in sections:
            continue
        section, version = sections[name]
        long = stanza.split("\nDescription-en: ", 1)[1].split("\n", 1)[1:]
        # Continuation lines start with a space; " ." is an empty line between paragraphs
        text = "\n".join("" if ln == " ." else ln[1:] for ln in "".join(long).splitlines())
        paras = [(f"p{i}", b) for i, b in enumerate(blocks(text))]
        yield section, f"{name} {version}:{translation.name}", paras


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


def judged_hypotheses() -> set[str]:
    """The sentences of the sets already judged (or held for measurement)."""
    seen: set[str] = set()
    for name in JUDGED:
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
    judged = judged_hypotheses()
    rng = random.Random(args.seed)
    out = []
    for genre, texts in GENRES.items():
        rows = collect(texts(), genre)
        fresh = [r for r in rows if r["hypothesis"] not in judged]
        print(f"{genre}: {len(rows) - len(fresh)} sentences already judged elsewhere, dropped")
        out += sample_genre(fresh, genre, args.per_genre, rng)
    write_sentences(args.out, out)


if __name__ == "__main__":
    main()
