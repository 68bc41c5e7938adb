"""`transnli generate`: the options of a generation run, and the generator's errors as click's."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from transnli.cli.options import (
    echo_err,
    grouped,
    llm_transport_options,
    option,
    resumable_on_interrupt,
    setup_logging,
)
from transnli.common.lm.settings import DTYPES
from transnli.generator.checks.registry import check_backends
from transnli.generator.config import (
    ANTONYM_MODES,
    LLM_BACKENDS,
    PIPELINES,
    POS_CHOICES,
    resolve_config,
)
from transnli.generator.errors import (
    ConfigError,
    GeneratorError,
    InputSourceError,
    MissingInputError,
    WorkersError,
)
from transnli.generator.filters import filter_names
from transnli.generator.readers import FORMATS, ROLES, label_order_names
from transnli.generator.run import RunOptions, generate_run


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
    if value is None:
        return None
    order = [v.strip() for v in value.split(",")]
    try:
        label_order_names(order)
    except ValueError as e:
        raise click.BadParameter(str(e)) from e
    return order


# The generation options. Group "config": GeneratorConfig's settings (preset values and their
# overrides); group "run": RunOptions (how the input is read and the run folder kept). `run`
# takes them too, except --device, --batch-size and the progress flags, which come from the
# evaluation options there and serve both stages.
GENERATION_OPTIONS = [
    option(
        "config",
        "preset",
        "--preset",
        default=None,
        help="Preset name (default, fast, paper) or a .toml file; when omitted, $TRANSNLI_PRESET "
        "or default.",
    ),
    option(
        "run",
        "fmt",
        "--format",
        type=click.Choice(FORMATS),
        default=None,
        help="Input format; auto-detected when omitted.",
    ),
    option(
        "config",
        "limit",
        "--limit",
        type=click.IntRange(min=0),
        default=None,
        help="Read at most N pairs.",
    ),
    option(
        "run",
        "dataset",
        "--dataset",
        default=None,
        help="Dataset name written into each record (default: the detected dataset, else the input "
        "file's stem).",
    ),
    option(
        "run",
        "columns",
        "--columns",
        callback=_column_map,
        default=None,
        help="The input's column names, e.g. premise=sent1,hypothesis=sent2,label=gold,id=uid.",
    ),
    option(
        "run",
        "label_order",
        "--label-order",
        callback=_label_order,
        default=None,
        help="Labels of integer labels 0,1,2 in a file, e.g. entailment,neutral,contradiction (-1: "
        "no label).",
    ),
    option(
        "config",
        "seed",
        "--seed",
        type=int,
        default=None,
        help="Seed for any stochastic component (recorded in config.json).",
    ),
    option(
        "config",
        "antonyms",
        "--antonyms",
        type=click.Choice(ANTONYM_MODES),
        default=None,
        help="WordNet candidate set.",
    ),
    option(
        "config",
        "pos",
        "--pos",
        callback=_pos_list,
        default=None,
        help="Comma-separated POS to replace, e.g. VERB,ADJ.",
    ),
    option(
        "config",
        "include_aux",
        "--include-aux/--no-include-aux",
        default=None,
        help="Treat auxiliaries as verbs (the paper does).",
    ),
    option(
        "config",
        "filters",
        "--filters",
        default=None,
        help="Candidate filters: a comma-separated list (replaces the preset's), 'none', or "
        f"+name/-name to change the preset's ({', '.join(filter_names())}).",
    ),
    option(
        "config",
        "quality_threshold",
        "--quality-threshold",
        type=click.FloatRange(0, 1),
        default=None,
        help="Minimum learned quality score for the quality_model filter (see "
        "docs/quality-model.md).",
    ),
    option(
        "config",
        "quality_model",
        "--quality-model",
        default=None,
        help="Model file for the quality_model filter (default: the shipped one).",
    ),
    option(
        "config",
        "grammar",
        "--grammar",
        type=click.Choice(check_backends("grammar")),
        default=None,
        help="Grammar check backend.",
    ),
    option(
        "config",
        "languagetool_url",
        "--languagetool-url",
        default=None,
        help="URL of a LanguageTool server (e.g. http://localhost:8081).",
    ),
    option(
        "config",
        "acceptability",
        "--acceptability",
        type=click.Choice(check_backends("acceptability")),
        default=None,
        help="Acceptability backend.",
    ),
    option(
        "config",
        "cola_model",
        "--cola-model",
        default=None,
        help="CoLA classifier: hub id or local folder.",
    ),
    option(
        "config",
        "cola_threshold",
        "--cola-threshold",
        type=float,
        default=None,
        help="Minimum P(acceptable) for the cola backend.",
    ),
    option(
        "config",
        "lm",
        "--lm",
        default=None,
        metavar="SPEC",
        help="Language model of the lm acceptability backend: gemma3-270m (the default, installed "
        "by the setup), a local causal-LM folder, a .gguf file or a hub id.",
    ),
    option(
        "config",
        "lm_threshold",
        "--lm-threshold",
        type=float,
        default=None,
        help="Minimum d = log p(H') - log p(H) for the lm backend (default -9.5).",
    ),
    option(
        "config",
        "lm_dtype",
        "--lm-dtype",
        type=click.Choice(DTYPES),
        default=None,
        help="Weights dtype of the lm backend (float32 on CPU; bfloat16 suits a GPU).",
    ),
    option(
        "config",
        "judge_model",
        "--judge-model",
        default=None,
        metavar="FILE",
        help="Judge file of the judge acceptability backend (default: the shipped judge for "
        "gemma3-270m; benchmarks/train_judge.py trains one).",
    ),
    option(
        "config",
        "judge_threshold",
        "--judge-threshold",
        type=click.FloatRange(0, 1),
        default=None,
        help="Minimum probability that H' is good for the judge backend (default: the judge "
        "file's own).",
    ),
    option(
        "config",
        "lm_antonyms",
        "--lm-antonyms",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Realise up to N antonyms of each word and keep the one the language model scores "
        "best (needs --acceptability lm or judge; 1: the vector ranker's best only).",
    ),
    option(
        "config",
        "max_per_sentence",
        "--max-per-sentence",
        type=click.IntRange(min=0),
        default=None,
        metavar="K",
        help="Keep at most K triples of a sentence, best language-model score first (needs "
        "--acceptability lm or judge; 0: no limit).",
    ),
    option(
        "config",
        "vectors",
        "--vectors",
        default=None,
        help="Word vectors file (.kv gensim, .bin word2vec, or GloVe/word2vec text).",
    ),
    option(
        "config",
        "spacy_model",
        "--spacy-model",
        default=None,
        help="spaCy pipeline name (default: en_core_web_sm, else its PyPI copy).",
    ),
    option(
        "config",
        "max_chars",
        "--max-chars",
        type=click.IntRange(min=1),
        default=None,
        help="Skip sentences longer than this.",
    ),
]
DEVICE_OPTIONS = [
    option(
        "config",
        "device",
        "--device",
        default=None,
        help="Device for model-based checks: auto, cpu, cuda, mps.",
    ),
    option(
        "config",
        "batch_size",
        "--batch-size",
        type=click.IntRange(min=1),
        default=None,
        help="Pairs per batch.",
    ),
]
RUN_FOLDER_OPTIONS = [
    option(
        "run",
        "workers",
        "--workers",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Worker processes for the wordnet and negation pipelines (the output is identical to "
        "one worker's).",
    ),
    option(
        "run",
        "skip_bad",
        "--skip-bad",
        is_flag=True,
        help="Skip and count malformed input lines instead of stopping.",
    ),
    option(
        "run",
        "exports",
        "--export",
        multiple=True,
        type=click.Choice(["parquet", "hf", "card"]),
        help="Also write Parquet files, a Hugging Face datasets folder and/or a Hub-ready folder "
        "with a dataset card (OUT/hub; see `transnli export`).",
    ),
    option(
        "run",
        "overwrite",
        "--overwrite",
        is_flag=True,
        help="Replace what OUT holds instead of resuming or refusing.",
    ),
]
QUIET_OPTION = [
    option(
        "run",
        "quiet",
        "--no-progress/--progress",
        "-q/ ",
        "--quiet/ ",
        default=False,
        help="No progress bar (the same flags as evaluate's).",
    ),
]
LLM_CHOICE_OPTIONS = [
    option(
        "config",
        "pipeline",
        "--pipeline",
        type=click.Choice(PIPELINES),
        default=None,
        help="wordnet (default); llm: an LLM replaces each word; wordnet+llm: the LLM only where "
        "WordNet has no antonym; negation: the hypothesis with its main clause negated; "
        "wordnet+negation: both WordNet's and the negation's triples.",
    ),
    option(
        "config",
        "llm_backend",
        "--llm-backend",
        type=click.Choice(LLM_BACKENDS),
        default=None,
        help="openai: any OpenAI-compatible server; hf-seq2seq / hf-causal: a local transformers "
        "model.",
    ),
    option(
        "config",
        "llm_model",
        "--llm-model",
        default=None,
        help="Model name (openai) or hub id / local folder (hf-*).",
    ),
]


@click.command()
@click.argument("input_source", metavar="INPUT")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output folder.",
)
@grouped(
    GENERATION_OPTIONS
    + DEVICE_OPTIONS
    + RUN_FOLDER_OPTIONS
    + QUIET_OPTION
    + LLM_CHOICE_OPTIONS
    + llm_transport_options(for_judges=False)
)
@resumable_on_interrupt
def generate(input_source, out_dir, config, run, llm):
    """Build (premise, hypothesis, modified hypothesis) triples from the NLI pairs in INPUT.

    INPUT is a local file (JSONL, CSV, TSV, or the native files of SNLI, MultiNLI, ANLI, WANLI)
    or a Hugging Face dataset as hf:NAME:SPLIT (e.g. hf:snli:validation). An unfinished run in
    OUT is resumed when the same command is run again, and a finished one reused (--overwrite
    redoes it). OUT must be new, empty, or the folder of an earlier run.
    """
    generate_folder(input_source, out_dir, {**config, **llm}, RunOptions(**run))


def generate_folder(input_source, out_dir, settings: dict, options: RunOptions) -> dict:
    """A generation run into `out_dir` with the preset and overrides in `settings`; the
    generator's errors as click's. Returns the run's stats."""
    # the library's warnings (a damaged score cache) as one line each; -q silences notices
    setup_logging(notices=not options.quiet)
    with click_errors():
        config = resolve_config(**settings)
        return generate_run(input_source, config, out_dir, options, echo=echo_err).stats


def _as_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@contextlib.contextmanager
def click_errors():
    """The generator's errors as click's: settings that do not fit are usage errors (exit status
    2), the rest one-line errors (status 1)."""
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
