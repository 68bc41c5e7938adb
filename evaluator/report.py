"""Writing the results: predictions.jsonl, samples.jsonl, summary.json, report.md, tables/*.csv,
plots/ (evaluator/plots.py).

Every file is deterministic: the same triples, models and options give byte-identical files
(fixed order, sorted or fixed keys, no timestamps; PNGs without a Software stamp).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from .compare import CompareSettings, FlagTable, comparison_result, write_comparison
from .compare import report_lines as comparison_lines
from .formatting import (
    DASH,
    count_rate,
    json_text,
    markdown_table,
    noise_cells,
    pct,
    rate_with_ci,
    write_csv,
    write_json,
)
from .metric_rows import NOISE_COLUMNS, noise_columns, per_dataset_table, per_model_table
from .rules import EXTRA_KEYS, RULES
from .samples import SAMPLES_NAME, ExampleCollector, prediction_of, render_examples

# --------------------------------------------------------------------------- preloading
_PRELOADED: list = []


def preload_in_background(plots: bool = True) -> None:
    """Import what writing the outputs needs (pandas; matplotlib for plots: about a second) on a
    background thread, so that it happens while the model works (torch releases the GIL in its
    kernels) instead of after it. Harmless to call more than once; errors surface later, at the
    real import."""
    if _PRELOADED:
        return
    import threading

    def work() -> None:
        try:
            import pandas  # noqa: F401

            if plots:
                import matplotlib  # noqa: F401
                from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
                from matplotlib.figure import Figure  # noqa: F401
        except Exception:  # noqa: BLE001 - the real import reports it
            pass

    thread = threading.Thread(target=work, name="transnli-preload", daemon=True)
    _PRELOADED.append(thread)
    thread.start()


# --------------------------------------------------------------------------- tables
def _cells(summary: dict[str, Any]):
    """(dataset, model spec, metrics) in dataset then model order."""
    for dataset in summary["datasets"]:
        for model in summary["models"]:
            for entry in model["datasets"]:
                if entry["dataset"] == dataset:
                    yield dataset, model["model"], entry


def wide_table(summary: dict[str, Any], value, numeric: bool):
    """Datasets as rows, models as columns; `value(entry, numeric)` gives a cell."""
    import pandas as pd

    models = [m["model"] for m in summary["models"]]
    rows = {d: {"dataset": d} for d in summary["datasets"]}
    for dataset, model, entry in _cells(summary):
        rows[dataset][model] = value(entry, numeric)
    return pd.DataFrame(list(rows.values()), columns=["dataset", *models])


def accuracy_table(summary, numeric=False):
    def value(e, num):
        if num:
            return e["accuracy"]
        if e["accuracy"] is None:
            return DASH
        right = round(e["accuracy"] * e["accuracy_pairs"])
        return count_rate(e["accuracy"], right, e["accuracy_pairs"])

    return wide_table(summary, value, numeric)


def mutual_table(summary, which: str, numeric=False):
    key = f"mutual_{which}"

    def value(e, num):
        if num:
            return e[f"{key}_rate"]
        return count_rate(e[f"{key}_rate"], e[key], e["n_triples"])

    return wide_table(summary, value, numeric)


def rules_table(summary, extras: bool = False):
    """Table 4 layout: one row per (dataset, rule), models as columns, cells rate [CI] (k/n)."""
    import pandas as pd

    models = [m["model"] for m in summary["models"]]
    keys = EXTRA_KEYS if extras else tuple(r.key for r in RULES)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for dataset, model, entry in _cells(summary):
        source = entry["extras"] if extras else entry["rules"]
        for key in keys:
            cell = source[key]
            row = rows.setdefault(
                (dataset, key), {"dataset": dataset, "rule": key, "name": cell["name"]}
            )
            row[model] = rate_with_ci(cell)
    return pd.DataFrame(list(rows.values()), columns=["dataset", "rule", "name", *models])


def rules_long(summary, extras: bool = False):
    """The numbers behind Table 4 (or the extras), one row per dataset x rule x model."""
    import pandas as pd

    keys = EXTRA_KEYS if extras else tuple(r.key for r in RULES)
    rows = []
    for dataset, model, entry in _cells(summary):
        source = entry["extras"] if extras else entry["rules"]
        for key in keys:
            c = source[key]
            lo, hi = c["ci95"] if c["ci95"] else (None, None)
            rows.append(
                {
                    "dataset": dataset,
                    "rule": key,
                    "name": c["name"],
                    "model": model,
                    "cases": c["cases"],
                    "violations": c["violations"],
                    "rate": c["rate"],
                    "ci95_low": lo,
                    "ci95_high": hi,
                    **noise_columns(c),
                }
            )
    cols = [
        "dataset",
        "rule",
        "name",
        "model",
        "cases",
        "violations",
        "rate",
        "ci95_low",
        "ci95_high",
        *NOISE_COLUMNS,
    ]
    return pd.DataFrame(rows, columns=cols)


def confident_table(summary, extras: bool = False):
    """Beside Table 4: one row per dataset x rule x model, the rate over all cases, over the
    triples the judge is confident in, and p_good-weighted (only datasets with p_good)."""
    import pandas as pd

    level = summary["triple_quality"]["level"]
    keys = EXTRA_KEYS if extras else tuple(r.key for r in RULES)
    rows = []
    for dataset, model, entry in _cells(summary):
        if "p_good" not in entry:
            continue
        source = entry["extras"] if extras else entry["rules"]
        for key in keys:
            confident, weighted = noise_cells(source[key])
            rows.append(
                {
                    "dataset": dataset,
                    "rule": f"{key} {source[key]['name']}",
                    "model": model,
                    "all triples": rate_with_ci(source[key]),
                    f"p_good >= {level:g}": confident,
                    "p_good-weighted": weighted,
                }
            )
    return pd.DataFrame(rows)


def quality_lines(summary: dict[str, Any]) -> list[str]:
    """report.md's section on violation rates over the triples the judge trusts; where no triple
    carries p_good, one paragraph that says so."""
    quality = summary.get("triple_quality")
    if quality is None:  # a summary written before this section existed
        return []
    title = "## Table 4b. Violation rates on the triples the judge trusts"
    n, judged = quality["n_triples"], quality["p_good_triples"]
    if not judged:
        return [
            title,
            "",
            "No triple carries the judge's p_good (`checks.acceptability.p_good`: the `fast` "
            "preset, an older run or another generator's file), so the rates above cannot be "
            "split by how likely each triple is to be good: a violation on a bad triple (an H' "
            "that is not coherent English, or means the same as H) counts as the model's.",
            "",
        ]
    level = quality["level"]
    coverage = (
        "Every triple carries"
        if judged == n
        else f"{judged} of {n} triples carry (the rates below are over those only)"
    )
    return [
        title,
        "",
        f"{coverage} the judge's p_good, its calibrated probability that H' is good (mean "
        f"{quality['mean_p_good']:.3f}); {quality['confident_triples']} have p_good >= {level:g}. "
        f"Per rule: the rate over all cases (Table 4); over the cases whose triple has p_good "
        f">= {level:g} (Wilson 95% interval); and p_good-weighted, sum(p_good x violated) / "
        "sum(p_good) (Wilson 95% interval on the effective sample size n_eff). A rate that "
        "falls on the confident triples rested partly on triples the judge doubts; one that "
        "holds there is the model's own (docs/evaluation.md, 'Rates that noise cannot fake').",
        "",
        markdown_table(confident_table(summary)),
        "",
    ]


# --------------------------------------------------------------------------- Table 9
def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return value


def _stats_row(dataset: str, data: dict[str, Any]) -> dict[str, Any] | None:
    row = {
        "dataset": dataset,
        "sentences_read": _num(data.get("sentences_read")),
        "candidates_built": _num(data.get("candidates_built")),
        "triples_accepted": _num(data.get("triples_accepted")),
        "acceptance_rate": _num(data.get("acceptance_rate")),
    }
    if (
        row["acceptance_rate"] is None
        and row["candidates_built"]
        and row["triples_accepted"] is not None
    ):
        row["acceptance_rate"] = row["triples_accepted"] / row["candidates_built"]
    if all(row[k] is None for k in row if k != "dataset"):
        return None
    return row


def find_generation_stats(
    triple_paths: Sequence[Path], datasets_of: Mapping[str, Iterable[str]]
) -> list[dict[str, Any]]:
    """Table 9 rows from the generator's stats.json beside each triples file (read defensively:
    missing keys stay empty, a broken file is skipped); `datasets_of`: each file's dataset names
    in first-seen order."""
    rows: list[dict[str, Any]] = []
    seen: set[Path] = set()
    for path in dict.fromkeys(Path(p) for p in triple_paths):
        stem = path.name.split(".")[0]
        for candidate in (path.parent / f"{stem}.stats.json", path.parent / "stats.json"):
            if not candidate.is_file():
                continue
            resolved = candidate.resolve()
            if resolved in seen:
                break
            seen.add(resolved)
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                break
            if not isinstance(data, dict):
                break
            per = data.get("per_dataset") or data.get("datasets")
            if isinstance(per, dict) and per and all(isinstance(v, dict) for v in per.values()):
                for name, sub in per.items():
                    row = _stats_row(str(name), sub)
                    if row:
                        rows.append(row)
                break
            names = list(datasets_of.get(str(path), ()))
            name = (
                data.get("dataset")
                if isinstance(data.get("dataset"), str)
                else (names[0] if len(names) == 1 else stem)
            )
            row = _stats_row(name, data)
            if row:
                rows.append(row)
            break
    return rows


def table9(rows: list[dict[str, Any]], numeric: bool = False):
    import pandas as pd

    cols = ["dataset", "sentences_read", "candidates_built", "triples_accepted", "acceptance_rate"]
    df = pd.DataFrame(rows, columns=cols)
    if not numeric:
        df = df.astype(object)
        for col in cols[1:4]:
            df[col] = [
                DASH if v is None or (isinstance(v, float) and math.isnan(v)) else f"{int(v)}"
                for v in df[col]
            ]
        df["acceptance_rate"] = [
            pct(None if v is None or (isinstance(v, float) and math.isnan(v)) else v)
            for v in df["acceptance_rate"]
        ]
    return df


# --------------------------------------------------------------------------- report.md
def _report_intro(summary: dict[str, Any]) -> list[str]:
    """report.md's title, the triples and models it covers, and which pairs were labelled."""
    prov = summary["provenance"]
    lines = ["# transnli evaluation report", ""]
    lines.append(
        f"{prov['n_triples']} triples from "
        + ", ".join(f"`{f['path']}` ({f['n_triples']})" for f in prov["triples_files"])
        + "; datasets: "
        + ", ".join(summary["datasets"])
        + "."
    )
    lines += ["", "Models:", ""]
    for m in prov["models"]:
        lines.append(
            f"- {m.get('name', m['spec'])}: `{m['spec']}`, identity `{m['identity']}`, "
            f"{m['pairs_labelled']} pairs labelled"
        )
    lines += [
        "",
        "Pairs: (P,H), (H,H'), (H',H) for every triple; (P,H') "
        + (
            "for every triple (--all-pairs)."
            if prov["config"]["all_pairs"]
            else "only where (H,H') is mutual entailment or mutual contradiction."
        ),
        "",
    ]
    return lines


def render_report(
    summary: dict[str, Any], gen_rows: list[dict[str, Any]], examples=None, comparison=None
) -> str:
    """report.md; `comparison`: the paired comparison of the models (compare.comparison_result),
    None with one model."""
    from .model_checks import report_lines as warning_lines

    lines = _report_intro(summary)
    lines += warning_lines(summary)  # models that look broken (one label, below chance)
    lines += [
        "## Table 1. Accuracy of M(P,H) against gold labels",
        "",
        "Over the distinct (P,H) pairs that have a gold label; – where none has one.",
        "",
        markdown_table(accuracy_table(summary)),
        "",
    ]
    lines += [
        "## Table 2. Mutual contradiction rate of (H,H')",
        "",
        "M(H,H') = M(H',H) = contradiction, over all triples.",
        "",
        markdown_table(mutual_table(summary, "contradiction")),
        "",
    ]
    lines += [
        "## Table 3. Mutual entailment rate of (H,H')",
        "",
        "M(H,H') = M(H',H) = entailment, over all triples.",
        "",
        markdown_table(mutual_table(summary, "entailment")),
        "",
    ]
    lines += [
        "## Table 4. Inconsistency rates of the four transitive rules",
        "",
        "Violations / cases (triples whose antecedent holds), with a Wilson 95% interval.",
        "",
    ]
    for rule in RULES:
        lines.append(f"- {rule.key} `{rule.name}`: {rule.description}")
    lines += ["", markdown_table(rules_table(summary)), ""]
    lines += quality_lines(summary)
    lines += [
        "## Beyond the paper",
        "",
        "- substitution: (H,H') mutual entailment means H and H' are interchangeable, so "
        "M(P,H') should equal M(P,H) (this also covers C and E -> C);",
        "- contradiction_symmetry: M(H,H') = C but M(H',H) != C.",
        "",
        markdown_table(rules_table(summary, extras=True)),
        "",
    ]
    if "families" in summary:
        from .family_eval import report_lines

        lines += report_lines(summary)
    from .alarm_report import report_lines

    lines += report_lines(summary)  # no-knowledge alarms (two or more models)
    lines += comparison_lines(comparison)  # paired comparison (two or more models)
    if gen_rows:
        lines += [
            "## Table 9. Acceptance rate of generated sentences",
            "",
            "From the generator's stats.json beside the triples.",
            "",
            markdown_table(table9(gen_rows)),
            "",
        ]
    if examples is not None:  # samples.ExampleCollector: the violating triples themselves
        lines += render_examples(summary, examples)
    return "\n".join(lines)


# --------------------------------------------------------------------------- paired comparison
def paired_comparison(
    out_dir: Path, rows: RowsWriter, files: list[Path], summary: dict[str, Any]
) -> dict[str, Any] | None:
    """With two or more models: the paired comparison (evaluator/compare.py) of the rows written,
    also on the triples the judge is confident in (at the summary's level), into comparison.json
    and tables/comparison.csv (added to `files`); else None."""
    if rows.flags is None or rows.flags.n_models < 2:
        return None
    level = summary["triple_quality"]["level"]
    result = comparison_result(rows.flags, CompareSettings(confident_level=level))
    files += write_comparison(out_dir, result)
    return result


# --------------------------------------------------------------------------- files
class RowsWriter:
    """samples.jsonl and predictions.jsonl, written row by row as the run goes (samples.sample_row;
    each predictions line is a subset of its samples row) into hidden partial files beside the
    final ones; `finish()` moves them into place. Keeps the violating triples report.md shows and,
    with `compare` (two or more models), every row's rule outcomes for the paired comparison."""

    PARTIAL = ".partial-"  # name prefix of the files being written

    def __init__(self, out_dir: Path, compare: bool = False):
        self._made_dir = not out_dir.exists()
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir = out_dir
        self.examples = ExampleCollector()
        self.flags = FlagTable() if compare else None
        self.final = (out_dir / SAMPLES_NAME, out_dir / "predictions.jsonl")
        self.partial = tuple(p.with_name(self.PARTIAL + p.name) for p in self.final)
        self._samples = open(self.partial[0], "w", encoding="utf-8", newline="\n")  # noqa: SIM115 - closed in finish/discard
        self._predictions = open(self.partial[1], "w", encoding="utf-8", newline="\n")  # noqa: SIM115

    def write(self, rows: Iterable[dict[str, Any]]) -> None:
        samples, predictions, examples = self._samples, self._predictions, self.examples
        flags = self.flags
        for row in rows:
            examples.add(row)
            if flags is not None:
                flags.add(row)
            predictions.write(json_text(self.final[1], prediction_of(row)) + "\n")
            samples.write(json_text(self.final[0], row) + "\n")

    def finish(self) -> list[Path]:
        """Close the files and give them their final names; returns [predictions, samples]."""
        self._close()
        for partial, final in zip(self.partial, self.final, strict=True):
            os.replace(partial, final)
        return [self.final[1], self.final[0]]

    def discard(self) -> None:
        """Close and remove the partial files (a run that failed leaves the folder as it was).
        Rows still buffered are dropped: flushing them could only fail again on a full disk, and
        hide the error that stopped the run."""
        for fh in (self._samples, self._predictions):
            with suppress(OSError):
                fh.close()
        for partial in self.partial:
            partial.unlink(missing_ok=True)
        if self._made_dir and not any(self.out_dir.iterdir()):
            self.out_dir.rmdir()

    def _close(self) -> None:
        self._samples.close()
        self._predictions.close()


def write_outputs(
    out_dir: Path,
    summary: dict[str, Any],
    rows: RowsWriter,
    gen_rows: list[dict[str, Any]],
    plots: bool = True,
    plot_worker=None,
) -> list[Path]:
    """Write every output file; returns their paths. `rows`: the run's samples and predictions,
    written and still under their partial names (given their final names here); `gen_rows`:
    Table 9 (may be empty); `plot_worker`: a started plot_worker.PlotWorker that renders its
    share of the figures meanwhile."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tables").mkdir(exist_ok=True)
    plot_dir = out_dir / "plots"
    pending = None
    if plots and plot_worker is not None:
        plot_dir.mkdir(exist_ok=True)
        pending = plot_worker.render(summary, plot_dir)
    files = rows.finish()
    examples = rows.examples
    comparison = paired_comparison(out_dir, rows, files, summary)
    p = out_dir / "summary.json"
    write_json(p, summary)
    files.append(p)

    p = out_dir / "report.md"
    p.write_text(render_report(summary, gen_rows, examples, comparison), encoding="utf-8")
    files.append(p)

    tables = {
        "table1_accuracy.csv": accuracy_table(summary, numeric=True),
        "table2_mutual_contradiction.csv": mutual_table(summary, "contradiction", numeric=True),
        "table3_mutual_entailment.csv": mutual_table(summary, "entailment", numeric=True),
        "table4_rules.csv": rules_long(summary),
        "extras_beyond_paper.csv": rules_long(summary, extras=True),
        "per_model.csv": per_model_table(summary),
        "per_dataset.csv": per_dataset_table(summary),
    }
    if gen_rows:
        tables["table9_acceptance.csv"] = table9(gen_rows, numeric=True)
    if "families" in summary:
        from .family_eval import families_table

        tables["families.csv"] = families_table(summary)
    for name, df in tables.items():
        p = out_dir / "tables" / name
        write_csv(df, p)
        files.append(p)

    if plots:
        from .plot_worker import write_figures

        files += write_figures(summary, plot_dir, plot_worker, pending)
    return files
