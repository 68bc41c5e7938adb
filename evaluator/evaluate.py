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

import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .alarm_report import AlarmInputs
from .backends import BackendOptions, NLIBackend, Pair, Prediction, create_backend
from .backends.base import sha256_file
from .cache import CachedBackend, LabelCache, default_cache_dir
from .carry import CarriedLabels, CarryPlan
from .distinct import DistinctCount, digest
from .errors import EvaluatorError
from .family_eval import FamilyLabelling
from .formatting import write_jsonl
from .label_table import LabelTable
from .labelling import PairProgress, label_model
from .labels import parse_label_map
from .metrics import EXTRAS_NOTE, MetricCounts, TripleLabels, rule_outcome
from .modelspec import parse_model_specs
from .plot_worker import PlotWorker, plot_worker_enabled
from .report import RowsWriter, find_generation_stats, preload_in_background, write_outputs
from .rules import RULES
from .runinfo import memory_source, model_run_info, run_clock, run_info, write_run_info
from .samples import sample_row
from .schedule import (
    KINDS,
    pairs_of,
)
from .triples import Triple, TripleSource

log = logging.getLogger("transnli")
PROB_DIGITS = 6  # probabilities in predictions.jsonl
# What an evaluation writes into its folder (and what --overwrite replaces; nothing else is touched).
OUTPUT_NAMES = (
    "predictions.jsonl",
    "samples.jsonl",
    "summary.json",
    "report.md",
    "tables",
    "plots",
    "families.jsonl",
    "run_info.json",
)
# Settings that do not change a label: rerunning with another value is the same evaluation.
_NOT_IDENTITY = ("batch_size", "device", "batch_tokens", "compile")


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


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("transnli")
    except Exception:  # noqa: BLE001 - not installed: still report
        return "unknown"


_ABSENT = object()  # a pair not asked (unlike one asked and given no label)


def triple_predictions(t: Triple, labels: LabelTable) -> tuple:
    """A triple's four Predictions in KINDS order; (P,H') None where it was not asked."""
    ph, hh2, h2h, ph2 = pairs_of(t)
    return labels[ph], labels[hh2], labels[h2h], labels.get(ph2)


def triple_labels(t: Triple, labels: LabelTable) -> TripleLabels:
    """The labels the rules read (no Prediction is built for them)."""
    ph, hh2, h2h, ph2 = pairs_of(t)
    got = (
        labels.label(ph),
        labels.label(hh2),
        labels.label(h2h),
        labels.label(ph2) if ph2 in labels else _ABSENT,
    )
    unlabelled = tuple(k for k, label in zip(KINDS, got, strict=True) if label is None)
    return TripleLabels(
        got[0],
        got[1],
        got[2],
        None if got[3] is _ABSENT else got[3],
        t.gold_label,
        pair=ph,
        unlabelled=unlabelled,
    )


def prediction_row(
    t: Triple,
    spec: str,
    labels: LabelTable,
    row: TripleLabels | None = None,
    preds: tuple | None = None,
) -> dict[str, Any]:
    """One line of predictions.jsonl: a triple's four labels and probabilities under a model.
    `row` and `preds`: the triple's labels and Predictions when the caller already has them
    (triple_labels, triple_predictions)."""
    preds = dict(
        zip(
            KINDS, preds if preds is not None else (labels.get(p) for p in pairs_of(t)), strict=True
        )
    )
    outcome = rule_outcome(row if row is not None else triple_labels(t, labels))
    return {
        "id": t.id,
        "dataset": t.dataset,
        "model": spec,
        "gold_label": t.gold_label,
        "labels": {k: (p.label if p else None) for k, p in preds.items()},
        "probs": {k: (p.to_dict(PROB_DIGITS)["probs"] if p else None) for k, p in preds.items()},
        "rule": outcome.rule,
        "violated": outcome.violated,
    }


def _unlabelled_note(backend: NLIBackend, none: int) -> str:
    """ ", 3 without a label (1 failed request, 2 unparseable replies)": an LLM judge's requests that
    failed and replies that named no label are different problems, so they are counted apart."""
    if not none:
        return ""
    d = backend.describe()
    why = []
    if d.get("request_failures"):
        n = d["request_failures"]
        why.append(f"{n} failed request{'s' if n != 1 else ''}")
    if d.get("unparseable"):
        n = d["unparseable"]
        why.append(f"{n} unparseable repl{'ies' if n != 1 else 'y'}")
    return f", {none} without a label" + (f" ({', '.join(why)})" if why else "")


def check_triples_files(paths: Sequence[Path], hash_file: Callable[[Path], str]) -> None:
    """The same file given twice (by path or by content) would count its triples twice: an error."""
    by_path: dict[Path, Path] = {}
    by_digest: dict[str, Path] = {}
    for path in paths:
        resolved = path.resolve()
        if resolved in by_path:
            raise EvaluatorError(
                f"triples file {path} is given twice (also as {by_path[resolved]}); "
                "give each file once"
            )
        by_path[resolved] = path
        digest = hash_file(path)
        if digest in by_digest:
            raise EvaluatorError(
                f"triples files {by_digest[digest]} and {path} have the same content; "
                "give each file once (its triples would be counted twice)"
            )
        by_digest[digest] = path


def warn_shared_ids(ids_by_source: Mapping[str, DistinctCount], source: TripleSource) -> int:
    """Warn about triple ids found in more than one triples file (they stay separate triples);
    returns how many ids are shared. `ids_by_source`: each file's id digests."""
    if len(ids_by_source) < 2:
        return 0
    ids, counts = np.unique(
        np.concatenate([d.values() for d in ids_by_source.values()]), return_counts=True
    )
    shared = ids[counts > 1]
    if not len(shared):
        return 0
    files: dict[str, list[str]] = {}  # the first shared id seen, for the message: read once more
    for window in source.windows(WINDOW_READ):
        for t in window:
            d = digest(t.id)
            i = int(np.searchsorted(shared, d))
            if i < len(shared) and shared[i] == d:
                where = files.setdefault(t.id, [])
                if t.source not in where:
                    where.append(t.source)
                if len(where) > 1:
                    log.warning(
                        "%d triple ids appear in more than one triples file (e.g. %r in %s and %s); "
                        "each file's triple is evaluated and counted on its own",
                        len(shared),
                        t.id,
                        where[0],
                        where[1],
                    )
                    return len(shared)
    return len(shared)


def _run_identity(
    files_info: Sequence[dict[str, Any]], specs: Sequence[str], config: dict[str, Any]
):
    """What makes two evaluations the same one: the triples files (path and content), the model
    specs and the settings that can change a label."""
    return (
        [(f["path"], f["sha256"]) for f in files_info],
        list(specs),
        {k: v for k, v in config.items() if k not in _NOT_IDENTITY},
    )


def _previous_identity(out: Path):
    try:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        prov = summary["provenance"]
        specs = [f"{m['name']}={m['spec']}" for m in prov["models"]]
        return _run_identity(prov["triples_files"], specs, prov["config"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def claim_out_dir(out: Path, identity, overwrite: bool) -> bool:
    """Refuse an --out that holds something other than this evaluation (unless `overwrite`).
    Returns True when it holds another evaluation's outputs (to be replaced)."""
    if not out.exists():
        return False
    if not out.is_dir():
        raise EvaluatorError(f"--out {out} is a file, not a folder")
    if not any(out.iterdir()):
        return False
    previous = _previous_identity(out)
    if previous == identity:
        return False
    if not overwrite:
        what = "the outputs of another evaluation" if previous is not None else "files of its own"
        raise EvaluatorError(
            f"{out} already holds {what}; choose another --out, or pass --overwrite to "
            f"replace them ({', '.join(OUTPUT_NAMES)}; nothing else is touched)"
        )
    return True


def clear_outputs(out: Path) -> list[str]:
    """Remove what an earlier evaluation wrote into `out` (so no stale plot or table survives);
    returns the names removed."""
    import shutil

    removed = []
    for name in OUTPUT_NAMES:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(name + ("/" if name in ("tables", "plots") else ""))
    return removed


def evaluate_triples(
    triple_paths: Sequence[str | Path],
    model_specs: Sequence[str],
    out_dir: str | Path | None,
    *,
    batch_size: int | str = 32,
    device: str = "auto",
    dtype: str = "auto",
    max_length: int | None = None,
    label_map: str | None = None,
    all_pairs: bool = False,
    cache_dir: str | Path | None = None,
    no_cache: bool = False,
    threads: int | None = None,
    show_progress: bool = True,
    plots: bool = True,
    backend_extra: dict[str, Any] | None = None,
    echo: Callable[[str], None] | None = None,
    overwrite: bool = False,
    families: bool = False,
    limit: int | None = None,
    triples: Sequence[Triple] | None = None,
    command_line: Sequence[str] | None = None,
    batch_tokens: int | None = None,
    compile: bool = False,
    window: int | None = None,
) -> EvaluationResult:
    """Label the triples in `triple_paths` with every model in `model_specs` and write
    predictions.jsonl, samples.jsonl, summary.json, report.md, tables/*.csv and plots/ into `out_dir`.

    Options mirror `transnli evaluate`'s flags. Raises EvaluatorError (or a subclass) for anything
    the user can fix. `echo` receives one line per model with what the cache served.
    `out_dir` must be empty, new, or hold this same evaluation; `overwrite` lets it replace another
    evaluation's outputs (OUTPUT_NAMES; other files are left alone). Earlier outputs are replaced
    only once every model has run, so a run that fails leaves the folder as it was.

    `out_dir` None computes without writing anything (the label cache aside); `triples` gives
    triples held in memory instead of files (`triple_paths` then empty); `limit` keeps the first N
    triples; `command_line` is recorded in run_info.json. Model specs may carry a name and
    per-model options (evaluator/modelspec.py).

    `window`: label, count and write this many triples at a time, so that memory does not grow
    with the run (docs/speed.md, "Streaming"); None (or 0) holds the whole run, and the result then
    carries the triples and every model's labels (the Python API's per-triple outcomes). With
    --families the run is always held whole.
    """
    triple_paths = [Path(p) for p in triple_paths]
    model_list = parse_model_specs(model_specs)
    specs = [f"{m.name}={m.canonical}" for m in model_list]
    if not triple_paths and triples is None:
        raise EvaluatorError("no triples file given")
    if not specs:
        raise EvaluatorError("no model given (use --model SPEC, e.g. hf:PATH or precomputed:FILE)")
    if limit is not None and limit < 1:
        raise EvaluatorError("limit must be at least 1 triple")
    if batch_size != "auto" and (not isinstance(batch_size, int) or batch_size < 1):
        raise EvaluatorError("batch size must be at least 1, or auto")
    if batch_tokens is not None and batch_tokens < 1:
        raise EvaluatorError("batch tokens must be at least 1")
    if max_length is not None and max_length < 8:
        raise EvaluatorError("max length must be at least 8 tokens")
    if window is not None and window < 0:
        raise EvaluatorError("window must be at least 1 triple (0: the whole run at once)")
    if label_map:
        parse_label_map(label_map)  # fail before loading anything
    if families or not window:
        window = None  # held whole; families are built over the whole run

    cache = None if no_cache else LabelCache(cache_dir or default_cache_dir())
    hash_file = cache.hash_file if cache else sha256_file
    out = Path(out_dir) if out_dir is not None else None
    try:
        if triples is None:
            check_triples_files(triple_paths, hash_file)
            source = TripleSource(triple_paths, limit=limit)
            files_info = [
                {"path": str(path), "sha256": hash_file(path), "n_triples": None}
                for path in triple_paths
            ]
        else:
            source, triple_paths = TripleSource([], triples, limit), []
            files_info = [memory_source(source.all())]
        config = {
            "all_pairs": all_pairs,
            "batch_size": batch_size,
            "device": device,
            "dtype": dtype,
            "max_length": max_length,
            "label_map": label_map,
            "limit": limit,
        }
        if families:  # only when set: earlier evaluations keep their identity
            config["families"] = True
        if out is not None and out.is_dir():
            RowsWriter.remove_stale(out)
        replaces_other = (
            claim_out_dir(out, _run_identity(files_info, specs, config), overwrite)
            if out is not None
            else False
        )
    except BaseException:
        if cache is not None:
            cache.close()
        raise
    # the command line renders the figures' PDFs on a second process (evaluator/plot_worker.py)
    worker = PlotWorker().start() if plots and out is not None and plot_worker_enabled() else None
    rows = None
    try:
        preload_in_background(
            plots and out is not None
        )  # output libraries load while the models run
        started = run_clock()
        options = BackendOptions(
            batch_size=32 if batch_size == "auto" else batch_size,
            batch_auto=batch_size == "auto",
            batch_tokens=batch_tokens,
            compile=compile,
            device=device,
            dtype=dtype,
            max_length=max_length,
            label_map=label_map,
            threads=threads,
            hash_file=hash_file,
            extra=dict(backend_extra or {}),
        )
        fam = FamilyLabelling(source.all()) if families else None
        rows = RowsWriter(out) if out is not None else None
        try:
            run = _label_models(
                model_list,
                source,
                window,
                options,
                cache,
                fam,
                all_pairs,
                show_progress,
                echo,
                rows,
            )
        finally:
            if cache is not None:
                cache.close()
        for info in files_info:
            if info["n_triples"] is None:
                info["n_triples"] = run.facts.per_source[info["path"]]
        summary = _summary(run, files_info, config, fam)
        info = run_info(command_line, run.used, run_clock() - started)
        held = window is None
        done = EvaluationResult(
            summary=summary,
            out_dir=out,
            files=[],
            stats=run.stats,
            triples=source.all() if held else [],
            labels=run.results if held else [],
            run_info=info,
        )
        if out is None:
            return done
        gen_rows = find_generation_stats(triple_paths, run.facts.source_datasets)
        removed = clear_outputs(out) if out.is_dir() else []
        if replaces_other and removed and echo:
            echo(f"replaced an earlier evaluation's outputs in {out} ({', '.join(removed)})")
        done.files = write_outputs(out, summary, rows, gen_rows, plots=plots, plot_worker=worker)
        rows = None
        if fam is not None:
            done.files.append(fam.write_rows(out / "families.jsonl", write_jsonl))
        done.files.append(write_run_info(out, info))
        return done
    finally:
        if rows is not None:
            rows.discard()
        if worker is not None:
            worker.close()


# read-ahead when the triples are read again only to find something (their ids)
WINDOW_READ = 65_536


@dataclass
class _RunFacts:
    """What one read of the triples, before any model loads, says about them (the same for every
    model): counts per file, datasets in first-seen order, distinct pairs of each kind, ids per
    file, and which pairs come back in a later window (`carry`)."""

    n_triples: int = 0
    per_source: Counter = field(default_factory=Counter)
    source_datasets: dict[str, dict[str, None]] = field(default_factory=dict)
    unique: dict[str, DistinctCount] = field(
        default_factory=lambda: {k: DistinctCount() for k in KINDS}
    )
    ids: dict[str, DistinctCount] = field(default_factory=dict)
    carry: CarryPlan = field(default_factory=CarryPlan)

    def add(self, triples: Sequence[Triple]) -> list[int]:
        """Count the next triples; returns the digests of their pairs, four a triple in KINDS order."""
        self.n_triples += len(triples)
        unique = [self.unique[k] for k in KINDS]
        window = []
        for t in triples:
            self.per_source[t.source] += 1
            self.source_datasets.setdefault(t.source, {})[t.dataset] = None
            self.ids.setdefault(t.source, DistinctCount()).add(digest(t.id))
            for bucket, pair in zip(unique, pairs_of(t), strict=True):
                d = digest(pair)
                bucket.add(d)
                window.append(d)
        self.carry.add_window(window)
        return window

    @property
    def datasets(self) -> list[str]:
        return list(dict.fromkeys(d for names in self.source_datasets.values() for d in names))

    def unique_pair_counts(self) -> dict[str, int]:
        return {kind: len(bucket) for kind, bucket in self.unique.items()}


def read_facts(source: TripleSource, window: int | None, alarms: AlarmInputs | None) -> _RunFacts:
    """Read every triple once before a model loads: a broken line is reported before any
    labelling, the progress bars know the run's size, and the windows know what to carry."""
    facts = _RunFacts()
    for triples in source.windows(window):
        pair_digests = facts.add(triples)
        if alarms is not None:
            alarms.add_triples(triples, pair_digests)
    facts.carry.plan()
    warn_shared_ids(facts.ids, source)
    return facts


@dataclass
class _ModelCounts:
    """One model's running counts over the run: metrics per dataset and overall, and the distinct
    pairs it was asked (and left without a label)."""

    per_dataset: dict[str, MetricCounts] = field(default_factory=dict)
    overall: MetricCounts = field(default_factory=MetricCounts)
    asked: DistinctCount = field(default_factory=DistinctCount)
    unlabelled: DistinctCount = field(default_factory=DistinctCount)

    def add(
        self,
        rows: Sequence[tuple[Triple, TripleLabels]],
        table: LabelTable,
        pair_digests: np.ndarray,
    ) -> None:
        """A window's rows; `pair_digests`: the digests of `table`'s pairs, in its order."""
        per_dataset, overall = self.per_dataset, self.overall
        for t, row in rows:
            counts = per_dataset.get(t.dataset)
            if counts is None:
                counts = per_dataset[t.dataset] = MetricCounts()
            counts.add(row)
            overall.add(row)
        self.asked.extend(pair_digests)
        if table.unlabelled():
            self.unlabelled.extend(
                d for p, d in zip(table, pair_digests, strict=True) if table.label(p) is None
            )

    def entry(self, spec: str, datasets: Sequence[str]) -> dict[str, Any]:
        """The model's item in summary.json's "models"."""
        return {
            "model": spec,
            # unique pairs the model gave no label for (an LLM judge's unparseable replies)
            "unlabelled_pairs": len(self.unlabelled),
            "datasets": [{"dataset": d, **self.per_dataset[d].result()} for d in datasets],
            "overall": self.overall.result(),
        }


@dataclass
class _Labelled:
    """What labelling every model gave: per model its counts, description and run info; the labels
    themselves only when the run was held whole."""

    facts: _RunFacts = field(default_factory=_RunFacts)
    counts: list[tuple[str, _ModelCounts]] = field(default_factory=list)
    alarms: AlarmInputs | None = None
    results: list[tuple[str, LabelTable]] = field(default_factory=list)
    described: list[dict[str, Any]] = field(default_factory=list)
    stats: list[ModelStats] = field(default_factory=list)
    used: list[dict[str, Any]] = field(default_factory=list)


def _label_models(
    model_list,
    source: TripleSource,
    window: int | None,
    options: BackendOptions,
    cache,
    fam: FamilyLabelling | None,
    all_pairs: bool,
    show_progress: bool,
    echo: Callable[[str], None] | None,
    rows: RowsWriter | None,
) -> _Labelled:
    """Load each model in turn (one in memory at a time) and run it over the triples, window by
    window: label what the window (and the families) need, count, write its rows; then close it."""
    alarms = AlarmInputs() if len(model_list) > 1 else None
    run = _Labelled(facts=read_facts(source, window, alarms), alarms=alarms)
    for model in model_list:
        spec = model.name  # what every output calls the model
        model_started = run_clock()
        backend = create_backend(model.target, model.backend_options(options))
        backend.spec = spec
        runner: NLIBackend = backend
        if cache is not None and backend.cacheable:
            runner = CachedBackend(backend, cache)
        counts = _ModelCounts()
        progress = PairProgress(show_progress, spec, run.facts.n_triples)
        carried = CarriedLabels(run.facts.carry)
        extra = 0
        try:
            for triples in source.windows(window):
                labels = label_model(
                    runner, triples, all_pairs=all_pairs, progress=progress, known=carried
                )
                pair_digests = np.fromiter(
                    (digest(p) for p in labels), dtype=np.int64, count=len(labels)
                )
                carried.next_window(labels, pair_digests)
                _count_and_write(spec, triples, labels, pair_digests, counts, rows, run.alarms)
                if fam is not None:
                    progress.close()
                    extra = fam.label(spec, runner, labels, show_progress)
                if window is None:
                    run.results.append((spec, labels))
                del triples, labels  # not held while the next window is read and labelled
            progress.finish()
        finally:
            progress.close()
            runner.close()
        run.counts.append((spec, counts))
        pairs = len(counts.asked)
        st = ModelStats(spec, pairs=pairs + extra)
        if isinstance(runner, CachedBackend):
            st.from_cache, st.computed = runner.hits, runner.computed
        else:
            st.computed = pairs
        run.stats.append(st)
        if echo:
            if isinstance(runner, CachedBackend):
                how = f"{st.from_cache} from cache, {st.computed} computed"
            else:
                how = (
                    "cache not used"
                    if backend.cacheable
                    else getattr(backend, "uncached_note", "no model run")
                )
            echo(
                f"{spec}: {st.pairs} pairs labelled ({how}){_unlabelled_note(backend, len(counts.unlabelled))}"
            )
        run.described.append(
            {
                "name": spec,
                **backend.describe(),
                "spec": model.canonical,
                "pairs_labelled": pairs + extra,
            }
        )
        run.used.append(model_run_info(model, backend, st, run_clock() - model_started))
    return run


def _count_and_write(
    spec: str,
    triples: Sequence[Triple],
    labels: LabelTable,
    pair_digests: np.ndarray,
    counts: _ModelCounts,
    rows: RowsWriter | None,
    alarms: AlarmInputs | None,
) -> None:
    """A window's rule outcomes into the model's counts (and the alarms' inputs), and its rows into
    samples/predictions."""
    window_rows = [(t, triple_labels(t, labels)) for t in triples]
    counts.add(window_rows, labels, pair_digests)
    if alarms is not None:
        alarms.add_labels(spec, (row for _, row in window_rows))
    if rows is not None:
        rows.write(
            sample_row(t, prediction_row(t, spec, labels, row, triple_predictions(t, labels)), row)
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
        "provenance": {
            "transnli_version": _version(),
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
