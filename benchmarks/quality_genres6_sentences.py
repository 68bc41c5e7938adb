"""Build the sixth set of quality *genre* sentences: real English of seven genres that no judged
set has yet (neither genre set 1 to 5, nor the dev or test set), for more hand-judged candidates.

- equipment: the catalogues of ships and outfits of Endless Sky (endless-sky-data, data/*.txt:
  the `description` lines of each top-level `ship` and `outfit` block) and Naev (naev-data,
  dat/ships/*.xml and dat/outfits/**/*.xml, `<description>`): hulls, engines, weapons and gear
  as a shipyard or outfitter sells them, one text an item, one collection a data file (Endless
  Sky) or a folder (Naev);
- technology: FreeOrion's encyclopedia of technologies and buildings (freeorion-data,
  default/stringtables/en.txt, the LRN_, GRO_, PRO_, CON_, DEF_, SPY_, SHP_ and BLD_ *_DESC
  entries: what an invention or a building is and does), one text an entry, one collection a
  prefix; a line with a stringtable link ([[...]]) loses its sentences, a heading line is dropped;
- food: Cataclysm: Dark Days Ahead's descriptions of food and drink (cataclysm-dda-data,
  json/items/comestibles/*.json, `description`; medicines and mutagens left out), one text an
  item, one collection a file (dairy, bread, soup, ...);
- blurbs: the same game's descriptions of books and magazines (json/items/book/*.json: a pulp
  novel's back cover, a manual's contents), one text a book, one collection a file;
- careers: the same game's professions (json/professions.json, `description`: second-person
  sketches of who the player was before the disaster), one text a profession;
- notes: the notes survivors left (json/snippets/survivor_notes.json, the `note` snippets,
  their quotation marks stripped), first-person scraps of a disaster's days, one text a note;
- cybernetics: the same game's bionic implants (json/bionics.json, `description`: what an
  implant is and does to the body), one text an implant.

Sentences are cut and kept by the rules of benchmarks/quality_genres_sentences.py, with set 2's
HTML helpers, set 3's cut rule and sampling and set 5's provenance helpers (all imported, not
copied): 6-28 words, letters and ordinary punctuation only, a capital first and . ! or ? last (so
a line with a placeholder of the game, "<name>", or a link, "[[KEY]]", is dropped); the premise is
the sentence before it in the same text. Dropped: a row whose premise had a code span or whose
premise or sentence ends in an abbreviation (set 3's rule), and a sentence already in the dev, test
or genre sets 1-5 (same hypothesis text) or in an earlier genre of this set. Every row names its
source: package, version (from the package's DEBIAN/control), the file's installed path and the
place in it. A fixed-seed sample of N per genre, spread evenly over the genre's collections, is
written to benchmarks/data/quality_genres6_sentences.jsonl (kept in the repository: the Debian
packages differ between releases). Genres with fewer usable sentences than N are taken whole.

Not used: the sources and genres of the other judged sets (dev: WordNet examples; test: man pages,
papers; set 1: news, reviews, chatterbot chats, the Emacs and vim tutorials, the Debian Handbook;
set 2: licences, the Debian Constitution and Social Contract, The Devil's Dictionary, GCIDE
quotations, FOLDOC and the Jargon File, LibreOffice help, solitaire and backgammon rules, R data
sets; set 3: the King James Bible, Stellarium's sky cultures, Debian package descriptions, the
Python tutorial, Debian Policy, Wesnoth's campaigns, freeciv's nation legends; set 4: the Debian,
KStars and Crawl FAQs, Crawl's descriptions, KStars' AstroInfo, NetHack, Colossal Cave Adventure,
Warzone 2100's briefings; set 5: Endless Sky's conversations and planet descriptions, Naev's
assets, FreeOrion's species, Kalzium, PyChess, LinCity-NG, the Debian Developer's Reference),
anything ../shared/RESOURCES.md reserves for measurement (gensim test corpora, fortune files,
movie-review sentences), and news, film reviews, sayings, NLI hypotheses, man pages and papers.
Also left out: Cataclysm's monster descriptions (set 4's bestiary genre), its newspapers and radio
snippets (news), its medicines and mutagens (not food); Endless Sky's spaceport descriptions (too
close to set 5's worlds), its job descriptions (nearly every one has a placeholder) and its help
(software help, set 2); Simutrans' help (simutrans-data, text/en: the program's manual, set 2's
software help); Pioneers (pioneers-data: images and maps, no prose); GNU Solfege (solfege: its
lesson files are exercise settings, not prose); AnyMeal and Kookbook (recipe managers that ship no
recipes); Widelands, 0 A.D., Hedgewars and FLARE (hundreds of MB a package: not fetched this time).

Sources (Debian 12 packages, extracted, not installed: `apt-get download` and `dpkg-deb -R`
into one folder a package under SRC, which keeps each package's DEBIAN/control for its version):

    mkdir -p /work/src6/debs && cd /work/src6/debs && apt-get download endless-sky-data \
        naev-data freeorion-data cataclysm-dda-data
    # (the versions here: endless-sky-data 0.9.8-1.2, naev-data 0.8.2-1, freeorion-data
    # 0.4.10.2-1, cataclysm-dda-data 0.F-3-9)
    cd /work/src6 && for d in debs/*.deb; do dpkg-deb -R "$d" "$(dpkg-deb -f "$d" Package)"; done
    .venv/bin/python benchmarks/quality_genres6_sentences.py --src /work/src6 --per-genre 500
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality_genres5_sentences import (  # noqa: E402 - one way to read these games' data
    ENDLESS_SKY,
    FREEORION,
    build_from_packages,
    es_blocks,
    es_descriptions,
    fo_entries,
    folder,
    naev_descriptions,
    where,
)

DATA = Path(__file__).resolve().parent / "data"
OUT = DATA / "quality_genres6_sentences.jsonl"
JUDGED = ("quality_dev_sentences.jsonl", "quality_test_sentences.jsonl")
JUDGED += tuple(f"quality_genres{n}_sentences.jsonl" for n in ("", "2", "3", "4", "5"))
SRC = Path("/work/src6")
CATACLYSM = "cataclysm-dda-data", "usr/share/games/cataclysm-dda/json"
NAEV_ITEMS = "naev-data", "usr/share/naev/dat"
SOURCES = (ENDLESS_SKY, NAEV_ITEMS, FREEORION, CATACLYSM)
# FreeOrion's technologies (by field) and buildings; SHORT_DESC is a one-line summary
FO_TECH = re.compile(r"^(LRN|GRO|PRO|CON|DEF|SPY|SHP|BLD)_(?!.*(GAMEPLAY|SHORT))[A-Z0-9_]+_DESC$")
# Cataclysm's colour markup, dropped; any other <...> is a placeholder ("<name>")
CDDA_COLOUR = re.compile(r"</?color[^>]*>")
CDDA_FOOD_SKIP = {"med", "mutagen"}


# A text is (collection, source, [(place, paragraph)]): the premise never crosses a text.


def equipment_texts(src: Path):
    """Endless Sky's ships and outfits as sold (the `description` lines of each top-level
    `ship` or `outfit` block) and Naev's (`<description>`), one text an item."""
    for path in sorted(folder(src, ENDLESS_SKY).glob("**/*.txt")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for keyword in ("ship", "outfit"):
            for line, _ in es_blocks(path, keyword):
                if lines[line - 1].startswith("\t"):
                    continue  # a mission's own ship, not the catalogue's
                yield path.stem, where(src, ENDLESS_SKY, path), es_descriptions(lines, line)
    base = folder(src, NAEV_ITEMS)
    for path in sorted([*base.glob("ships/*.xml"), *base.glob("outfits/**/*.xml")]):
        collection = "naev-" + "-".join(path.relative_to(base).parts[:-1])
        yield collection, where(src, NAEV_ITEMS, path), naev_descriptions(path)


def technology_texts(src: Path):
    """FreeOrion's technologies and buildings, one text an entry, one collection a prefix
    (a field of research, or BLD)."""
    for key, source, paras in fo_entries(src, FO_TECH):
        yield key.split("_")[0], source, paras


def cdda_text(value) -> str:
    """A Cataclysm text field: a string, or {"str": ...} when it has a plural or a context;
    colour markup goes, a placeholder becomes a NUL so its sentence is dropped."""
    if isinstance(value, dict):
        value = value.get("str") or value.get("male") or ""
    return re.sub(
        r"<[^>]*>", " \x00 ", CDDA_COLOUR.sub("", value if isinstance(value, str) else "")
    )


def cdda_descriptions(src: Path, collection, paths):
    """One text an entry with a `description` in Cataclysm's JSON files (each a list)."""
    for path in paths:
        for n, entry in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            if isinstance(entry, dict) and "description" in entry:
                place = str(entry.get("id") or entry.get("abstract") or n)
                paras = [(place, cdda_text(entry["description"]))]
                yield collection(path), where(src, CATACLYSM, path), paras


def food_texts(src: Path):
    paths = sorted(folder(src, CATACLYSM).glob("items/comestibles/*.json"))
    paths = [p for p in paths if p.stem not in CDDA_FOOD_SKIP]
    return cdda_descriptions(src, lambda p: p.stem, paths)


def blurbs_texts(src: Path):
    paths = sorted(folder(src, CATACLYSM).glob("items/book/*.json"))
    return cdda_descriptions(src, lambda p: p.stem, paths)


def careers_texts(src: Path):
    return cdda_descriptions(src, lambda p: p.stem, [folder(src, CATACLYSM) / "professions.json"])


def cybernetics_texts(src: Path):
    return cdda_descriptions(src, lambda p: p.stem, [folder(src, CATACLYSM) / "bionics.json"])


def notes_texts(src: Path):
    """The notes survivors left, one text a note (its quotation marks stripped)."""
    path = folder(src, CATACLYSM) / "snippets" / "survivor_notes.json"
    for group in json.loads(path.read_text(encoding="utf-8")):
        if group.get("category") != "note":
            continue
        for n, item in enumerate(group["text"]):
            text = item["text"] if isinstance(item, dict) else item
            place = item.get("id", str(n)) if isinstance(item, dict) else str(n)
            paras = [(place, cdda_text(text).strip().strip('"'))]
            yield "note", where(src, CATACLYSM, path), paras


GENRES = {
    "equipment": equipment_texts,
    "technology": technology_texts,
    "food": food_texts,
    "blurbs": blurbs_texts,
    "careers": careers_texts,
    "notes": notes_texts,
    "cybernetics": cybernetics_texts,
}


def main(argv=None) -> None:
    build_from_packages(
        argv,
        __doc__,
        sources=SOURCES,
        genres=GENRES,
        judged=JUDGED,
        src=SRC,
        seed=20261202,
        out=OUT,
    )


if __name__ == "__main__":
    main()
