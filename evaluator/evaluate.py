"""`evaluate_triples`: label triples with one or more NLI models and write the reports.

This is everything `transnli evaluate` does, as a function (`transnli run` calls it after
generating). First every triple is read once (checked, counted, and the pairs that recur in a later
window noted). Then per model: build the backend from its spec, put the label cache in front of it,
and for each window of triples label the first-stage pairs ((P,H), (H,H'), (H',H)), then (P,H')
where (H,H') is mutual E or C (everywhere with all_pairs), add the window to the running counts and
write its rows; free the model. Then the summary (metrics per model x dataset, alarms) and the
other files. A run held whole is one window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from transnli.common.digest import sha256_file
from transnli.common.versions import dist_version

from .alarm_report import AlarmInputs
from .backends import BackendOptions, NLIBackend, Pair, Prediction, create_backend
from .cache import CachedBackend, LabelCache, default_cache_dir
from .carry import CarriedLabels
from .distinct import digest
from .errors import EvaluatorError
from .family_eval import FamilyLabelling
from .label_table import LabelTable
from .labelling import PairProgress, label_model
from .metrics import EXTRAS_NOTE, ModelCounts, quality_section
from .model_checks import UNKNOWN_SAMPLE, warn_about_models
from .modelspec import parse_model_specs
from .outdir import EvaluationFolder, claim_out_dir, run_identity
from .plot_worker import PlotWorker, plot_worker_enabled
from .prepass import RunFacts, read_facts
from .report import RowsWriter, find_generation_stats, preload_in_background, write_outputs
from .rules import RULES
from .runinfo import memory_source, model_run_info, run_clock, run_info, write_run_info
from .samples import prediction_row, sample_row, triple_labels, triple_predictions
from .schedule import blocks, window_size
from .settings import EvaluationSettings
from .triples import Triple, TripleSource, check_runs_finished, check_triples_files


@dataclass
class ModelStats:
    """What labelling cost for one model (not written to the outputs: it differs per run)."""

    spec: str
    pairs: int = 0
    from_cache: int = 0
    computed: int = 0


@dataclass
class EvaluationResult:
    summary: dict[str, Any]
    out_dir: Path | None  # None: computed only, nothing written
    files: list[Path]
    stats: list[ModelStats] = field(default_factory=list)
    # What the tables were computed from (the Python API builds its per-triple outcomes from them):
    # the triples evaluated and, per model name, its labels.
    triples: list[Triple] = field(default_factory=list)
    labels: list[tuple[str, dict[Pair, Prediction]]] = field(default_factory=list)
    run_info: dict[str, Any] = field(default_factory=dict)


def _unlabelled_note(backend: NLIBackend, none: int) -> str:
    """ ", 3 without a label (1 failed request, 2 unparseable replies)": an LLM judge's requests
    that failed and replies that named no label are different problems, so they are counted
    apart."""
    if not none:
        return ""
    why = _unlabelled_why(backend)
    return f", {none} without a label" + (f" ({why})" if why else "")


def _unlabelled_why(backend: NLIBackend) -> str:
    """ "1 failed request, 2 unparseable replies", or "" for a backend that counts neither."""
    d = backend.describe()
    why = []
    if d.get("request_failures"):
        n = d["request_failures"]
        why.append(f"{n} failed request{'s' if n != 1 else ''}")
    if d.get("unparseable"):
        n = d["unparseable"]
        why.append(f"{n} unparseable repl{'ies' if n != 1 else 'y'}")
    return ", ".join(why)


def refuse_unlabelled(spec: str, backend: NLIBackend, counts: ModelCounts) -> None:
    """A model that gave no label for any pair it was asked (an LLM judge whose every reply was
    unparseable or failed) leaves nothing to evaluate: refused in one line, not reported as a
    model with 0% of everything."""
    asked = len(counts.asked)
    if not asked or len(counts.unlabelled) < asked:
        return
    examples = backend.describe().get("unparseable_examples") or []
    said = f"; its first reply: {examples[0]['reply'][:80]!r}" if examples else ""
    why = _unlabelled_why(backend)
    raise EvaluatorError(
        f"{spec} gave no label for any of the {asked} pairs it was asked"
        f"{f' ({why})' if why else ''}{said}: nothing to evaluate. An LLM judge may need room "
        "to answer (--llm-max-tokens) or a larger model; try a few pairs with --limit"
    )


def evaluate_triples(
    triple_paths: Sequence[str | Path],
    model_specs: Sequence[str],
    out_dir: str | Path | None,
    settings: EvaluationSettings | None = None,
    *,
    triples: Sequence[Triple] | None = None,
    echo: Callable[[str], None] | None = None,
    command_line: Sequence[str] | None = None,
) -> EvaluationResult:
    """Label the triples in `triple_paths` (or `triples` held in memory) with every model in
    `model_specs` and write predictions.jsonl, samples.jsonl, summary.json, report.md, tables/*.csv
    and plots/ into `out_dir` (None: write nothing; the label cache aside). Raises EvaluatorError
    for anything the user can fix; `echo` receives one line per model with what the cache served;
    `command_line` is recorded in run_info.json. `out_dir` must be empty, new, or hold this same
    evaluation (`settings.overwrite`: replace another's outputs, once every model has run). A run
    held whole returns the triples and every model's labels; a windowed one keeps memory flat
    (docs/speed.md, "Streaming")."""
    settings = settings or EvaluationSettings()
    triple_paths = [Path(p) for p in triple_paths]
    model_list, specs = _models(model_specs, bool(triple_paths) or triples is not None)
    settings.validate()
    window = None if settings.held_whole else window_size(settings.window)
    cache = None if settings.no_cache else LabelCache(settings.cache_dir or default_cache_dir())
    hash_file = cache.hash_file if cache else sha256_file
    out = Path(out_dir) if out_dir is not None else None
    folder = EvaluationFolder(out) if out is not None else None
    try:
        if folder is not None:
            folder.open()  # the lock first: a second run into --out is refused at once
        source, triple_paths, files_info = _open_triples(triple_paths, triples, settings, hash_file)
        identity = run_identity(files_info, specs, settings.identity())
        replaces_other = folder is not None and claim_out_dir(out, identity, settings.overwrite)
    except BaseException:
        for opened in (cache, folder):
            if opened is not None:
                opened.close()
        raise
    # the command line renders the figures' PDFs on a second process (evaluator/plot_worker.py)
    plots = settings.plots and out is not None
    worker = PlotWorker().start() if plots and plot_worker_enabled() else None
    rows = None
    try:
        preload_in_background(plots)  # output libraries load while the models run
        started = run_clock()
        fam = FamilyLabelling(source.all()) if settings.families else None
        rows = _staged_rows(folder, compare=len(model_list) > 1)
        job = _LabelJob(source, window, _backend_options(settings, hash_file), cache, fam, rows)
        try:
            run = _label_models(model_list, job, settings, echo)
        finally:
            if cache is not None:
                cache.close()
        done = _result(run, source, files_info, settings, fam, out, command_line, started)
        warn_about_models(done.summary)  # on stderr; report.md has them too
        if folder is None:
            return done
        tell = echo if replaces_other else None
        done.files = _write_files(folder, done, run, triple_paths, rows, fam, worker, tell, plots)
        rows = None
        return done
    finally:
        # each step runs even when one before it fails (a flush on a full disk), so the staged
        # files and the lock never outlive a failed run
        with ExitStack() as cleanup:
            if folder is not None:
                cleanup.callback(folder.close)
            if worker is not None:  # before the folder drops the staged files it may write
                cleanup.callback(worker.close)
            if rows is not None:
                cleanup.callback(rows.discard)


def _models(model_specs: Sequence[str], has_triples: bool):
    """The models to run and their specs as the outputs name them."""
    model_list = parse_model_specs(model_specs)
    specs = [f"{m.name}={m.canonical}" for m in model_list]
    if not has_triples:
        raise EvaluatorError("no triples file given")
    if not specs:
        raise EvaluatorError("no model given (use --model SPEC, e.g. hf:PATH or precomputed:FILE)")
    return model_list, specs


class _GuardedRows:
    """The run's RowsWriter, whose writes during labelling report a full disk as one line."""

    def __init__(self, rows: RowsWriter, folder: EvaluationFolder):
        self.rows, self.folder = rows, folder

    def write(self, rows) -> None:
        with self.folder.writing():
            self.rows.write(rows)

    def discard(self) -> None:
        self.rows.discard()


def _staged_rows(folder: EvaluationFolder | None, compare: bool) -> _GuardedRows | None:
    """samples.jsonl and predictions.jsonl, written as the run goes into the staging folder;
    `compare`: also keep every row's rule outcomes for the paired comparison of models."""
    if folder is None:
        return None
    staging = folder.start()
    with folder.writing():
        return _GuardedRows(RowsWriter(staging, compare=compare), folder)


def _write_files(
    folder: EvaluationFolder,
    done: EvaluationResult,
    run: _Labelled,
    triple_paths: list[Path],
    rows: _GuardedRows,
    fam: FamilyLabelling | None,
    worker: PlotWorker | None,
    tell_replaced: Callable[[str], None] | None,
    plots: bool,
) -> list[Path]:
    """Write every output into the staging folder, then put them in place of the folder's earlier
    outputs (evaluator/outdir.py); returns the files written, by their final paths."""
    gen_rows = find_generation_stats(triple_paths, run.facts.source_datasets)
    staging, out = folder.staging, folder.out
    with folder.writing():
        files = write_outputs(
            staging, done.summary, rows.rows, gen_rows, plots=plots, plot_worker=worker
        )
        if fam is not None:
            files.append(fam.write_rows(staging / "families.jsonl"))
        files.append(write_run_info(staging, done.run_info))
    replaced = folder.commit()
    if tell_replaced and replaced:
        tell_replaced(f"replaced an earlier evaluation's outputs in {out} ({', '.join(replaced)})")
    return [out / f.relative_to(staging) for f in files]


def _open_triples(
    triple_paths: list[Path],
    triples: Sequence[Triple] | None,
    settings: EvaluationSettings,
    hash_file: Callable[[Path], str],
) -> tuple[TripleSource, list[Path], list[dict[str, Any]]]:
    """The run's triples (files checked, or triples in memory), the files read, and what
    summary.json records of each source (its count is filled in once the triples are read)."""
    limit = settings.limit
    if triples is not None:
        source = TripleSource([], triples, limit)
        return source, [], [memory_source(source.all())]
    check_runs_finished(triple_paths, settings.allow_unfinished)
    check_triples_files(triple_paths, hash_file)
    files_info = [
        {"path": str(path), "sha256": hash_file(path), "n_triples": None} for path in triple_paths
    ]
    return TripleSource(triple_paths, limit=limit), triple_paths, files_info


def _backend_options(
    settings: EvaluationSettings, hash_file: Callable[[Path], str]
) -> BackendOptions:
    batch_size = settings.batch_size
    return BackendOptions(
        batch_size=32 if batch_size == "auto" else batch_size,
        batch_auto=batch_size == "auto",
        batch_tokens=settings.batch_tokens,
        compile=settings.compile,
        device=settings.device,
        dtype=settings.dtype,
        max_length=settings.max_length,
        label_map=settings.label_map,
        threads=settings.threads,
        hash_file=hash_file,
        extra=dict(settings.backend_extra or {}),
    )


def _result(
    run: _Labelled,
    source: TripleSource,
    files_info: list[dict[str, Any]],
    settings: EvaluationSettings,
    fam: FamilyLabelling | None,
    out: Path | None,
    command_line: Sequence[str] | None,
    started: float,
) -> EvaluationResult:
    """The labelled run as an EvaluationResult (its files not yet written)."""
    for info in files_info:
        if info["n_triples"] is None:
            info["n_triples"] = run.facts.per_source[info["path"]]
    summary = _summary(run, files_info, settings.identity(), fam)
    info = run_info(command_line, run.used, run_clock() - started)
    held = settings.held_whole
    return EvaluationResult(
        summary=summary,
        out_dir=out,
        files=[],
        stats=run.stats,
        triples=source.all() if held else [],
        labels=run.results if held else [],
        run_info=info,
    )


@dataclass
class _Labelled:
    """What labelling every model gave: per model its counts, description and run info; the labels
    themselves only when the run was held whole."""

    facts: RunFacts = field(default_factory=RunFacts)
    counts: list[tuple[str, ModelCounts]] = field(default_factory=list)
    alarms: AlarmInputs | None = None
    results: list[tuple[str, LabelTable]] = field(default_factory=list)
    described: list[dict[str, Any]] = field(default_factory=list)
    stats: list[ModelStats] = field(default_factory=list)
    used: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _LabelJob:
    """What every model of the run is labelled with: the triples, their windows, the backends'
    options, the label cache, the families (or None) and the rows' writer (or None)."""

    source: TripleSource
    window: int | None
    options: BackendOptions
    cache: LabelCache | None
    fam: FamilyLabelling | None
    rows: _GuardedRows | None


def _label_models(
    model_list,
    job: _LabelJob,
    settings: EvaluationSettings,
    echo: Callable[[str], None] | None,
) -> _Labelled:
    """Load each model in turn (one in memory at a time) and run it over the triples, window by
    window: label what the window (and the families) need, count, write its rows; then close it."""
    alarms = AlarmInputs() if len(model_list) > 1 else None
    run = _Labelled(facts=read_facts(job.source, job.window, alarms), alarms=alarms)
    sample = _first_sentences(job.source)
    for model in model_list:
        spec = model.name  # what every output calls the model
        model_started = run_clock()
        backend = create_backend(model.target, model.backend_options(job.options))
        backend.spec = spec
        note = backend.cost_note(run.facts.n_triples)
        if echo and note:
            echo(f"{spec}: {note}")
        runner: NLIBackend = backend
        if job.cache is not None and backend.cacheable:
            runner = CachedBackend(backend, job.cache)
        counts = ModelCounts(settings.confident_level)
        # the tokenizer's unknown-token share on the run's first sentences, whatever the window
        unknown = backend.unknown_token_share(sample)
        try:
            extra = _label_windows(spec, runner, job, settings, counts, run)
        finally:
            runner.close()
        refuse_unlabelled(spec, backend, counts)
        run.counts.append((spec, counts))
        pairs = len(counts.asked)
        st = _model_stats(spec, runner, pairs, extra)
        run.stats.append(st)
        if echo:
            echo(_cache_note(backend, runner, st, len(counts.unlabelled)))
        run.described.append(
            {
                "name": spec,
                **backend.describe(),
                "spec": model.canonical,
                "pairs_labelled": pairs + extra,
                **({} if unknown is None else {"unknown_tokens": round(unknown, 4)}),
            }
        )
        run.used.append(model_run_info(model, backend, st, run_clock() - model_started))
    return run


def _label_windows(
    spec: str,
    runner: NLIBackend,
    job: _LabelJob,
    settings: EvaluationSettings,
    counts: ModelCounts,
    run: _Labelled,
) -> int:
    """One model over every window of the run (and its families, when held whole); returns the
    pairs the families added."""
    most = sum(run.facts.unique_pair_counts().values())  # the bar's total from the start
    progress = PairProgress(settings.show_progress, spec, run.facts.n_triples, most)
    carried = CarriedLabels(run.facts.carry)
    extra = 0
    held = LabelTable() if job.window is None else None  # a run held whole keeps every label
    try:
        for triples in job.source.windows(job.window):
            for block in blocks(triples):
                labels = _label_block(
                    spec, runner, block, settings.all_pairs, progress, carried, counts, job.rows,
                    run,
                )  # fmt: skip
                if held is not None:
                    held.update(labels)
                del labels  # not held while the next block is labelled
            del triples  # not held while the next window is read
        progress.finish()
        if held is not None:
            if job.fam is not None:
                progress.close()
                extra = job.fam.label(spec, runner, held, settings.show_progress)
            run.results.append((spec, held))
    finally:
        progress.close()
    return extra


def _model_stats(spec: str, runner: NLIBackend, pairs: int, extra: int) -> ModelStats:
    st = ModelStats(spec, pairs=pairs + extra)
    if isinstance(runner, CachedBackend):
        st.from_cache, st.computed = runner.hits, runner.computed
    else:
        st.computed = pairs
    return st


def _cache_note(backend: NLIBackend, runner: NLIBackend, st: ModelStats, unlabelled: int) -> str:
    """The line `echo` gets per model: pairs labelled, what the cache served."""
    if isinstance(runner, CachedBackend):
        how = f"{st.from_cache} from cache, {st.computed} computed"
    else:
        how = (
            "cache not used"
            if backend.cacheable
            else getattr(backend, "uncached_note", "no model run")
        )
    return f"{st.spec}: {st.pairs} pairs labelled ({how}){_unlabelled_note(backend, unlabelled)}"


def _first_sentences(source: TripleSource) -> list[str]:
    """The distinct sentences of the run's first UNKNOWN_SAMPLE triples, on which each model's
    unknown-token share is measured (the same in every window, whatever the cache holds)."""
    triples = source.head(UNKNOWN_SAMPLE)
    return list(dict.fromkeys(s for t in triples for s in (t.premise, t.hypothesis, t.modified)))


def _label_block(
    spec: str,
    runner: NLIBackend,
    block: Sequence[Triple],
    all_pairs: bool,
    progress: PairProgress,
    carried: CarriedLabels,
    counts: ModelCounts,
    rows: RowsWriter | None,
    run: _Labelled,
) -> LabelTable:
    """Label one block of triples (pairs an earlier block labelled are carried, not asked again),
    count it and write its rows; returns its labels."""
    labels = label_model(runner, block, all_pairs=all_pairs, progress=progress, known=carried)
    pair_digests = np.fromiter((digest(p) for p in labels), dtype=np.int64, count=len(labels))
    carried.next_window(labels, pair_digests)
    _count_and_write(spec, block, labels, pair_digests, counts, rows, run.alarms, all_pairs)
    return labels


def _count_and_write(
    spec: str,
    triples: Sequence[Triple],
    labels: LabelTable,
    pair_digests: np.ndarray,
    counts: ModelCounts,
    rows: RowsWriter | None,
    alarms: AlarmInputs | None,
    all_pairs: bool,
) -> None:
    """A window's rule outcomes into the model's counts (and the alarms' inputs), and its rows into
    samples/predictions. A triple's row reads its own pairs only (`schedule.shows_ph2`), so it is
    the same in any window."""
    window_rows = [(t, triple_labels(t, labels, all_pairs)) for t in triples]
    counts.add(window_rows, labels, pair_digests)
    if alarms is not None:
        alarms.add_labels(spec, (row for _, row in window_rows))
    if rows is not None:
        rows.write(
            sample_row(
                t,
                prediction_row(t, spec, labels, row, triple_predictions(t, labels, all_pairs)),
                row,
            )
            for t, row in window_rows
        )


def _summary(
    run: _Labelled,
    files_info: list[dict[str, Any]],
    config: dict[str, Any],
    fam: FamilyLabelling | None,
) -> dict[str, Any]:
    """summary.json: metrics per model and dataset, the rules, provenance; alarms with two or more
    models, families when asked for."""
    datasets = run.facts.datasets
    summary = {
        "models": [counts.entry(spec, datasets) for spec, counts in run.counts],
        "datasets": datasets,
        "rules": {r.key: {"name": r.name, "definition": r.description} for r in RULES},
        "extras_note": EXTRAS_NOTE,
        "triple_quality": quality_section(run.counts[0][1].overall),
        "provenance": {
            "transnli_version": dist_version("transnli") or "unknown",
            "triples_files": files_info,
            "n_triples": run.facts.n_triples,
            "n_unique_pairs": run.facts.unique_pair_counts(),
            "config": config,
            "models": run.described,
        },
    }
    alarms = run.alarms.section() if run.alarms is not None else None  # two or more models only
    if alarms is not None:
        summary["alarms"] = alarms
    if fam is not None:
        summary["families"] = fam.summary()
    return summary
