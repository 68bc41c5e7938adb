"""`transnli show EVAL_DIR`: browse the triples a model got wrong (the reading and formatting are
in transnli.evaluator.show)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from transnli.evaluator.show import ShowError, read_summary, resolve_query, show_samples


@click.command("show")
@click.argument("eval_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--rule",
    default=None,
    metavar="RULE",
    help="rule1..rule4 (or a name such as E&C->C), substitution or contradiction_symmetry "
    "(default: any of the four rules).",
)
@click.option(
    "--model",
    "-m",
    default=None,
    metavar="NAME",
    help="A model as the evaluation names it, or its short name (default: every model).",
)
@click.option("--dataset", default=None, help="Only this dataset.")
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Show at most N triples (0: all).",
)
@click.option("--held", is_flag=True, help="Show the cases where the rule held instead.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "jsonl"]),
    default="text",
    show_default=True,
    help="Readable text, or the samples.jsonl rows themselves.",
)
def show(eval_dir, rule, model, dataset, limit, held, fmt):
    """Print the triples of EVAL_DIR (a `transnli evaluate --out` folder) that violate a rule,
    with their sentences and the model's four labels, from samples.jsonl.

    Example: transnli show EVAL --rule rule2 --model roberta-large-mnli --limit 5
    """
    try:
        query = resolve_query(read_summary(eval_dir), rule, model, dataset, held)
        shown, total = show_samples(eval_dir, query, limit, fmt)
        sys.stdout.flush()
    except ShowError as e:
        raise click.ClickException(str(e)) from e
    except BrokenPipeError:  # `transnli show ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    what = "cases where the rule held" if held else "violations"
    more = f" (--limit {limit}; --limit 0 shows all)" if shown < total else ""
    click.echo(f"{shown} of {total} {what} shown{more}", err=True)
