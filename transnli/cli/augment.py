"""`transnli augment`: training pairs whose label follows from the gold labels and the generated
sentences, plus REPAIR rows (the work is in transnli.evaluator.augment)."""

from __future__ import annotations

from pathlib import Path

import click

from transnli.cli.options import setup_logging
from transnli.evaluator.augment import augment, read_model_labels, write_rows
from transnli.evaluator.errors import EvaluatorError
from transnli.evaluator.repair import MAX_REPAIR_MEMBERS


@click.command("augment")
@click.argument(
    "triples",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Training file to write (JSONL; with --parquet also OUT with .parquet).",
)
@click.option(
    "--evaluation",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The --out folder of `transnli evaluate` (with --families for "
    "--repair): the model's labels of (H,H') and of whole families.",
)
@click.option(
    "--model",
    "model_spec",
    default=None,
    metavar="SPEC",
    help="Which model of --evaluation (needed when it holds several).",
)
@click.option(
    "--repair",
    "do_repair",
    is_flag=True,
    help="Add each family's model labels, minimally relabelled to be consistent "
    "(needs families.jsonl in --evaluation).",
)
@click.option(
    "--pin/--no-pin",
    default=True,
    show_default=True,
    help="Keep the gold label and the rows that follow from it fixed when repairing "
    "(so the file is consistent as a whole).",
)
@click.option(
    "--max-members",
    type=click.IntRange(min=3),
    default=MAX_REPAIR_MEMBERS,
    show_default=True,
    help="Largest family repaired (exact repair grows with n^3); larger ones are skipped.",
)
@click.option(
    "--gold/--no-gold",
    default=True,
    show_default=True,
    help="Include the gold (P,H) rows themselves.",
)
@click.option(
    "--parquet", is_flag=True, help="Also write the rows as Parquet beside --out (OUT.parquet)."
)
@click.option(
    "--hf",
    is_flag=True,
    help="Also write a Hugging Face datasets folder beside --out (OUT_hf).",
)
def augment_command(
    triples, out_file, evaluation, model_spec, do_repair, pin, max_members, gold, parquet, hf
):
    """Write training pairs whose label follows logically from the gold labels of TRIPLES'
    source pairs and their generated sentences (H', H¬), each row with the rule that made it
    and its source pair; with --repair also the minimal consistent relabelling of a model's
    labels of each family. See docs/families.md for the rules."""
    from transnli.evaluator.families import build_families
    from transnli.evaluator.triples import load_triples

    setup_logging()
    if do_repair and evaluation is None:
        raise click.UsageError("--repair needs --evaluation (an `evaluate --families` folder)")
    if model_spec is not None and evaluation is None:
        raise click.UsageError("--model needs --evaluation")
    try:
        items = load_triples(list(triples))
        families = build_families(items)
        labels = None
        if evaluation is not None:
            if do_repair and not (evaluation / "families.jsonl").is_file():
                raise EvaluatorError(
                    f"{evaluation} has no families.jsonl; run `transnli evaluate "
                    "--families` first to --repair"
                )
            model_spec, labels = read_model_labels(evaluation, model_spec, items)
        rows, stats = augment(
            families, labels, gold=gold, do_repair=do_repair, pin=pin, max_members=max_members
        )
        written = write_rows(rows, out_file, parquet=parquet, hf=hf)
    except EvaluatorError as e:
        raise click.ClickException(str(e)) from e
    except OSError as e:
        raise click.ClickException(
            f"cannot write {e.filename or out_file}: {e.strerror or e}"
        ) from e
    rules = ", ".join(f"{k} {v}" for k, v in (stats.by_rule or {}).items() if v)
    click.echo(
        f"wrote {stats.rows} rows from {len(families)} families to "
        f"{', '.join(str(p) for p in written)} ({rules or 'no rule applied'})",
        err=True,
    )
    if stats.conflicts or stats.overridden:
        click.echo(
            f"{stats.conflicts} pairs dropped for conflicting labels, {stats.overridden} rows "
            "overridden by rows of a higher tier (gold, then logic, then repair)",
            err=True,
        )
    if do_repair:
        click.echo(
            f"repair: {stats.repaired_families} families, {stats.changed_labels} labels changed"
            + (f", {stats.too_large} too large skipped" if stats.too_large else "")
            + (f", {stats.unrepairable} unrepairable skipped" if stats.unrepairable else ""),
            err=True,
        )
