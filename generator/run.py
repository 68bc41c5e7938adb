"""The generation driver: one run of the pipeline over NLI pairs, into a run folder or into memory.

`transnli generate`, `transnli run` and the Python API all call `generate_run`: they build a
`GeneratorConfig` (what a pair yields) and `RunOptions` (how the input is read and the output
kept), and translate the `GeneratorError` it raises. A run folder is resumable: the input is
opened and hashed, and the folder locked, before the pipeline's slow start, so that an unreadable
or empty input or a busy folder fails at once. A finished run of the same input, configuration
and transnli version (and, with the language-model check, the same model files by digest) is
reused as it is (every caller alike), its requested exports made again. A run with the language
model first says what it will cost, and its progress bar counts the model's sentences as it goes.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from transnli.common.llm.base import LLMError
from transnli.generator import build  # by module: tests replace its functions
from transnli.generator.checks.base import BackendUnavailable
from transnli.generator.config import JUDGE_CHECKS, LLM_PIPELINES, LM_CHECKS, GeneratorConfig
from transnli.generator.errors import (
    ConfigError,
    InputSourceError,
    MissingInputError,
    ResourceError,
    RunFolderError,
    RunStoppedError,
    WorkersError,
)
from transnli.generator.inputs import DuplicateCounter, input_identity
from transnli.generator.lm_choice import language_model_check
from transnli.generator.output import OutputError, RunWriter, fingerprint
from transnli.generator.parallel import PooledPipeline, WorkerDied, run_batches
from transnli.generator.readers import InputError, NLIPair, read_pairs
from transnli.generator.record import TripleRecord
from transnli.generator.run_folder import LOCK, REVIEW_LOG

# What config.json records as the source of pairs handed over in memory.
MEMORY_SOURCE = "<memory>"
# Sentences the language model scores an input pair (H and H' of each candidate that reaches the
# check): 2.6 on the shipped SNLI sample, 2.3 on 400 WordNet examples (docs/generation.md).
SENTENCES_PER_PAIR = 2.5
# Options that concern the run folder, refused when nothing is written.
FOLDER_ONLY = ("exports", "overwrite")


@dataclass
class RunOptions:
    """How a run reads its input and keeps its output; what a pair yields is GeneratorConfig's.

    `fmt`, `dataset`, `columns`, `label_order` and `skip_bad` read the input (see
    transnli.generator.readers.read_pairs); `workers` runs the wordnet and negation pipelines on
    several processes (the output is identical). A run folder takes `exports` (parquet, hf,
    card) and `overwrite` (start again instead of resuming, reusing or refusing). `quiet`: no
    progress bar."""

    fmt: str | None = None
    dataset: str | None = None
    columns: Mapping[str, str] | None = None
    label_order: Sequence[str] | None = None
    skip_bad: bool = False
    workers: int = 1
    exports: Sequence[str] = ()
    overwrite: bool = False
    quiet: bool = False

    @classmethod
    def take(cls, values: dict[str, Any]) -> RunOptions:
        """The run options among `values` (keyword arguments), removed from it."""
        return cls(**{f.name: values.pop(f.name) for f in fields(cls) if f.name in values})

    def reading(self) -> dict[str, Any]:
        """The keyword arguments of read_pairs beyond format and skip_bad."""
        return {"dataset": self.dataset, "columns": self.columns, "label_order": self.label_order}

    def check(self, config: GeneratorConfig, writes_folder: bool) -> None:
        if self.workers > 1 and config.pipeline in LLM_PIPELINES:
            raise WorkersError(config.pipeline)
        if not writes_folder:
            bad = [name for name in FOLDER_ONLY if getattr(self, name)]
            if bad:
                raise ConfigError(f"{', '.join(bad)} need out_dir (they concern the run folder)")


@dataclass
class RunResult:
    """The run's statistics (stats.json); in memory, also the accepted triples in input order and
    the rejected candidates (with a run folder they are in its JSONL files)."""

    stats: dict[str, Any]
    out_dir: Path | None = None
    accepted: list[TripleRecord] = field(default_factory=list)
    rejected: list[TripleRecord] = field(default_factory=list)


@dataclass
class _Input:
    """An opened input: its pairs (read lazily), the malformed lines skipped so far, what
    config.json records about it, and its file (for the progress bar's total)."""

    pairs: Iterator[NLIPair]
    bad: Counter
    desc: dict[str, Any]
    path: Path | None = None


def generate_run(
    source: str | Path | Iterable[NLIPair],
    config: GeneratorConfig,
    out_dir: str | Path | None = None,
    options: RunOptions | None = None,
    *,
    echo: Callable[[str], None] | None = None,
) -> RunResult:
    """Run the pipeline of `config` over `source`: a file (JSONL, CSV, TSV, or the native files of
    SNLI, MultiNLI, ANLI, WANLI), a hub dataset as "hf:NAME:SPLIT", or NLIPair objects in memory.

    With `out_dir`, the run folder (triples.jsonl, rejected.jsonl, stats.json, config.json; an
    unfinished run there is resumed, a finished one of the same settings reused); without,
    nothing is written and the triples come back in memory. `echo` receives the lines a user
    reads (resuming, reusing, exports, the run's summary). Raises GeneratorError (a subclass) for
    anything the user can fix, an input without a single pair included."""
    options = options or RunOptions()
    say = echo or (lambda line: None)
    options.check(config, writes_folder=out_dir is not None)
    opened = _open_input(source, options)
    _wordnet_ready(config)
    if out_dir is None:
        return _run_in_memory(config, opened, options)
    out = Path(out_dir)
    # The tool's version too: another version may judge or word records differently, and a run
    # must not mix the two (resuming across an upgrade is refused; --overwrite starts again).
    identity = {
        "input": opened.desc,
        "config": config.fingerprint_dict(),
        "transnli": build.dist_version("transnli"),
    }
    lm_digest = _lm_digest(config)
    if lm_digest is not None:  # the model's weights decide the verdicts as much as its name
        identity["lm_weights_sha256"] = lm_digest
    judge_digest = _judge_digest(config)
    if judge_digest is not None:  # so does the judge's file (the shipped one changes on retraining)
        identity["judge_sha256"] = judge_digest
    writer = RunWriter(out_dir, fingerprint(identity), overwrite=options.overwrite)
    created = not out.exists()
    try:
        writer.lock()  # before the slow start too: a second run into OUT refuses at once
        if options.overwrite and (out / REVIEW_LOG).is_file():
            say(
                f"keeping the judgements in {out / REVIEW_LOG}: each counts only while its triple "
                "comes out unchanged (same content digest); `transnli review --agreement` "
                "reports the others"
            )
        finished = writer.finished_stats()
        if finished is not None:
            same = "(same input and config"
            same += " and language model weights); " if lm_digest else "); "
            same += "--overwrite to redo"
            say(f"reusing the finished run in {out_dir} {same}")
            for path in writer.write_exports(list(options.exports)):
                say(f"exported {path}")
            return RunResult(stats=finished, out_dir=out)
        writer.preflight()  # a folder open() would refuse is refused before the model loads
        try:
            pipeline = _build(config, options.workers)
        except ResourceError:
            writer.close()
            if created:  # nothing but the lock was written: leave no folder behind
                with contextlib.suppress(OSError):
                    (out / LOCK).unlink()
                    out.rmdir()
            raise
        try:
            with _closing(pipeline):
                stats = _write_run(writer, pipeline, config, opened, out_dir, options, say)
        except BackendUnavailable as e:  # a check that fails mid-run (a model that gives NaN)
            raise ResourceError(
                f"{e}. The run stopped; {out} keeps every finished batch, and the same command "
                "resumes it once the cause is fixed"
            ) from e
        return RunResult(stats=stats, out_dir=out)
    except OutputError as e:
        raise RunFolderError(str(e)) from e
    finally:
        writer.close()


def _open_input(source, options: RunOptions) -> _Input:
    """Open the input (its format detected) and describe it, before the pipeline's slow start."""
    reading = options.reading()
    if not isinstance(source, (str, Path)):
        pairs = list(source)
        if not pairs:
            raise InputSourceError("no NLI pairs were given (an empty list); nothing to generate")
        desc = {"source": MEMORY_SOURCE, "format": None, **_memory_identity(pairs)}
        desc.update({key: value for key, value in reading.items() if value})
        return _Input(iter(pairs), Counter(), desc)
    source = str(source)
    if not source.startswith("hf:") and not Path(source).exists():
        raise MissingInputError(source)
    bad: Counter = Counter()
    try:
        pairs = read_pairs(
            source, format=options.fmt, skip_bad=options.skip_bad, bad_counter=bad, **reading
        )
        pairs = _not_empty(pairs, source, bad)
        desc = input_identity(source, options.fmt)
    except InputError as e:
        raise InputSourceError(str(e), e.line) from e
    except OSError as e:
        raise InputSourceError(f"cannot read {source}: {e.strerror or e}") from e
    desc.update({key: value for key, value in reading.items() if value})  # as before when unset
    path = Path(source)
    return _Input(pairs, bad, desc, path if path.is_file() else None)


def _not_empty(pairs: Iterator[NLIPair], source: str, bad: Counter) -> Iterator[NLIPair]:
    """`pairs` as they were, once its first pair is read; an input without one is an error (a run
    of nothing would finish with 0 triples, exit status 0, and hide a wrong file or filter)."""
    first = next(pairs, None)
    if first is None:
        skipped = f" ({bad['malformed']} malformed lines skipped)" if bad["malformed"] else ""
        raise InputSourceError(f"{source} holds no NLI pairs{skipped}; nothing to generate")
    return itertools.chain([first], pairs)


def _memory_identity(pairs: Sequence[NLIPair]) -> dict[str, Any]:
    """What identifies pairs given in memory: their number and the sha256 of their fields."""
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(json.dumps(asdict(pair), ensure_ascii=False, sort_keys=True).encode())
        digest.update(b"\n")
    return {"pairs": len(pairs), "sha256": digest.hexdigest()}


def _lm_digest(config: GeneratorConfig) -> str | None:
    """The digest of the language model's files when the run uses one (None for a hub id, or
    without the model): a finished run is reused only with the same weights. A model that cannot
    be found fails here, before the run folder is touched."""
    if config.acceptability not in LM_CHECKS:
        return None
    from transnli.common.lm.conversion import resolve_model_folder
    from transnli.common.lm.settings import LMError, LMSettings

    try:
        _, identity = resolve_model_folder(
            LMSettings(spec=config.lm, dtype=config.lm_dtype), verify=False
        )
    except LMError as e:
        raise ResourceError(f"acceptability backend '{config.acceptability}': {e}") from e
    return identity.get("weights_sha256")


def _wordnet_ready(config: GeneratorConfig) -> None:
    """WordNet for nltk, built on first use where `transnli setup` has not run, before the run
    folder is touched; its absence is one line (ResourceError). The "llm" pipeline runs without
    WordNet (it then only skips comparing each answer with WordNet's choice)."""
    from transnli.generator.doctor import find_wordnet
    from transnli.generator.wordnet import provide_wordnet

    if find_wordnet() is not None:  # found without importing nltk (seconds): a reused run is quick
        return
    try:
        provide_wordnet()
    except LookupError as e:
        if config.pipeline != "llm":
            raise ResourceError(str(e)) from e


def _judge_digest(config: GeneratorConfig) -> str | None:
    """The sha256 of the judge file a run with the judge check uses (None without it); a missing
    file fails here, before the run folder is touched."""
    if config.acceptability not in JUDGE_CHECKS:
        return None
    from transnli.common.digest import sha256_file
    from transnli.generator.judge import default_judge_path
    from transnli.generator.pair_judge import default_pair_judge_path

    if config.judge_model:
        path = Path(config.judge_model)
    elif config.acceptability == "judge":
        path = default_judge_path()
    else:
        path = default_pair_judge_path()
    try:
        return sha256_file(path)  # a pair judge is a folder: its files' digest
    except OSError as e:
        raise ResourceError(
            f"acceptability backend '{config.acceptability}': {path}: {e.strerror}"
        ) from e


def _build(config: GeneratorConfig, workers: int = 1):
    """The pipeline of `config`; with several workers, their PooledPipeline, started and ready
    (the parent runs no pipeline itself, so it builds none)."""
    try:
        if workers > 1:
            return PooledPipeline(config, workers)
        return build.build_pipeline(config)
    except (BackendUnavailable, RuntimeError, FileNotFoundError, LookupError) as e:
        raise ResourceError(str(e)) from e


def _count_lines(path: Path, limit: int | None) -> int | None:
    """Total for the progress bar."""
    with open(path, "rb") as fh:
        n = sum(1 for line in fh if line.strip())
    if path.suffix in (".csv", ".tsv", ".txt"):
        n -= 1  # header row
    return min(n, limit) if limit is not None else n


def progress_bar(opened: _Input, limit: int | None, done: int, quiet: bool):
    """The run's progress bar on stderr, counting input pairs."""
    from tqdm import tqdm

    total = _count_lines(opened.path, limit) if opened.path is not None and not quiet else None
    return tqdm(
        total=total, initial=done, unit="pair", desc="generate", disable=quiet, file=sys.stderr
    )


def language_model(pipeline):
    """The language model (CausalLMScorer) of the pipeline's lm or judge check, or None."""
    check = language_model_check(getattr(pipeline, "checks", ()))
    return getattr(check, "scorer", None)


class LMProgress:
    """The language model's work on the progress bar, told after each of the model's batches: a
    pipeline batch of 256 pairs keeps the model busy for minutes on a CPU, and a bar that counted
    pairs only when a pipeline batch ends would sit at 0 all that time. So the pairs of the batch
    in progress move with the sentences scored (SENTENCES_PER_PAIR each, never the whole batch
    before it ends), and the batch's end sets the exact count; the postfix says how many sentences
    the model scored and how many the score cache served."""

    def __init__(self, bar, scorer, batch_pairs: int, left: int | None):
        self.bar, self.scorer = bar, scorer
        self.batch_pairs = batch_pairs  # the most pairs one pipeline batch holds
        self.left = left  # pairs still to do (None: unknown)
        self.computed = 0  # sentences the model scored, as it reports them after each batch
        self.start = self.batch_start = self.seen()
        self.credited = 0  # pairs of the batch in progress already on the bar

    def seen(self) -> tuple[int, int]:
        """(scored, served by the score cache) so far; the scorer counts its cache hits before
        the model's batches start."""
        return self.computed, self.scorer.cached

    def __call__(self, n: int) -> None:
        self.computed += n
        computed, cached = self.seen()
        in_batch = computed - self.batch_start[0] + cached - self.batch_start[1]
        most = self.batch_pairs if self.left is None else min(self.batch_pairs, self.left)
        want = min(int(in_batch / SENTENCES_PER_PAIR), most - 1)
        if want > self.credited:
            self.bar.update(want - self.credited)
            self.credited = want
        self.bar.set_postfix_str(
            f"lm: {computed - self.start[0]} sentences scored, {cached - self.start[1]} from the "
            "score cache",
            refresh=False,
        )
        self.bar.update(0)  # redraws when tqdm's interval has passed

    def batch_done(self, n_pairs: int) -> None:
        """The pipeline batch of `n_pairs` ended: the bar gets the rest of its pairs."""
        self.bar.update(n_pairs - self.credited)
        self.credited, self.batch_start = 0, self.seen()
        if self.left is not None:
            self.left = max(self.left - n_pairs, 0)


def lm_cost_line(pipeline, pairs: int | None, run: str | None = None) -> str | None:
    """What the language model will cost this run, said before it starts: its sentences (about
    SENTENCES_PER_PAIR an input pair) at the speed measured now on this device; nothing when the
    score cache holds every sentence an earlier run of the same key `run` (input, settings,
    weights) had scored. None without the model."""
    scorer = language_model(pipeline)
    if scorer is None:
        return None
    from transnli.common.lm.settings import LMError

    ident = scorer.identity
    model = (
        f"{ident.get('spec')} ({ident.get('class')}, {ident.get('dtype')}, {scorer.model.device})"
    )
    held = scorer.run_sentences(run) if run is not None else None
    if held is not None:
        return (
            f"language model {model}: the score cache holds the {held} sentences an earlier run "
            "of this input and these settings had scored: next to nothing to compute"
        )
    try:
        rate = scorer.measure_speed()
    except LMError:  # a short context: the measuring sentences do not fit; the run says so later
        rate = None
    speed = f"{rate:.1f} sentences/s measured now" if rate else "speed not measured"
    if pairs is None:
        return f"language model {model}: about {SENTENCES_PER_PAIR} sentences a pair, {speed}"
    sentences = round(pairs * SENTENCES_PER_PAIR)
    cost = (
        f"; about {_duration(sentences / rate)} (sentences in the score cache cost nothing)"
        if rate
        else ""
    )
    return (
        f"language model {model}: about {sentences} sentences to score for {pairs} pairs"
        f" ({SENTENCES_PER_PAIR} a pair), {speed}" + cost
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _run_batches(pipeline, opened: _Input, options: RunOptions, sink, *, done: int, folder: bool):
    """Run the pipeline over the input's pairs after the first `done` (what a stopped run wrote),
    handing each batch to `sink`; returns the duplicate-pair counter. The reader and the
    duplicate counter see the input from its start (also on resume), so their counts are
    assigned to the statistics, not added. `folder`: a run folder is written (and resumable)."""
    stats, limit = pipeline.stats, pipeline.config.limit
    duplicates = DuplicateCounter()
    bar = progress_bar(opened, limit, done, options.quiet)
    scorer = language_model(pipeline)
    lm = None
    if scorer is not None:
        left = None if bar.total is None else max(bar.total - done, 0)
        lm = scorer.progress = LMProgress(bar, scorer, pipeline.config.batch_size, left)

    def recounted() -> None:
        if opened.bad:
            stats.skipped_sentences["malformed"] = opened.bad["malformed"]
        stats.counts["duplicate_pairs"] = duplicates.count

    try:
        pairs = itertools.islice(duplicates.watch(opened.pairs), done, limit)
        for batch in run_batches(pipeline, pairs, options.workers):
            recounted()
            sink(batch)
            if lm is not None:
                lm.batch_done(batch.n_pairs)
            else:
                bar.update(batch.n_pairs)
    except InputError as e:
        raise InputSourceError(str(e), e.line) from e
    except LLMError as e:
        resume = "Run the same command again to resume; replies received so far are cached."
        raise RunStoppedError(f"{e}. {resume}" if folder else str(e)) from e
    except WorkerDied as e:
        resume = "Run the same command again to resume (with fewer --workers if memory is short)."
        raise RunStoppedError(f"{e}. {resume}" if folder else str(e)) from e
    finally:
        if scorer is not None:
            scorer.progress = None
        bar.close()
    recounted()  # malformed lines after the last full batch
    return duplicates


def _run_in_memory(config: GeneratorConfig, opened: _Input, options: RunOptions) -> RunResult:
    pipeline = _build(config, options.workers)
    result = RunResult(stats={})

    def keep(batch) -> None:
        result.accepted += batch.accepted
        result.rejected += batch.rejected

    with _closing(pipeline):
        _run_batches(pipeline, opened, options, keep, done=0, folder=False)
    result.stats = pipeline.stats.to_dict()
    return result


@contextlib.contextmanager
def _closing(pipeline):
    """Close the pipeline's LLM client at the end, or its workers (stopped at once, their
    batches dropped, when the run fails)."""
    try:
        yield pipeline
    except BaseException:
        if isinstance(pipeline, PooledPipeline):
            pipeline.terminate()
        raise
    finally:
        if isinstance(pipeline, PooledPipeline):
            pipeline.close()  # nothing left to do after terminate()
        else:
            client = getattr(pipeline, "client", None)
            if client is not None:
                client.close()


def _ask(pipeline, function, *args):
    """`function(pipeline, *args)`; a PooledPipeline's worker answers for the pipeline it holds."""
    if isinstance(pipeline, PooledPipeline):
        return pipeline.call(function, *args)
    return function(pipeline, *args)


def _write_run(writer, pipeline, config, opened: _Input, out_dir, options: RunOptions, say):
    """Open the run folder (resuming a stopped run), write every batch, finish; returns the
    stats."""
    done = writer.open()
    if writer.resumed_stats:
        pipeline.stats = type(pipeline.stats).from_dict(writer.resumed_stats)
    total = _count_lines(opened.path, config.limit) if opened.path is not None else None
    cost = _ask(pipeline, lm_cost_line, None if total is None else max(total - done, 0), writer.fp)
    if cost:
        say(cost)
    scorer = language_model(pipeline)
    asked = 0 if scorer is None else scorer.computed + scorer.cached
    if done:
        say(f"Resuming {out_dir}: {done} pairs already done.")
    elif writer.resumed:
        say(f"Restarting {out_dir}: the last run stopped before its first checkpoint.")
    writer.write_config(_ask(pipeline, build.pipeline_provenance, opened.desc))

    def write(batch) -> None:
        writer.write_batch(
            batch.accepted, batch.rejected, batch.n_pairs, pipeline.stats.checkpoint_dict()
        )

    duplicates = _run_batches(pipeline, opened, options, write, done=done, folder=True)
    # the whole input's sentences are in the cache now (counted here: in this process)
    if scorer is not None and not done and options.workers <= 1:
        scorer.note_run(writer.fp, scorer.computed + scorer.cached - asked)
    stats = pipeline.stats.to_dict()
    for path in writer.finish(stats, list(options.exports)):
        say(f"exported {path}")
    _report(say, stats, duplicates, opened, out_dir, pipeline)
    return stats


def _report(say, stats: dict, duplicates: DuplicateCounter, opened: _Input, out_dir, pipeline):
    """The lines that close a run: repeated input pairs, the counts, and the LLM's usage."""
    if duplicates.count:
        first = duplicates.first
        where = f"{opened.desc['source']}:{first.line}" if first.line else first.source_id
        say(
            f"warning: {duplicates.count} input pairs repeat the premise and hypothesis of an "
            f"earlier pair (the first at {where}); their triples appear again. stats.json counts "
            "them as duplicate_pairs."
        )
    say(
        f"{stats['sentences_read']} sentences, {stats['candidates_built']} candidates, "
        f"{stats['triples_accepted']} triples -> {Path(out_dir) / 'triples.jsonl'}"
    )
    client = getattr(pipeline, "client", None)
    if client is not None:
        u = getattr(client, "run_usage", None) or client.usage.to_dict()
        llm = stats["llm"]
        say(
            f"LLM {llm['backend']}:{llm['model']}: "
            f"{llm['answers_meeting_requirements']}/{llm['answers']} answers "
            f"met the prompt's requirements; this run: {u['prompts']} prompts, "
            f"{u.get('cache_hits', 0)} from the "
            f"cache, {u['requests']} requests, {u['retries']} retries, {u['errors']} failed, "
            f"{u['prompt_tokens'] + u['completion_tokens']} tokens, {u['seconds']:.1f} s"
        )
