"""Evaluator commands: `transnli evaluate` and `transnli pairs`.

`evaluation_options` is the set of model/labelling flags, reusable by other commands (`run`):
its keyword arguments go straight to `evaluate_triples` (plus `models`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import click

from .backends.hf import DTYPES
from .errors import EvaluatorError

MODEL_HELP = (
    "Model to evaluate (repeatable): hf:ID_OR_FOLDER (a bare id or folder also means hf) or "
    "precomputed:LABELS.jsonl (labels made elsewhere, see `transnli pairs`), or "
    "llm:openai:MODEL (an LLM judge behind an OpenAI-compatible server, see --llm-base-url). "
    "NAME=SPEC names the model in every output; SPEC?KEY=VALUE&... sets label_map, dtype, "
    "max_length, batch_size, revision or trust_remote_code for this model only, e.g. "
    "'base=hf:DIR?label_map=0=contradiction,1=neutral,2=entailment&dtype=bfloat16'."
)
LLM_OPTIONS = (
    "llm_base_url",
    "llm_api_key_env",
    "llm_concurrency",
    "llm_timeout",
    "llm_max_retries",
    "llm_temperature",
    "llm_max_tokens",
)


def llm_backend_extra(options: dict) -> dict:
    """Move the --llm-* settings out of `options` into the `backend_extra` of evaluate_triples."""
    extra = {k: options.pop(k) for k in LLM_OPTIONS if k in options}
    return {k: v for k, v in extra.items() if v is not None}


class _ClickLogHandler(logging.Handler):
    """Warnings of the evaluator (logger "transnli") to stderr, through click."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"warning: {record.getMessage()}", err=True)


def _setup_logging() -> None:
    logger = logging.getLogger("transnli")
    if not any(isinstance(h, _ClickLogHandler) for h in logger.handlers):
        logger.addHandler(_ClickLogHandler(level=logging.WARNING))
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


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


# triples at a time in `transnli evaluate` and `run`: about 0.2-0.4 GB held (docs/speed.md)
DEFAULT_WINDOW = 100_000


def evaluation_options(f):
    """--model plus every labelling flag; the callback gets `models` and keyword arguments named
    like `evaluate_triples`' options."""
    options = [
        click.option(
            "--model", "-m", "models", multiple=True, required=True, metavar="SPEC", help=MODEL_HELP
        ),
        click.option(
            "--batch-size",
            type=BatchSize(),
            default=32,
            show_default=True,
            help="Pairs per forward pass, or auto (CUDA: the largest that fits, tried on "
            "the longest pairs; CPU: 32). See docs/speed.md.",
        ),
        click.option(
            "--batch-tokens",
            type=click.IntRange(min=1),
            default=None,
            metavar="N",
            help="Also cap each batch at N tokens once padded (length-bucketed batches: "
            "short pairs go many to a batch). Default: no cap.",
        ),
        click.option(
            "--compile",
            is_flag=True,
            help="torch.compile the model (hf); pays only on long GPU runs.",
        ),
        click.option(
            "--device",
            default="auto",
            show_default=True,
            help="auto (cuda, then mps, then cpu), cpu, cuda (every GPU), cuda:N, a list such as cuda:0,cuda:1, or mps.",
        ),
        click.option(
            "--dtype",
            type=click.Choice(DTYPES),
            default="auto",
            show_default=True,
            help="Model dtype; auto = float32 on CPU, float16 on CUDA/MPS.",
        ),
        click.option(
            "--max-length",
            type=click.IntRange(min=8),
            default=None,
            help="Truncate pairs to N tokens (default: the tokenizer's limit, at most 512).",
        ),
        click.option(
            "--label-map",
            default=None,
            metavar="SPEC",
            help="Class index to label for models whose config says LABEL_0..2, e.g. "
            "0=contradiction,1=neutral,2=entailment (named labels always win).",
        ),
        click.option(
            "--all-pairs",
            is_flag=True,
            help="Label (P,H') for every triple, not only where (H,H') is mutual E or C.",
        ),
        click.option(
            "--families",
            is_flag=True,
            help="Also label every ordered pair inside each sentence family (P, H, its H' and "
            "H¬) and report stran(K), scomm, sneg (see docs/families.md).",
        ),
        click.option(
            "--window",
            type=click.IntRange(min=0),
            default=DEFAULT_WINDOW,
            show_default=True,
            metavar="N",
            help="Label, count and write N triples at a time: memory grows with N, not with "
            "the run (0: hold the whole run). A pair repeated in a later window is "
            "labelled once. --families holds the run whole.",
        ),
        click.option(
            "--cache-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="Label cache folder (default: $TRANSNLI_CACHE or ~/.cache/transnli).",
        ),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the label cache."),
        click.option(
            "--threads",
            type=click.IntRange(min=1),
            default=None,
            help="CPU threads for torch (default: the CPUs this process may use).",
        ),
        click.option(
            "--plots/--no-plots",
            default=True,
            show_default=True,
            help="Write the figures (plots/: PNG at 300 dpi, PDF, SVG).",
        ),
        click.option(
            "--progress/--no-progress",
            " /-q",
            " /--quiet",
            "show_progress",
            default=True,
            show_default=True,
            help="Progress bar per model (-q, --quiet: none).",
        ),
        click.option(
            "--llm-base-url",
            default=None,
            help="llm: models: OpenAI-compatible base URL, e.g. http://localhost:8000/v1 "
            "(default: $TRANSNLI_LLM_BASE_URL, $OPENAI_BASE_URL, else api.openai.com).",
        ),
        click.option(
            "--llm-api-key-env",
            default=None,
            help="llm: models: name of the environment variable with the API key "
            "(default OPENAI_API_KEY).",
        ),
        click.option(
            "--llm-concurrency",
            type=click.IntRange(min=1),
            default=None,
            help="llm: models: parallel requests (default 8).",
        ),
        click.option(
            "--llm-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            help="llm: models: seconds per request (default 60).",
        ),
        click.option(
            "--llm-max-retries",
            type=click.IntRange(min=0),
            default=None,
            help="llm: models: retries on 429, 5xx and timeouts (default 5).",
        ),
        click.option(
            "--llm-temperature",
            type=click.FloatRange(0, 2),
            default=None,
            help="llm: models: temperature (default 0).",
        ),
        click.option(
            "--llm-max-tokens",
            type=click.IntRange(min=0),
            default=None,
            help="llm: models: completion token limit (default 128; 0: none).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


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
@evaluation_options
def evaluate(triples, out_dir, models, **options):
    """Label TRIPLES (JSONL or Parquet files, or saved Hugging Face dataset folders) with each
    --model and report transitive consistency.

    Writes predictions.jsonl, samples.jsonl (sentences, labels and rule outcomes; browse them with
    `transnli show`), summary.json, report.md (the paper's Tables 1-4, plus Table 9 when a
    generator stats.json sits beside the triples, and violating triples), tables/*.csv and plots/
    into --out (see docs/outputs.md).
    Labels are cached: a second run, or a run that crashed, reuses every label computed.
    """
    from .evaluate import evaluate_triples
    from .settings import EvaluationSettings

    _setup_logging()
    try:
        extra = llm_backend_extra(options)
        result = evaluate_triples(
            list(triples),
            list(models),
            out_dir,
            EvaluationSettings(backend_extra=extra, **options),
            echo=lambda line: click.echo(line, err=True),
            command_line=["transnli", *sys.argv[1:]],
        )
    except EvaluatorError as e:
        raise click.ClickException(str(e)) from e
    except OSError as e:
        raise click.ClickException(f"{e.filename or ''}: {e.strerror or e}".lstrip(": ")) from e
    click.echo(f"wrote {len(result.files)} files to {result.out_dir}", err=True)


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
    from .backends.precomputed import read_labelled_pairs
    from .schedule import H2H, HH2, pair_for, second_stage, unique_pairs
    from .schedule import first_stage as first_stage_pairs
    from .triples import load_triples

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
            from .families import build_families, family_pairs

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
