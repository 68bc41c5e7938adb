"""The negation pipeline ("negation") and its union with the WordNet pipeline ("wordnet+negation").

Every usable hypothesis H gives at most one candidate, H¬ (`transnli.generator.negation`), as a
normal triple record with `pipeline: "negation"` and the pair's own `source_id`, so the evaluator
can put P, H, every H' and H¬ of one source pair into one family. Candidates go through the same
grammar and acceptability checks as WordNet's and are written to the same files; the WordNet
candidate filters (which judge an antonym in its context) do not apply to a negation.

In "wordnet+negation" a hypothesis is tagged once; its WordNet candidates (one per replaced word,
in word order) come first, then its negation, pair by pair, so the output keeps input order and
does not depend on batch boundaries (resume and --workers write the same bytes).

stats.json: the top-level counts cover every candidate (candidates_built, rejected_*,
triples_accepted, acceptance_rate); words_considered and skipped_* stay the WordNet stage's; the
"negation" section gives the negation candidates' own counts and why sentences were declined.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from transnli.generator.config import GeneratorConfig
from transnli.generator.negation import REASONS, Negated, Negator
from transnli.generator.pipeline import GenerationStats, StageTimer, WordNetPipeline
from transnli.generator.readers import NLIPair
from transnli.generator.record import TripleRecord, stable_id

PREFIX = "negation_"
KINDS = ("add_not", "modal", "do_support", "remove_not", "remove_do_support")


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 6) if d else None


class NegationGenerationStats(GenerationStats):
    """GenerationStats plus the negation candidates' counts under the key "negation"."""

    def to_dict(self) -> dict:
        d = super().to_dict()
        c = self.counts
        built = c[PREFIX + "candidates_built"]
        d["negation"] = {
            "sentences_considered": c[PREFIX + "considered"],
            "sentences_declined": {
                r: c[f"{PREFIX}skipped_{r}"] for r in REASONS if c[f"{PREFIX}skipped_{r}"]
            },
            "rules": {k: c[f"{PREFIX}kind_{k}"] for k in KINDS if c[f"{PREFIX}kind_{k}"]},
            "candidates_built": built,
            "rejected_grammar": c[PREFIX + "rejected_grammar"],
            "rejected_acceptability": c[PREFIX + "rejected_acceptability"],
            "triples_accepted": c[PREFIX + "triples_accepted"],
            "acceptance_rate": _rate(c[PREFIX + "triples_accepted"], built),
        }
        return d

    def checkpoint_dict(self) -> dict:
        d = super().checkpoint_dict()
        d["_negation_counts"] = {
            k: v for k, v in sorted(self.counts.items()) if k.startswith(PREFIX)
        }
        return d

    @classmethod
    def from_dict(cls, d: dict) -> NegationGenerationStats:
        base = GenerationStats.from_dict({k: v for k, v in d.items() if k != "negation"})
        s = cls()
        s.counts, s.skipped_sentences = base.counts, base.skipped_sentences
        s.counts.update(d.get("_negation_counts", {}))
        return s


def negation_record(pair: NLIPair, neg: Negated) -> TripleRecord:
    """The triple record of H¬. The id follows the WordNet records' scheme (source pair, anchor
    token, pipeline, result), so it is stable across runs and distinct from theirs."""
    tok = neg.token
    return TripleRecord(
        id=stable_id(
            pair.dataset, pair.split, pair.source_id, "hypothesis", tok.i, "negation", neg.text
        ),
        source_id=pair.source_id,
        dataset=pair.dataset,
        split=pair.split,
        premise=pair.premise,
        hypothesis=pair.hypothesis,
        modified_hypothesis=neg.text,
        gold_label=pair.gold_label,
        word=neg.word,
        word_index=tok.i,
        char_start=neg.char_start,
        char_end=neg.char_end,
        pos=tok.pos,
        tag=tok.tag,
        antonym=neg.antonym,
        candidates=[{"antonym": neg.antonym, "score": None, "rule": neg.kind}],
        pipeline="negation",
    )


class NegationPipeline(WordNetPipeline):
    """Negation candidates, plus WordNet's when `antonyms` is given ("wordnet+negation")."""

    def __init__(
        self,
        config: GeneratorConfig,
        tagger,
        negator: Negator,
        checks,
        antonyms=None,
        ranker=None,
        realiser=None,
        filters=(),
    ):
        super().__init__(config, tagger, antonyms, ranker, realiser, checks, filters)
        self.negator = negator
        self.with_wordnet = antonyms is not None
        self.stats = NegationGenerationStats()

    def build_candidates(
        self,
        pairs: Sequence[NLIPair],
        stats: GenerationStats | None = None,
        timer: StageTimer | None = None,
        filtered: list[TripleRecord] | None = None,
        every: list[TripleRecord] | None = None,
    ) -> list[TripleRecord]:
        counts: Counter = (stats or self.stats).counts
        timer = timer or self.timer
        with timer.stage("tagging"):
            tagged = self.tagger.tag([p.hypothesis for p in pairs])
        position = {id(p): k for k, p in enumerate(pairs)}
        rows: list[
            tuple[int, int, TripleRecord]
        ] = []  # (pair position, 0 wordnet / 1 negation, record)
        if self.with_wordnet:
            chosen = self.built_choices(pairs, tagged, counts, timer)
            with timer.stage("filters"):
                self.apply_filters(chosen, counts, filtered if filtered is not None else [])
            rows += [(position[id(c.pair)], 0, c.record) for c in chosen]
        with timer.stage("realising"):
            results = self.negator.negate_many(tagged)
        for k, (pair, result) in enumerate(zip(pairs, results, strict=True)):
            counts[PREFIX + "considered"] += 1
            if result.negated is None:
                counts[f"{PREFIX}skipped_{result.status}"] += 1
                continue
            counts["candidates_built"] += 1
            counts[PREFIX + "candidates_built"] += 1
            counts[f"{PREFIX}kind_{result.negated.kind}"] += 1
            rows.append((k, 1, negation_record(pair, result.negated)))
        rows.sort(key=lambda row: row[:2])  # stable: a pair's WordNet records keep word order
        if every is not None:
            every.extend(rec for _, _, rec in rows)
        return [rec for _, _, rec in rows if rec.rejected_by is None]  # a filter sets rejected_by

    def apply_checks(
        self,
        candidates: list[TripleRecord],
        stats: GenerationStats | None = None,
        timer: StageTimer | None = None,
    ) -> tuple[list[TripleRecord], list[TripleRecord]]:
        accepted, rejected = super().apply_checks(candidates, stats, timer)
        counts = (stats or self.stats).counts
        counts[PREFIX + "triples_accepted"] += sum(r.pipeline == "negation" for r in accepted)
        for r in rejected:
            if r.pipeline == "negation":
                counts[f"{PREFIX}rejected_{r.rejected_by}"] += 1
        return accepted, rejected
