"""`transnli evaluate` and `transnli pairs`.

`evaluation_options` is the set of model and labelling flags, reused by `run`: the command
receives `models` and two groups, `evaluation` and `llm`, that `evaluation_settings` turns into
an EvaluationSettings.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from transnli.cli.options import (
    echo_err,
    given,
    grouped,
    llm_transport_options,
    option,
    resumable_on_interrupt,
    setup_logging,
)
from transnli.evaluator.backends.hf import DTYPES
from transnli.evaluator.errors import EvaluatorError
from transnli.evaluator.metrics import CONFIDENT_LEVEL
from transnli.evaluator.settings import EvaluationSettings

MODEL_HELP = (
    "Model to evaluate (repeatable): hf:ID_OR_FOLDER (a bare id or folder also means hf) or "
    "precomputed:LABELS.jsonl (labels made elsewhere, see `transnli pairs`), or "
    "llm:openai:MODEL (an LLM judge behind an OpenAI-compatible server, see --llm-base-url). "
    "NAME=SPEC names the model in every output; SPEC?KEY=VALUE&... sets label_map, dtype, "
    "max_length, batch_size, revision or trust_remote_code for this model only, e.g. "
    "'base=hf:DIR?label_map=0=contradiction,1=neutral,2=entailment&dtype=bfloat16'."
)


class BatchSize(click.ParamType):
    """--batch-size: a positive integer or "auto"."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, int) or value == "auto":
            return value
        try:
            n = int(str(value).strip())
        except ValueError:
            if str(value).strip().lower() == "auto":
                return "auto"
            self.fail(f"{value!r} is neither a whole number nor auto", param, ctx)
        if n < 1:
            self.fail(f"{n} is below 1", param, ctx)
        return n


# triples at a time in `transnli evaluate` and `run`: bounds what a run holds (docs/speed.md,
# 'Streaming')
DEFAULT_WINDOW = 100_000


EVALUATION_OPTIONS = [
    option(
        "evaluation",
        "batch_size",
        "--batch-size",
        type=BatchSize(),
        default=32,
        show_default=True,
        help="Pairs per forward pass, or auto (CUDA: the largest that fits, tried on "
        "the longest pairs; CPU: 32). See docs/speed.md.",
    ),
    option(
        "evaluation",
        "batch_tokens",
        "--batch-tokens",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Also cap each batch at N tokens once padded (length-bucketed batches: "
        "short pairs go many to a batch). Default: no cap.",
    ),
    option(
        "evaluation",
        "compile",
        "--compile",
        is_flag=True,
        help="torch.compile the model (hf); pays only on long GPU runs.",
    ),
    option(
        "evaluation",
        "device",
        "--device",
        default="auto",
        show_default=True,
        help="auto (cuda, then mps, then cpu), cpu, cuda (every GPU), cuda:N, a list such as "
        "cuda:0,cuda:1, or mps.",
    ),
    option(
        "evaluation",
        "dtype",
        "--dtype",
        type=click.Choice(DTYPES),
        default="auto",
        show_default=True,
        help="Model dtype; auto = float32 on CPU, float16 on CUDA/MPS.",
    ),
    option(
        "evaluation",
        "max_length",
        "--max-length",
        type=click.IntRange(min=8),
        default=None,
        help="Truncate pairs to N tokens (default: the tokenizer's limit, at most 512).",
    ),
    option(
        "evaluation",
        "label_map",
        "--label-map",
        default=None,
        metavar="SPEC",
        help="Class index to label for models whose config says LABEL_0..2, e.g. "
        "0=contradiction,1=neutral,2=entailment (named labels always win).",
    ),
    option(
        "evaluation",
        "all_pairs",
        "--all-pairs",
        is_flag=True,
        help="Label (P,H') for every triple, not only where (H,H') is mutual E or C.",
    ),
    option(
        "evaluation",
        "families",
        "--families",
        is_flag=True,
        help="Also label every ordered pair inside each sentence family (P, H, its H' and "
        "H¬) and report stran(K), scomm, sneg (see docs/families.md).",
    ),
    option(
        "evaluation",
        "confident_level",
        "--confident-level",
        type=click.FloatRange(min=0, max=1, min_open=True),
        default=CONFIDENT_LEVEL,
        show_default=True,
        metavar="P",
        help="Beside each violation rate, report it over the triples whose judge p_good is at "
        "least P (and p_good-weighted); triples without p_good: said once (docs/evaluation.md).",
    ),
    option(
        "evaluation",
        "window",
        "--window",
        type=click.IntRange(min=0),
        default=DEFAULT_WINDOW,
        show_default=True,
        metavar="N",
        help="Label, count and write N triples at a time: memory grows with N, not with "
        "the run (0: hold the whole run). N is rounded up to whole labelling blocks of "
        "20,000 triples, so no window changes a label or probability. A pair repeated in a "
        "later window is labelled once. --families holds the run whole.",
    ),
    option(
        "evaluation",
        "cache_dir",
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Label cache folder (default: $TRANSNLI_CACHE or ~/.cache/transnli).",
    ),
    option(
        "evaluation",
        "no_cache",
        "--no-cache",
        is_flag=True,
        help="Neither read nor write the label cache.",
    ),
    option(
        "evaluation",
        "threads",
        "--threads",
        type=click.IntRange(min=1),
        default=None,
        help="CPU threads for torch (default: the CPUs this process may use).",
    ),
    option(
        "evaluation",
        "plots",
        "--plots/--no-plots",
        default=True,
        show_default=True,
        help="Write the figures (plots/: PNG at 300 dpi, PDF, SVG).",
    ),
    option(
        "evaluation",
        "show_progress",
        "--progress/--no-progress",
        " /-q",
        " /--quiet",
        default=True,
        show_default=True,
        help="Progress bar per model (-q, --quiet: none).",
    ),
]
MODEL_OPTION = click.option(
    "--model", "-m", "models", multiple=True, required=True, metavar="SPEC", help=MODEL_HELP
)


def evaluation_options(command):
    """--model, then the labelling flags (group "evaluation": EvaluationSettings' fields) and the
    LLM transport (group "llm", for llm: judges)."""
    command = grouped(EVALUATION_OPTIONS + llm_transport_options(for_judges=True))(command)
    return MODEL_OPTION(command)


def evaluation_settings(evaluation: dict, llm: dict, **more) -> EvaluationSettings:
    """The settings of an evaluation: the labelling flags, the LLM transport given (for llm:
    judges) and `more` (limit, overwrite)."""
    return EvaluationSettings(**evaluation, backend_extra=given(llm), **more)


@click.command("evaluate")
@click.argument(
    "triples", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path)
)  # a folder: a saved HF dataset
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output folder: new, empty, or holding this same evaluation.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace another evaluation's outputs in --out (predictions.jsonl, samples.jsonl, "
    "summary.json, report.md, tables/, plots/, families.jsonl).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Evaluate only the first N triples (in file order; recorded in summary.json).",
)
@click.option(
    "--allow-unfinished",
    is_flag=True,
    help="Evaluate a triples file of a generation run that has not finished (no finished.json: "
    "generate still running, or stopped); refused otherwise.",
)
@evaluation_options
@resumable_on_interrupt
def evaluate(triples, out_dir, overwrite, limit, allow_unfinished, models, evaluation, llm):
    """Label TRIPLES (JSONL or Parquet files, or saved Hugging Face dataset folders) with each
    --model and report transitive consistency.

    Writes predictions.jsonl, samples.jsonl (sentences, labels and rule outcomes; browse them with
    `transnli show`), summary.json, report.md (the paper's Tables 1-4, plus Table 9 when a
    generator stats.json sits beside the triples, and violating triples), tables/*.csv and plots/
    into --out (see docs/outputs.md).
    Labels are cached: a second run, or a run that crashed, reuses every label computed.
    """
    settings = evaluation_settings(
        evaluation, llm, limit=limit, overwrite=overwrite, allow_unfinished=allow_unfinished
    )
    result = run_evaluation(list(triples), models, out_dir, settings)
    echo_err(f"wrote {len(result.files)} files to {result.out_dir}")


def run_evaluation(triple_paths, models, out_dir, settings: EvaluationSettings):
    """evaluate_triples as the command line runs it: warnings and the cache's report on stderr,
    the command line recorded, the evaluator's errors as click's."""
    from transnli.evaluator.evaluate import evaluate_triples

    setup_logging()
    try:
        return evaluate_triples(
            triple_paths,
            list(models),
            out_dir,
            settings,
            echo=echo_err,
            command_line=["transnli", *sys.argv[1:]],
        )
    except EvaluatorError as e:
        raise click.ClickException(str(e)) from e
    except OSError as e:
        raise click.ClickException(f"{e.filename or ''}: {e.strerror or e}".lstrip(": ")) from e


@click.command("pairs")
@click.argument(
    "triples", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path)
)  # a folder: a saved HF dataset
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Output JSONL file ('-' for stdout).",
)
@click.option(
    "--all-pairs",
    is_flag=True,
    help="All four kinds of pair; this is the default, kept for symmetry with evaluate.",
)
@click.option(
    "--first-stage",
    is_flag=True,
    help="Only (P,H), (H,H') and (H',H); label them, then export the (P,H') pairs the "
    "rules need with --labels.",
)
@click.option(
    "--labels",
    "labels_file",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Labelled first-stage pairs: write only the (P,H') pairs needed where (H,H') "
    "is mutual E or C and this file lacks them.",
)
@click.option(
    "--families",
    is_flag=True,
    help="Also every ordered pair inside each sentence family (what `evaluate --families` "
    "needs on top of the triples' pairs).",
)
def pairs(triples, out_file, all_pairs, first_stage, labels_file, families):
    """Write the unique sentence pairs a run over TRIPLES needs, as {"premise", "hypothesis"}
    JSONL, to be labelled by anything (an API, another framework) and read back with
    --model precomputed:FILE.

    Without labels nobody can know which (P,H') pairs the rules will need (only those where
    (H,H') is mutual entailment or contradiction), so by default all four kinds are written:
    (P,H), (H,H'), (H',H), (P,H'), each unique pair once. To save labelling, export with
    --first-stage, label, then export the rest with --labels.
    """
    from transnli.evaluator.backends.precomputed import read_labelled_pairs
    from transnli.evaluator.schedule import H2H, HH2, pair_for, second_stage, unique_pairs
    from transnli.evaluator.schedule import first_stage as first_stage_pairs
    from transnli.evaluator.triples import load_triples

    if first_stage and labels_file is not None:
        raise click.UsageError("--first-stage and --labels exclude each other")
    if all_pairs and (first_stage or labels_file is not None):
        raise click.UsageError("--all-pairs excludes --first-stage and --labels")
    if families and (first_stage or labels_file is not None):
        raise click.UsageError("--families excludes --first-stage and --labels")
    try:
        items = load_triples(list(triples))
        if labels_file is not None:
            labelled = read_labelled_pairs(labels_file)
            need = [p for t in items for p in (pair_for(t, HH2), pair_for(t, H2H))]
            missing = [p for p in dict.fromkeys(need) if p not in labelled]
            if missing:
                raise EvaluatorError(
                    f"{labels_file} lacks {len(missing)} (H,H')/(H',H) pairs, e.g. "
                    f"premise={missing[0][0]!r} hypothesis={missing[0][1]!r}; label the "
                    "--first-stage export first"
                )
            selected = [
                p
                for p in second_stage(items, lambda pair: labelled[pair].label)
                if p not in labelled
            ]
        elif first_stage:
            selected = first_stage_pairs(items)
        else:
            selected = unique_pairs(items)
        if families:
            from transnli.evaluator.families import build_families, family_pairs

            selected = list(dict.fromkeys(selected + family_pairs(build_families(items))))
    except EvaluatorError as e:
        raise click.ClickException(str(e)) from e

    lines = (
        json.dumps({"premise": p, "hypothesis": h}, ensure_ascii=False) + "\n" for p, h in selected
    )
    try:
        if out_file == "-":
            try:
                sys.stdout.writelines(lines)
                sys.stdout.flush()
            except BrokenPipeError:  # `transnli pairs ... --out - | head`
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                sys.exit(1)
        else:
            Path(out_file).parent.mkdir(parents=True, exist_ok=True)
            with open(out_file, "w", encoding="utf-8", newline="\n") as fh:
                fh.writelines(lines)
    except OSError as e:
        raise click.ClickException(f"cannot write {out_file}: {e.strerror or e}") from e
    click.echo(f"wrote {len(selected)} pairs from {len(items)} triples to {out_file}", err=True)
