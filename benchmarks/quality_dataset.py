"""The judged dev candidates as a feature table, for training and cross-validating the quality
scorer (benchmarks/train_quality_model.py).

Every judged candidate of benchmarks/data/quality_dev.jsonl is rebuilt with the generator's own
stages (spaCy parse, WordNet antonyms in both modes with auxiliaries included, ranking,
realising; no filters or checks), matched to its judgement by (H, H'), and turned into a feature
row by transnli.generator.filters.quality_features, the code the scorer runs at generation time. The
default preset is run too, to mark which candidates it accepts: the population the scorer is
evaluated on.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_quality import JUDGEMENTS, SENTENCES, key, load_judgements  # noqa: E402 - one definition of the dev data


def sha256_of(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


@dataclass
class Dataset:
    names: tuple[str, ...]
    X: np.ndarray  # features, one row per judged candidate that was rebuilt
    y: np.ndarray  # 1 = good (docs/judging.md)
    groups: np.ndarray  # source sentence (H) index: no sentence in both train and test
    default_accepted: np.ndarray  # bool: the default preset accepts this candidate
    keys: list[str]
    missing: int  # judged candidates the stages no longer build (left out)
    data_sha256: str
    accepted_not_rebuilt: int = 0  # candidates the default accepts that were not rebuilt

    def pairs(self) -> list[tuple[str, str]]:
        """(H, H') of each row."""
        return [tuple(k.split("\x1f")) for k in self.keys]

    def with_columns(self, names: tuple[str, ...], X: np.ndarray) -> Dataset:
        """The same rows with feature columns `names` (values X) added."""
        return replace(self, names=self.names + names, X=np.hstack([self.X, X]))


def default_accepted_keys(sentences: Path = SENTENCES) -> set[str]:
    """Keys of the candidates the rule path accepts (the fast preset: the filters and checks the
    rule-feature scorer was measured against, no language model)."""
    from transnli.generator.build import build_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.readers import read_pairs

    pipeline = build_pipeline(resolve_config("fast", filters="-quality_model"))
    out = set()
    for batch in pipeline.run(read_pairs(str(sentences))):
        out |= {key(r.hypothesis, r.modified_hypothesis) for r in batch.accepted}
    return out


def raw_choices(sentences: Path = SENTENCES) -> tuple[list, object]:
    """([(choice, mode)], ranker): every raw candidate the stages build from `sentences` (WordNet
    antonyms in both modes, auxiliaries included, no filters or checks), direct mode first (a
    candidate both modes build is taken once), and the broad pipeline's ranker."""
    from transnli.generator.build import build_wordnet_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.readers import read_pairs

    pairs = list(read_pairs(str(sentences)))
    seen: set[str] = set()
    made = []
    tagged = None
    for mode in ("direct", "broad"):
        config = resolve_config(
            "default",
            antonyms=mode,
            include_aux=True,
            filters=[],
            grammar="none",
            acceptability="none",
        )
        pipeline = build_wordnet_pipeline(config)
        tagged = tagged or pipeline.tagger.tag([p.hypothesis for p in pairs])
        for choice in pipeline.choose_words(pairs, tagged):
            rec = choice.record
            if rec is not None and key(rec.hypothesis, rec.modified_hypothesis) not in seen:
                seen.add(key(rec.hypothesis, rec.modified_hypothesis))
                made.append((choice, mode))
    return made, pipeline.ranker


def rebuilt_items(judged: dict[str, dict], sentences: Path = SENTENCES):
    """(ranker, {key: (FilterItem, ranked candidates)}) for every judged candidate the stages
    build (raw_choices)."""
    from transnli.generator.filters import FilterItem

    made, ranker = raw_choices(sentences)
    seen: dict[str, tuple] = {}
    for choice, _ in made:
        rec = choice.record
        k = key(rec.hypothesis, rec.modified_hypothesis)
        if k in judged:
            ant_pos = choice.lookup.pos[choice.lookup.antonyms.index(rec.antonym)]
            item = FilterItem(
                choice.sentence, choice.token, rec.antonym, ant_pos, rec.modified_hypothesis
            )
            seen[k] = (item, rec.candidates)
    return ranker, seen


def build_dataset(sentences: Path = SENTENCES, judgements: Path = JUDGEMENTS) -> Dataset:
    """The judged set (default: dev) as feature rows; the test set is
    data/quality_test_sentences.jsonl with data/quality_test.jsonl."""
    from transnli.generator.filters.quality_features import FEATURE_NAMES, QualityFeatures

    judged = load_judgements(judgements)
    ranker, items = rebuilt_items(judged, sentences)
    accepted = default_accepted_keys(sentences)
    keys = sorted(items)  # a fixed row order, whatever order the stages produced
    feats = QualityFeatures(ranker)
    X = feats.matrix([items[k][0] for k in keys], [items[k][1] for k in keys])
    hyps = sorted({judged[k]["hypothesis"] for k in keys})
    gid = {h: i for i, h in enumerate(hyps)}
    return Dataset(
        names=FEATURE_NAMES,
        X=X,
        y=np.array([int(bool(judged[k]["good"])) for k in keys]),
        groups=np.array([gid[judged[k]["hypothesis"]] for k in keys]),
        default_accepted=np.array([k in accepted for k in keys]),
        keys=keys,
        missing=len(judged) - len(keys),
        data_sha256=sha256_of(judgements, sentences),
        accepted_not_rebuilt=len(accepted - set(keys)),
    )
