"""Generator commands: `transnli generate` (`transnli doctor` is in transnli.evaluator.doctor)."""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

import click
from transnli.generator.config import (
    ANTONYM_MODES,
    LLM_BACKENDS,
    PIPELINES,
    POS_CHOICES,
    ConfigError,
)
from transnli.generator.readers import FORMATS

GRAMMAR_CHOICES = ("harper", "languagetool", "none")
ACCEPTABILITY_CHOICES = ("cola", "link-grammar", "llm", "none")


def _pos_list(ctx, param, value: str | None):
    if value is None:
        return None
    items = [v.strip().upper() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in POS_CHOICES]
    if bad or not items:
        raise click.BadParameter(f"choose from {','.join(POS_CHOICES)}; got {value!r}")
    return items


def _column_map(ctx, param, value: str | None):
    """`premise=sent1,hypothesis=sent2` as {"premise": "sent1", "hypothesis": "sent2"}."""
    from transnli.generator.readers import ROLES

    if value is None:
        return None
    mapping = {}
    for item in value.split(","):
        role, sep, column = (part.strip() for part in item.partition("="))
        if not sep or role not in ROLES or not column:
            raise click.BadParameter(
                f"expected ROLE=COLUMN items with ROLE one of {','.join(ROLES)}; got {item!r}"
            )
        mapping[role] = column
    return mapping


def _label_order(ctx, param, value: str | None):
    from transnli.generator.readers import label_order_names

    if value is None:
        return None
    order = [v.strip() for v in value.split(",")]
    try:
        label_order_names(order)
    except ValueError as e:
        raise click.BadParameter(str(e)) from e
    return order


# Options shared by `generate` and `run`. LLM transport settings are separate because `run`
# takes them once, for both the LLM generator and LLM judges (see transnli.evaluator.commands).
_SETTINGS_OPTIONS = [
    click.option(
        "--preset",
        default="default",
        show_default=True,
        help="Preset name (default, paper) or a .toml file.",
    ),
    click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=None,
        help="Input format; auto-detected when omitted.",
    ),
    click.option("--limit", type=click.IntRange(min=0), default=None, help="Read at most N pairs."),
    click.option(
        "--dataset",
        default=None,
        help="Dataset name written into each record (default: the detected dataset, else the input file's stem).",
    ),
    click.option(
        "--columns",
        callback=_column_map,
        default=None,
        help="The input's column names, e.g. premise=sent1,hypothesis=sent2,label=gold,id=uid.",
    ),
    click.option(
        "--label-order",
        callback=_label_order,
        default=None,
        help="Labels of integer labels 0,1,2 in a file, e.g. entailment,neutral,contradiction (-1: no label).",
    ),
    click.option(
        "--seed",
        type=int,
        default=None,
        help="Seed for any stochastic component (recorded in config.json).",
    ),
    click.option(
        "--antonyms", type=click.Choice(ANTONYM_MODES), default=None, help="WordNet candidate set."
    ),
    click.option(
        "--pos",
        callback=_pos_list,
        default=None,
        help="Comma-separated POS to replace, e.g. VERB,ADJ.",
    ),
    click.option(
        "--include-aux/--no-include-aux",
        default=None,
        help="Treat auxiliaries as verbs (the paper does).",
    ),
    click.option(
        "--filters",
        default=None,
        help="Candidate filters: a comma-separated list (replaces the preset's), 'none', or +name/-name to change the preset's (auxiliary, light_verb, fixed_phrase, licensing, argument_structure, coreference, sense_fit, quality_model).",
    ),
    click.option(
        "--quality-threshold",
        type=click.FloatRange(0, 1),
        default=None,
        help="Minimum learned quality score for the quality_model filter (see docs/quality-model.md).",
    ),
    click.option(
        "--quality-model",
        default=None,
        help="Model file for the quality_model filter (default: the shipped one).",
    ),
    click.option(
        "--grammar", type=click.Choice(GRAMMAR_CHOICES), default=None, help="Grammar check backend."
    ),
    click.option(
        "--languagetool-url",
        default=None,
        help="URL of a LanguageTool server (e.g. http://localhost:8081).",
    ),
    click.option(
        "--acceptability",
        type=click.Choice(ACCEPTABILITY_CHOICES),
        default=None,
        help="Acceptability backend.",
    ),
    click.option("--cola-model", default=None, help="CoLA classifier: hub id or local folder."),
    click.option(
        "--cola-threshold",
        type=float,
        default=None,
        help="Minimum P(acceptable) for the cola backend.",
    ),
    click.option(
        "--vectors",
        default=None,
        help="Word vectors file (.kv gensim, .bin word2vec, or GloVe/word2vec text).",
    ),
    click.option(
        "--spacy-model",
        default=None,
        help="spaCy pipeline name (default: en_core_web_sm, else its PyPI copy).",
    ),
    click.option(
        "--max-chars",
        type=click.IntRange(min=1),
        default=None,
        help="Skip sentences longer than this.",
    ),
    click.option(
        "--device", default=None, help="Device for model-based checks: auto, cpu, cuda, mps."
    ),
    click.option("--batch-size", type=click.IntRange(min=1), default=None, help="Pairs per batch."),
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Worker processes for the wordnet and negation pipelines (the output is identical to one worker's).",
    ),
    click.option(
        "--skip-bad", is_flag=True, help="Skip and count malformed input lines instead of stopping."
    ),
    click.option(
        "--export",
        "exports",
        multiple=True,
        type=click.Choice(["parquet", "hf", "card"]),
        help="Also write Parquet files, a Hugging Face datasets folder and/or a Hub-ready folder with a dataset card (OUT/hub; see `transnli export`).",
    ),
    click.option(
        "--overwrite", is_flag=True, help="Replace what OUT holds instead of resuming or refusing."
    ),
    click.option(
        "--no-progress/--progress",
        "-q/ ",
        "--quiet/ ",
        "quiet",
        default=False,
        help="No progress bar (the same flags as evaluate's).",
    ),
    click.option(
        "--pipeline",
        type=click.Choice(PIPELINES),
        default=None,
        help="wordnet (default); llm: an LLM replaces each word; wordnet+llm: the LLM only where WordNet has no antonym; negation: the hypothesis with its main clause negated; wordnet+negation: both WordNet's and the negation's triples.",
    ),
    click.option(
        "--llm-backend",
        type=click.Choice(LLM_BACKENDS),
        default=None,
        help="openai: any OpenAI-compatible server; hf-seq2seq / hf-causal: a local transformers model.",
    ),
    click.option(
        "--llm-model", default=None, help="Model name (openai) or hub id / local folder (hf-*)."
    ),
]
LLM_TRANSPORT_OPTIONS = [
    click.option(
        "--llm-base-url",
        default=None,
        help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (default: $TRANSNLI_LLM_BASE_URL, $OPENAI_BASE_URL, else api.openai.com).",
    ),
    click.option(
        "--llm-api-key-env",
        default=None,
        help="Name of the environment variable holding the API key (default OPENAI_API_KEY; may be unset for local servers).",
    ),
    click.option(
        "--llm-concurrency",
        type=click.IntRange(min=1),
        default=None,
        help="Parallel requests (openai) or generation batch size (hf-*).",
    ),
    click.option(
        "--llm-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="Seconds per request before it is retried.",
    ),
    click.option(
        "--llm-max-retries",
        type=click.IntRange(min=0),
        default=None,
        help="Retries on 429, 5xx, timeouts (exponential backoff, Retry-After honoured).",
    ),
    click.option(
        "--llm-temperature",
        type=click.FloatRange(0, 2),
        default=None,
        help="Sampling temperature (default 0).",
    ),
    click.option(
        "--llm-max-tokens",
        type=click.IntRange(min=0),
        default=None,
        help="Completion token limit (0: none).",
    ),
]


def _param(option) -> click.Parameter:
    """The click.Parameter an option decorator declares."""
    return option(lambda: None).__click_params__[0]


# Keyword names of every generation setting (what `generate_triples` takes besides its arguments).
GENERATION_SETTING_NAMES = frozenset(
    _param(o).name for o in _SETTINGS_OPTIONS + LLM_TRANSPORT_OPTIONS
)


def generation_options(f=None, *, llm_transport: bool = True, exclude: tuple[str, ...] = ()):
    """Every generation setting as click options; keyword names match `generate_triples`.
    `exclude` drops options by flag (e.g. "--device") for commands that define their own."""

    def apply(func):
        chosen = _SETTINGS_OPTIONS + (LLM_TRANSPORT_OPTIONS if llm_transport else [])
        for option in reversed(chosen):
            if not set(_param(option).opts) & set(exclude):
                func = option(func)
        return func

    return apply(f) if f is not None else apply


def resumable_on_interrupt(command):
    """Ctrl-C ends the command with exit status 130 (as the shell reports SIGINT) and says how
    to go on, instead of click's bare "Aborted!" and status 1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("\ninterrupted; run the same command again to resume", err=True)
            raise click.exceptions.Exit(130) from None

    return wrapper


@click.command()
@click.argument("input_source", metavar="INPUT")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output folder.",
)
@generation_options
@resumable_on_interrupt
def generate(input_source, out_dir, **options):
    """Build (premise, hypothesis, modified hypothesis) triples from the NLI pairs in INPUT.

    INPUT is a local file (JSONL, CSV, TSV, or the native files of SNLI, MultiNLI, ANLI, WANLI)
    or a Hugging Face dataset as hf:NAME:SPLIT (e.g. hf:snli:validation). An unfinished run in
    OUT is resumed when the same command is run again.
    """
    generate_triples(input_source, out_dir, **options)


def generate_triples(
    input_source,
    out_dir,
    *,
    preset="default",
    fmt=None,
    dataset=None,
    columns=None,
    label_order=None,
    skip_bad=False,
    workers=1,
    exports=(),
    overwrite=False,
    reuse_finished=False,
    quiet=False,
    **settings,
) -> dict:
    """The work of `transnli generate`: the settings built, the run made by `generate_run`, its
    errors translated into click's; returns the run's stats."""
    from transnli.generator.config import resolve_config
    from transnli.generator.run import RunOptions, generate_run

    options = RunOptions(
        fmt=fmt,
        dataset=dataset,
        columns=columns,
        label_order=label_order,
        skip_bad=skip_bad,
        workers=workers,
        exports=exports,
        overwrite=overwrite,
        reuse_finished=reuse_finished,
        quiet=quiet,
    )
    with click_errors():
        config = resolve_config(preset, **settings)
        run = generate_run(input_source, config, out_dir, options, echo=_to_stderr)
    return run.stats


def _to_stderr(line: str) -> None:
    click.echo(line, err=True)


def _as_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@contextlib.contextmanager
def click_errors():
    """The generator's errors as click's: settings that do not fit are usage errors (exit status
    2), the rest one-line errors (status 1)."""
    from transnli.generator.errors import (
        GeneratorError,
        InputSourceError,
        MissingInputError,
        WorkersError,
    )

    try:
        yield
    except WorkersError as e:
        raise click.UsageError(e.worded(_as_flag)) from e
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    except MissingInputError as e:
        raise click.BadParameter(str(e), param_hint="INPUT") from e
    except InputSourceError as e:
        hint = " (use --skip-bad to skip malformed lines)" if e.line else ""
        raise click.ClickException(f"{e}{hint}") from e
    except GeneratorError as e:
        raise click.ClickException(str(e)) from e
