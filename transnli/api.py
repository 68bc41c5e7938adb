"""The Python API: `generate` triples and `evaluate` models, as functions returning objects.

    import transnli

    gen = transnli.generate([("A man is sleeping.", "The man is asleep.", "entailment")])
    gen.records[0].modified_hypothesis            # TripleRecord objects, in input order
    ev = transnli.evaluate(gen, models=["base=hf:/models/roberta-large-mnli"])
    ev.rules                                      # Table 4 as a DataFrame (rate, Wilson interval)
    ev.violations(rule="rule2")                   # the violating triples, with their sentences

Both functions write files only when given `out_dir` (then exactly what `transnli generate` /
`transnli evaluate` write there). They are thin: `generate` runs the generator's driver
(`generate_run`), `evaluate` runs `evaluate_triples`, as the command line does. Errors a user can
fix raise `TransnliError` with the CLI's one-line message.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas and the generator load on first use, not on `import transnli`
    import pandas as pd

    from transnli.generator.record import TripleRecord

__all__ = ["Evaluation", "GenerationResult", "TransnliError", "evaluate", "generate"]

LABEL_KINDS = ("p_h", "h_h2", "h2_h", "p_h2")


class TransnliError(Exception):
    """A problem the caller can fix (bad input, unknown preset, a model that cannot be loaded);
    the message is the CLI's one-line error."""


# --------------------------------------------------------------------------- generate
@dataclass
class GenerationResult:
    """What `generate` made: the accepted triples (`records`, input order) and the run's statistics
    (`stats`, as stats.json). `rejected` holds the rejected candidates when nothing was written
    (with `out_dir` they are in OUT/rejected.jsonl)."""

    records: list[TripleRecord]
    stats: dict[str, Any]
    out_dir: Path | None = None
    rejected: list[TripleRecord] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.records)

    def to_pandas(self) -> pd.DataFrame:
        """One row per triple, the columns of triples.jsonl."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.records])


def _pair_rows(pairs: Iterable[Any]) -> list[dict[str, Any]]:
    """Pairs given as dicts ({"premise", "hypothesis", "label"|"gold_label", "id"}) or tuples
    ((premise, hypothesis) or (premise, hypothesis, label)), as dicts; index named on error."""
    rows = []
    for i, item in enumerate(pairs, start=1):
        if isinstance(item, Mapping):
            row = dict(item)
        elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
            row = {"premise": item[0], "hypothesis": item[1]}
            if len(item) == 3:
                row["label"] = item[2]
        else:
            raise TransnliError(
                f"pair {i}: expected a dict with premise and hypothesis, or a "
                f"(premise, hypothesis[, label]) tuple; got {type(item).__name__}"
            )
        rows.append(row)
    return rows


def _in_memory_pairs(rows: list[dict[str, Any]], dataset: str | None, label_order):
    """NLIPair objects for pairs held in memory, checked as a file's lines would be."""
    from transnli.generator.readers import NLIPair, label_order_names, parse_gold_label

    try:
        int_names = label_order_names(label_order) if label_order else None
    except ValueError as e:
        raise TransnliError(str(e)) from e
    name = dataset or "pairs"
    out = []
    for i, row in enumerate(rows, start=1):
        for key in ("premise", "hypothesis"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise TransnliError(f"pair {i}: field '{key}': missing or not a non-empty string")
        label = row.get("gold_label", row.get("label"))
        try:
            gold = parse_gold_label(label, int_names=int_names)
        except ValueError as e:
            raise TransnliError(f"pair {i}: field 'label': {e}") from None
        out.append(
            NLIPair(
                str(row.get("id") or f"{name}:{i}"),
                row["premise"],
                row["hypothesis"],
                gold,
                str(row.get("dataset") or name),
                str(row.get("split") or ""),
                i,
            )
        )
    return out


def generate(
    pairs_or_path: str | Path | Iterable[Any],
    preset: str | None = None,
    out_dir: str | Path | None = None,
    *,
    progress: bool = False,
    **overrides: Any,
) -> GenerationResult:
    """Build (premise, hypothesis, modified hypothesis) triples.

    `pairs_or_path`: a file (JSONL, CSV, TSV, or SNLI/MultiNLI/ANLI/WANLI native files), a hub
    dataset as "hf:NAME:SPLIT", or pairs in memory (dicts or tuples, see `_pair_rows`).
    `preset`: "default", "fast", "paper" or a .toml file (None: $TRANSNLI_PRESET, else
    "default"). `overrides`: any `transnli generate` option by
    its Python name (seed, pos, antonyms, filters, grammar, acceptability, limit, dataset,
    columns, label_order, fmt, workers, ...). With `out_dir`, the run folder `transnli generate`
    writes (resumable; `exports=("parquet",)` etc. allowed); without, nothing is written.
    An input without a single pair (an empty list too) raises TransnliError.
    """
    from transnli.generator.config import resolve_config
    from transnli.generator.errors import GeneratorError
    from transnli.generator.record import read_triples
    from transnli.generator.run import RunOptions, generate_run

    overrides.setdefault("quiet", not progress)
    run_options = RunOptions.take(overrides)  # the rest are GeneratorConfig's settings
    run_options.workers = run_options.workers or 1
    source = pairs_or_path
    if not isinstance(source, (str, Path)):
        source = _in_memory_pairs(_pair_rows(source), run_options.dataset, run_options.label_order)
    echo = None if out_dir is None else (lambda line: print(line, file=sys.stderr))
    try:
        config = resolve_config(preset, **overrides)
        run = generate_run(source, config, out_dir, run_options, echo=echo)
    except GeneratorError as e:
        raise TransnliError(str(e)) from e
    if run.out_dir is None:
        return GenerationResult(records=run.accepted, stats=run.stats, rejected=run.rejected)
    return GenerationResult(
        records=list(read_triples(run.out_dir / "triples.jsonl")),
        stats=run.stats,
        out_dir=run.out_dir,
    )


# --------------------------------------------------------------------------- evaluate
@dataclass
class Evaluation:
    """The result of `evaluate`.

    Tables (pandas DataFrames, numbers not strings; rates are fractions):
      accuracy               Table 1: accuracy of M(P,H) against gold, datasets x models
      mutual_contradiction   Table 2: share of triples with M(H,H') = M(H',H) = C
      mutual_entailment      Table 3: the same for entailment
      rules                  Table 4, long: dataset, rule, name, model, cases, violations, rate,
                             ci95_low, ci95_high (Wilson 95%)
      extras                 the two rules beyond the paper, in the same layout
    `outcomes`: one row per triple and model: the sentences, the four labels, their
    probabilities, the rule that applied and whether it was violated.
    `summary` is summary.json; `run_info` the run's date, versions and devices.
    """

    summary: dict[str, Any]
    outcomes: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    run_info: dict[str, Any]
    out_dir: Path | None = None
    files: list[Path] = field(default_factory=list)

    @property
    def models(self) -> list[str]:
        return [m["model"] for m in self.summary["models"]]

    @property
    def accuracy(self) -> pd.DataFrame:
        return self.tables["accuracy"]

    @property
    def mutual_contradiction(self) -> pd.DataFrame:
        return self.tables["mutual_contradiction"]

    @property
    def mutual_entailment(self) -> pd.DataFrame:
        return self.tables["mutual_entailment"]

    @property
    def rules(self) -> pd.DataFrame:
        return self.tables["rules"]

    @property
    def extras(self) -> pd.DataFrame:
        return self.tables["extras"]

    def violations(
        self, rule: str | None = None, model: str | None = None, dataset: str | None = None
    ) -> pd.DataFrame:
        """The outcomes that violate a rule, optionally one rule / model / dataset."""
        df = self.outcomes
        keep = df["violated"].eq(True)  # None (no rule applied) is not a violation
        for column, value in (("rule", rule), ("model", model), ("dataset", dataset)):
            if value is not None:
                keep &= df[column] == value
        return df[keep].reset_index(drop=True)


def _as_triples(items: Iterable[Any]):
    """Evaluator triples from TripleRecord objects, dicts or a DataFrame's rows, checked as a
    triples file's lines are (errors name the item: "triples:3: field 'premise': ...")."""
    from transnli.evaluator.runinfo import MEMORY_SOURCE
    from transnli.evaluator.triples import Triple
    from transnli.generator.record import RecordError, TripleRecord, parse_triple_line

    out = []
    for i, item in enumerate(items, start=1):
        data = item.to_dict() if isinstance(item, TripleRecord) else item
        if not isinstance(data, Mapping):
            raise TransnliError(
                f"triples item {i}: expected a TripleRecord or a dict, got {type(data).__name__}"
            )
        try:
            rec = parse_triple_line(
                json.dumps(dict(data), ensure_ascii=False, default=str), "triples", i
            )
        except RecordError as e:
            raise TransnliError(str(e)) from None
        out.append(Triple.of(rec, MEMORY_SOURCE))
    if not out:
        raise TransnliError("no triples given")
    return out


def _outcomes(result) -> pd.DataFrame:
    import pandas as pd

    from transnli.evaluator.samples import prediction_row

    rows = []
    all_pairs = result.summary["provenance"]["config"]["all_pairs"]
    for name, labels in result.labels:
        for t in result.triples:
            row = prediction_row(t, name, labels, all_pairs=all_pairs)
            rows.append(
                {
                    "id": row["id"],
                    "dataset": row["dataset"],
                    "model": name,
                    "premise": t.premise,
                    "hypothesis": t.hypothesis,
                    "modified_hypothesis": t.modified,
                    "gold_label": row["gold_label"],
                    **{kind: row["labels"][kind] for kind in LABEL_KINDS},
                    "rule": row["rule"],
                    "violated": row["violated"],
                    "probs": row["probs"],
                }
            )
    columns = [
        "id",
        "dataset",
        "model",
        "premise",
        "hypothesis",
        "modified_hypothesis",
        "gold_label",
        *LABEL_KINDS,
        "rule",
        "violated",
        "probs",
    ]
    return pd.DataFrame(rows, columns=columns)


def _tables(summary: dict[str, Any]) -> dict[str, pd.DataFrame]:
    from transnli.evaluator.report import accuracy_table, mutual_table, rules_long

    return {
        "accuracy": accuracy_table(summary, numeric=True),
        "mutual_contradiction": mutual_table(summary, "contradiction", numeric=True),
        "mutual_entailment": mutual_table(summary, "entailment", numeric=True),
        "rules": rules_long(summary),
        "extras": rules_long(summary, extras=True),
    }


def evaluate(
    triples_or_path: Any,
    models: Sequence[str],
    out_dir: str | Path | None = None,
    *,
    progress: bool = False,
    **options: Any,
) -> Evaluation:
    """Label triples with each model and measure transitive self-consistency.

    `triples_or_path`: a triples JSONL file, a list of them, a `GenerationResult`, or triples in
    memory (TripleRecord objects, dicts with premise / hypothesis / modified_hypothesis, or a
    DataFrame with those columns). `models`: `--model` specs ("NAME=hf:PATH?dtype=float16",
    "precomputed:FILE", ...). `options`: `transnli evaluate`'s options by Python name
    (batch_size, device, dtype, max_length, label_map, all_pairs, limit, cache_dir, no_cache,
    threads, plots, overwrite, confident_level, ...). With `out_dir`, the files `transnli
    evaluate` writes.
    """
    from transnli.evaluator.errors import EvaluatorError
    from transnli.evaluator.evaluate import evaluate_triples
    from transnli.evaluator.settings import EvaluationSettings

    if isinstance(models, str):
        models = [models]
    paths: list[Path] = []
    memory = None
    source = (
        triples_or_path.records
        if isinstance(triples_or_path, GenerationResult)
        else triples_or_path
    )
    if isinstance(source, (str, Path)):
        paths = [Path(source)]
    elif hasattr(source, "to_dict") and hasattr(source, "columns"):  # a DataFrame
        # empty cells (NaN, None) read as absent, as a missing key in a JSONL line does
        memory = _as_triples(
            {k: v for k, v in row.items() if v is not None and v == v}
            for row in source.to_dict("records")
        )
    else:
        items = list(source)
        if items and all(isinstance(x, (str, Path)) for x in items):
            paths = [Path(x) for x in items]
        else:
            memory = _as_triples(items)
    options.setdefault("show_progress", progress)
    settings = EvaluationSettings(**options)  # an unknown option is a TypeError, as for a function
    try:
        result = evaluate_triples(paths, list(models), out_dir, settings, triples=memory)
    except EvaluatorError as e:
        raise TransnliError(str(e)) from e
    except OSError as e:
        raise TransnliError(f"{e.filename or ''}: {e.strerror or e}".lstrip(": ")) from e
    return Evaluation(
        summary=result.summary,
        outcomes=_outcomes(result),
        tables=_tables(result.summary),
        run_info=result.run_info,
        out_dir=result.out_dir,
        files=list(result.files),
    )
