"""`transnli compare EVAL_DIR`: the paired comparison of an evaluation's models, from the
samples.jsonl it already holds (no model is run; the statistics are in
transnli.evaluator.compare)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from transnli.evaluator.compare import (
    COMPARISON_NAME,
    TABLE_NAME,
    CompareError,
    CompareSettings,
    compare_folder,
    comparison_csv,
    evaluation_level,
    report_lines,
)


@click.command("compare")
@click.argument("eval_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--resamples",
    type=click.IntRange(min=100),
    default=CompareSettings.resamples,
    show_default=True,
    help="Bootstrap resamples of the triples.",
)
@click.option(
    "--seed",
    type=int,
    default=CompareSettings.seed,
    show_default=True,
    help="The bootstrap's seed (the same seed gives the same intervals).",
)
@click.option(
    "--confident-level",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=None,
    metavar="P",
    help="Check each conclusion on the triples whose judge p_good is at least P (default: the "
    "level the evaluation used, else 0.8).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json", "csv"]),
    default="markdown",
    show_default=True,
    help="What to print: the report's table, comparison.json or tables/comparison.csv.",
)
@click.option(
    "--no-write",
    is_flag=True,
    help=f"Print only; do not (re)write {COMPARISON_NAME} and tables/{TABLE_NAME} in EVAL_DIR.",
)
def compare(eval_dir, resamples, seed, confident_level, fmt, no_write):
    """Compare the models of EVAL_DIR (a `transnli evaluate --out` folder with two or more
    models) rule by rule, pair by pair: difference in violation rate with a paired bootstrap 95%
    interval, McNemar's exact test on the triples where both models' antecedents hold, Holm's
    correction over every rule x pair. Writes comparison.json and tables/comparison.csv.

    Example: transnli compare runs/eval
    """
    if confident_level is None:
        confident_level = evaluation_level(eval_dir)
    settings = CompareSettings(resamples=resamples, seed=seed, confident_level=confident_level)
    try:
        result = compare_folder(eval_dir, settings, write=not no_write)
    except CompareError as e:
        raise click.ClickException(str(e)) from e
    if fmt == "json":
        click.echo(json.dumps(result, ensure_ascii=False, indent=2))
    elif fmt == "csv":
        click.echo(comparison_csv(result), nl=False)
    else:
        click.echo("\n".join(report_lines(result)).rstrip("\n"))
        if "confident" not in result:
            click.echo(
                "\nThe triples carry no p_good (the judge's probability that H' is good), so "
                "the conclusions cannot be checked on the triples the judge is confident in."
            )
    if not no_write:
        click.echo(
            f"wrote {eval_dir / COMPARISON_NAME} and {eval_dir / 'tables' / TABLE_NAME}", err=True
        )
