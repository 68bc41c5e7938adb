"""The WordNet antonym-replacement pipeline (Algorithm 1 of Wu & Last), as a chain of small stages.

Pairs stream in; for each batch the hypotheses are tagged together, every selected content word
becomes at most one candidate sentence (its best-ranked antonym, realised in place), and the
candidates of the whole batch go through each check in one call. Output order is input order, and
nothing depends on batch boundaries, so a resumed or multi-worker run writes the same bytes.

A batch goes through two halves, building (`build_batch`: tagging, antonyms, ranking, realising)
and checking (`check_batch`), and counts into statistics of its own, added to the pipeline's as
the batch is handed out, so the statistics saved with a checkpoint describe exactly the batches
written so far. (Checking batch k on a second thread while batch k+1 is built was tried: slower
and more CPU (docs/speed.md, 'Pipeline'), because spaCy and the checkers' Python glue then contend
for the GIL while the checkers' threads already use both cores.)
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from transnli.generator.checks.base import Check
from transnli.generator.config import GeneratorConfig
from transnli.generator.filters import CandidateFilter, FilterItem
from transnli.generator.lm_choice import (
    CHOICE,
    PER_SENTENCE,
    choice_entries,
    language_model_check,
    limit_per_sentence,
    pair_scores,
    runs,
)
from transnli.generator.memory import release_free_memory
from transnli.generator.readers import NLIPair
from transnli.generator.record import TripleRecord, stable_id
from transnli.generator.tagging import TaggedSentence, Token

# AntonymLookup.status -> WordChoice.status; stats count each as skipped_<status>.
SKIP_STATUS = {
    "no_antonym": "no_antonym",
    "no_pos_match": "no_pos_match",
    "skipped": "fixed_expression",  # direct mode declines words inside fixed expressions
}
STAGES = ("tagging", "antonyms", "ranking", "realising", "filters", "grammar", "acceptability")
FILTERED = "filtered_"  # stats key prefix: candidates a filter rejected, per filter


def select_words(
    sentence: TaggedSentence, pos: Sequence[str], include_aux: bool = False
) -> list[Token]:
    """Content words eligible for replacement: alphabetic tokens whose universal POS is in `pos`;
    auxiliaries count as verbs when `include_aux` (the paper's setting)."""
    wanted = set(pos)
    out = []
    for tok in sentence.tokens:
        if not tok.is_alpha:
            continue
        tok_pos = "VERB" if (tok.pos == "AUX" and include_aux) else tok.pos
        if tok_pos in wanted:
            out.append(tok)
    return out


def context_words(sentence: TaggedSentence, exclude: int) -> list[str]:
    """The other words of the sentence, the context an antonym is ranked against."""
    return [t.text for t in sentence.tokens if t.i != exclude and t.is_alpha]


def word_record(
    pair: NLIPair,
    tok: Token,
    modified: str,
    pipeline: str,
    antonym: str,
    candidates: list[dict],
    **extra,
) -> TripleRecord:
    """The triple record for replacing `tok` of the pair's hypothesis, whichever pipeline made
    `modified`. The id depends only on the source pair, the word, the pipeline and the result."""
    return TripleRecord(
        id=stable_id(
            pair.dataset, pair.split, pair.source_id, "hypothesis", tok.i, pipeline, modified
        ),
        source_id=pair.source_id,
        dataset=pair.dataset,
        split=pair.split,
        premise=pair.premise,
        hypothesis=pair.hypothesis,
        modified_hypothesis=modified,
        gold_label=pair.gold_label,
        word=tok.text,
        word_index=tok.i,
        char_start=tok.idx,
        char_end=tok.idx + len(tok.text),
        pos=tok.pos,
        tag=tok.tag,
        antonym=antonym,
        candidates=candidates,
        pipeline=pipeline,
        **extra,
    )


@dataclass
class GenerationStats:
    """Counts as reported in stats.json. `acceptance_rate` follows the paper's Table 9:
    the share of built candidate sentences that survive all checks."""

    counts: Counter = field(default_factory=Counter)
    skipped_sentences: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict:
        c = self.counts
        built = c["candidates_built"]
        reached_acc = c["acceptability_checked"]
        return {
            "sentences_read": c["sentences_read"],
            "sentences_skipped": dict(sorted(self.skipped_sentences.items())),
            # pairs whose premise and hypothesis repeat an earlier pair's (processed again)
            "duplicate_pairs": c["duplicate_pairs"],
            "words_considered": c["words_considered"],
            "skipped_no_antonym": c["skipped_no_antonym"],
            "skipped_no_pos_match": c["skipped_no_pos_match"],
            "skipped_fixed_expression": c["skipped_fixed_expression"],
            "skipped_unrealisable": c["skipped_unrealisable"],
            "candidates_built": built,
            "rejected_grammar": c["rejected_grammar"],
            "rejected_acceptability": c["rejected_acceptability"],
            "rejected_filters": {
                k[len(FILTERED) :]: v for k, v in sorted(c.items()) if k.startswith(FILTERED) and v
            },
            "triples_accepted": c["triples_accepted"],
            "acceptance_rate": round(c["triples_accepted"] / built, 6) if built else None,
            "acceptability_pass_rate": (
                round((reached_acc - c["rejected_acceptability"]) / reached_acc, 6)
                if reached_acc
                else None
            ),
        }

    @classmethod
    def from_dict(cls, d: dict) -> GenerationStats:
        s = cls()
        for k, v in d.items():
            if k == "sentences_skipped":
                s.skipped_sentences.update(v)
            elif k == "rejected_filters":
                s.counts.update({FILTERED + name: n for name, n in v.items()})
            elif isinstance(v, int) and not isinstance(v, bool):
                s.counts[k] = v
        s.counts["acceptability_checked"] = d.get("_acceptability_checked", 0)
        return s

    def checkpoint_dict(self) -> dict:
        d = self.to_dict()
        d["_acceptability_checked"] = self.counts["acceptability_checked"]
        return d

    def add(self, other: GenerationStats) -> None:
        """Add another (a batch's) counts to these."""
        self.counts.update(other.counts)
        self.skipped_sentences.update(other.skipped_sentences)


@dataclass
class BatchResult:
    n_pairs: int  # input pairs consumed by this batch (including skipped ones)
    accepted: list[TripleRecord]
    rejected: list[TripleRecord]


@dataclass
class BuiltBatch:
    """A batch between its two halves: candidates built, not checked yet. `stats` and `timer`
    are the batch's own (see the module docstring)."""

    n_pairs: int
    candidates: list[TripleRecord]
    stats: GenerationStats
    timer: StageTimer
    filtered: list[TripleRecord] = field(default_factory=list)  # rejected by a filter
    built: list[TripleRecord] = field(default_factory=list)  # every candidate, in input order


@dataclass
class WordChoice:
    """One selected word and what the WordNet stages make of it. `status`: "ok" (then `record`
    is the candidate and `realised` the realiser's result), "no_antonym", "no_pos_match" or
    "unrealisable"; `lookup` is the antonym stage's answer."""

    pair: NLIPair
    sentence: TaggedSentence
    token: Token
    status: str
    lookup: object = None
    record: TripleRecord | None = None
    realised: object = None


class StageTimer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(STAGES, 0.0)

    def add(self, other: StageTimer) -> None:
        for name, seconds in other.seconds.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    @contextmanager
    def stage(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0


class WordNetPipeline:
    """Builds and checks candidate sentences; stages are injected so tests can swap any of them."""

    def __init__(
        self,
        config: GeneratorConfig,
        tagger,
        antonyms,
        ranker,
        realiser,
        checks: Sequence[Check],
        filters: Sequence[CandidateFilter] = (),
    ):
        self.config = config
        self.filters = list(filters)
        self.tagger = tagger
        self.antonyms = antonyms
        self.ranker = ranker
        self.realiser = realiser
        self.checks = list(checks)
        self.stats = GenerationStats()
        self.timer = StageTimer()
        # The language-model check, when it chooses among candidates (transnli.generator.lm_choice)
        self.chooser = None
        if config.lm_antonyms > 1 or config.max_per_sentence:
            self.chooser = language_model_check(self.checks)
            if self.chooser is None:
                raise ValueError(
                    "lm_antonyms and max_per_sentence need the lm or judge acceptability check"
                )

    # -- building -------------------------------------------------------------------------------
    def usable(self, pair: NLIPair, stats: GenerationStats | None = None) -> bool:
        """Whether `pair` has a hypothesis to work on (not empty, not over max_chars); a skip is
        counted in `stats` (default: the pipeline's own)."""
        stats = stats or self.stats
        text = pair.hypothesis
        if not text.strip():
            stats.skipped_sentences["empty"] += 1
            return False
        if len(text) > self.config.max_chars:
            stats.skipped_sentences["too_long"] += 1
            return False
        return True

    def choose_words(
        self,
        pairs: Sequence[NLIPair],
        tagged: Sequence[TaggedSentence],
        timer: StageTimer | None = None,
    ) -> list[WordChoice]:
        """The WordNet choice for every selected word of every pair, in order (nothing counted).
        The LLM pipeline calls this too, so both pipelines see the same words and WordNet
        choices."""
        cfg = self.config
        timer = timer or self.timer
        out: list[WordChoice] = []
        for pair, sent in zip(pairs, tagged, strict=True):
            for tok in select_words(sent, cfg.pos, cfg.include_aux):
                with timer.stage("antonyms"):
                    lookup = self.antonyms.candidates(tok, sent)
                if lookup.status != "ok" or not lookup.antonyms:
                    status = SKIP_STATUS.get(lookup.status, "no_antonym")
                    out.append(WordChoice(pair, sent, tok, status, lookup))
                    continue
                with timer.stage("ranking"):
                    ranked = self.ranker.rank(lookup.antonyms, context_words(sent, tok.i))
                best = ranked[0]
                # The antonym's own POS tells the realiser not to inflect e.g. an adjective
                # ("unoccupied") that replaces a participle.
                antonym_pos = lookup.pos[lookup.antonyms.index(best.antonym)]
                with timer.stage("realising"):
                    realised = self.realiser.realise(sent, tok.i, best.antonym, antonym_pos)
                if realised is None or realised.text == sent.text:
                    out.append(WordChoice(pair, sent, tok, "unrealisable", lookup))
                    continue
                record = self._record(pair, tok, best.antonym, ranked, realised.text)
                out.append(WordChoice(pair, sent, tok, "ok", lookup, record, realised))
        return out

    def build_candidates(
        self,
        pairs: Sequence[NLIPair],
        stats: GenerationStats | None = None,
        timer: StageTimer | None = None,
        filtered: list[TripleRecord] | None = None,
        every: list[TripleRecord] | None = None,
    ) -> list[TripleRecord]:
        """One candidate record per selected word that has a POS-matching antonym and passes the
        filters; the ones a filter rejects are appended to `filtered`."""
        counts = (stats or self.stats).counts
        timer = timer or self.timer
        with timer.stage("tagging"):
            tagged = self.tagger.tag([p.hypothesis for p in pairs])
        built = self.built_choices(pairs, tagged, counts, timer, every)
        filtered = filtered if filtered is not None else []
        with timer.stage("filters"):
            alive = self.apply_filters(built, counts, filtered)
        if self.config.lm_antonyms > 1:
            with timer.stage(CHOICE):
                alive = self.choose_by_lm(alive, counts, filtered)
        return [c.record for c in alive]

    def built_choices(
        self,
        pairs: Sequence[NLIPair],
        tagged,
        counts: Counter,
        timer: StageTimer,
        every: list[TripleRecord] | None = None,
    ) -> list[WordChoice]:
        """The word choices that built a candidate record (counted in `counts`: words considered,
        skips by reason, candidates built); their records are also appended to `every`."""
        built: list[WordChoice] = []
        for choice in self.choose_words(pairs, tagged, timer):
            counts["words_considered"] += 1
            if choice.record is None:
                counts[f"skipped_{choice.status}"] += 1
                continue
            alternatives = self.alternatives(choice) if self.config.lm_antonyms > 1 else []
            for one in (choice, *alternatives):
                counts["candidates_built"] += 1
                built.append(one)
                if every is not None:
                    every.append(one.record)
        return built

    def alternatives(self, choice: WordChoice) -> list[WordChoice]:
        """The word's next-ranked antonyms after the chosen one, realised (distinct sentences),
        up to `lm_antonyms` candidates in all, for the language model to choose among."""
        out: list[WordChoice] = []
        texts = {choice.sentence.text, choice.record.modified_hypothesis}
        lookup, tok = choice.lookup, choice.token
        for ranked in choice.record.candidates[1:]:
            if len(out) + 1 >= self.config.lm_antonyms:
                break
            antonym = ranked["antonym"]
            pos = lookup.pos[lookup.antonyms.index(antonym)]
            realised = self.realiser.realise(choice.sentence, tok.i, antonym, pos)
            if realised is None or realised.text in texts:
                continue
            texts.add(realised.text)
            record = word_record(
                choice.pair, tok, realised.text, "wordnet", antonym, list(choice.record.candidates)
            )
            out.append(
                WordChoice(choice.pair, choice.sentence, tok, "ok", lookup, record, realised)
            )
        return out

    def choose_by_lm(
        self, choices: list[WordChoice], counts: Counter, rejected: list[TripleRecord]
    ) -> list[WordChoice]:
        """Of each word's surviving candidates, the one the language-model check scores best (d,
        or the judge's p_good; ties: the better vector rank); the others are appended to
        `rejected` (transnli.generator.lm_choice)."""
        words = runs(choices, key=lambda c: (id(c.pair), c.token.i))
        several = [c.record for w in words if len(w) > 1 for c in w]
        scores = iter(pair_scores(self.chooser, several))
        kept = []
        for word in words:
            if len(word) == 1:
                kept.append(word[0])
                continue
            records = [c.record for c in word]
            entries = choice_entries(
                [r.antonym for r in records], [next(scores) for _ in word], self.chooser
            )
            for choice, entry in zip(word, entries, strict=True):
                choice.record.checks[CHOICE] = entry
                if entry["passed"]:
                    kept.append(choice)
                else:
                    choice.record.rejected_by = CHOICE
                    choice.record.reason = f"the language model prefers {entry['chosen']!r}"
                    counts[FILTERED + CHOICE] += 1
                    rejected.append(choice.record)
        return kept

    def apply_filters(
        self, choices: list[WordChoice], counts: Counter, filtered: list[TripleRecord]
    ) -> list[WordChoice]:
        """Each filter over the survivors of the previous one, in one batch per filter."""
        alive = choices
        for flt in self.filters:
            if not alive:
                break
            items = [
                FilterItem(
                    c.sentence,
                    c.token,
                    c.record.antonym,
                    c.lookup.pos[c.lookup.antonyms.index(c.record.antonym)],
                    c.record.modified_hypothesis,
                    tuple(c.record.candidates),
                )
                for c in alive
            ]
            survivors = []
            for choice, verdict in zip(alive, flt.judge_many(items), strict=True):
                rec = choice.record
                rec.checks[flt.name] = verdict.to_dict()
                if verdict.passed:
                    survivors.append(choice)
                else:
                    rec.rejected_by, rec.reason = flt.name, verdict.reason
                    counts[FILTERED + flt.name] += 1
                    filtered.append(rec)
            alive = survivors
        return alive

    def _record(
        self, pair: NLIPair, tok: Token, antonym: str, ranked, modified: str
    ) -> TripleRecord:
        return word_record(pair, tok, modified, "wordnet", antonym, [r.to_dict() for r in ranked])

    # -- checking -------------------------------------------------------------------------------
    def apply_checks(
        self,
        candidates: list[TripleRecord],
        stats: GenerationStats | None = None,
        timer: StageTimer | None = None,
    ) -> tuple[list[TripleRecord], list[TripleRecord]]:
        """Run each check over the survivors of the previous one, in one batch per check."""
        stats = stats or self.stats
        timer = timer or self.timer
        alive, rejected = list(candidates), []
        for check in self.checks:
            if not alive:
                break
            if check.name == "acceptability":
                stats.counts["acceptability_checked"] += len(alive)
            # A check's peak (link-grammar's tables on a hard sentence) should not sit on top
            # of what the stages before it freed but glibc still holds.
            release_free_memory()
            with timer.stage(check.name):
                results = check.check_many(
                    [r.hypothesis for r in alive], [r.modified_hypothesis for r in alive]
                )
            survivors = []
            for rec, res in zip(alive, results, strict=True):
                rec.checks[check.name] = res.to_dict()
                if res.passed:
                    survivors.append(rec)
                else:
                    rec.rejected_by = check.name
                    rec.reason = res.reason or f"{check.backend} check failed"
                    stats.counts[f"rejected_{check.name}"] += 1
                    rejected.append(rec)
            alive = survivors
        if self.config.max_per_sentence:
            alive, dropped = limit_per_sentence(
                alive, self.config.max_per_sentence, self.chooser.backend, self.chooser.measure
            )
            stats.counts[FILTERED + PER_SENTENCE] += len(dropped)
            rejected += dropped
        stats.counts["triples_accepted"] += len(alive)
        # Keep input order for the rejected file too (checks reject in stage order otherwise).
        order = {id(r): i for i, r in enumerate(candidates)}
        rejected.sort(key=lambda r: order[id(r)])
        return alive, rejected

    # -- driving --------------------------------------------------------------------------------
    def build_batch(self, pairs: Sequence[NLIPair]) -> BuiltBatch:
        """The first half of a batch: tagging and building, counted into the batch's own stats."""
        built = BuiltBatch(len(pairs), [], GenerationStats(), StageTimer())
        built.stats.counts["sentences_read"] += len(pairs)
        usable = [p for p in pairs if self.usable(p, built.stats)]
        built.candidates = self.build_candidates(
            usable, built.stats, built.timer, built.filtered, built.built
        )
        return built

    def check_batch(self, built: BuiltBatch) -> BatchResult:
        """The second half: the checks, counted into the batch's stats too."""
        accepted, rejected = self.apply_checks(built.candidates, built.stats, built.timer)
        if built.filtered:  # the rejected file keeps input order (a batch is pickled whole, so
            # the records in `built` are the very objects in `filtered` and `candidates`)
            order = {id(r): k for k, r in enumerate(built.built)}
            rejected = sorted(rejected + built.filtered, key=lambda r: order[id(r)])
        return BatchResult(built.n_pairs, accepted, rejected)

    def _hand_out(self, built: BuiltBatch, result: BatchResult) -> BatchResult:
        self.stats.add(built.stats)
        self.timer.add(built.timer)
        release_free_memory()  # keeps a long run's memory flat (see transnli.generator.memory)
        return result

    def process(self, pairs: Sequence[NLIPair]) -> BatchResult:
        built = self.build_batch(pairs)
        return self._hand_out(built, self.check_batch(built))

    def run(self, pairs: Iterable[NLIPair], batch_size: int | None = None) -> Iterator[BatchResult]:
        for batch in batched(pairs, batch_size or self.config.batch_size):
            yield self.process(batch)


def batched(pairs: Iterable[NLIPair], size: int) -> Iterator[list[NLIPair]]:
    """`size` pairs a batch, the last one shorter (the batches of `WordNetPipeline.run`)."""
    batch: list[NLIPair] = []
    for pair in pairs:
        batch.append(pair)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
