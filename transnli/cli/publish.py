"""`transnli export` and `transnli publish`: exports of a finished generation run, and its upload
to the Hugging Face Hub (the work is in transnli.generator.publish)."""

from __future__ import annotations

from pathlib import Path

import click

_TITLE = click.option(
    "--title",
    default=None,
    help="Title of the dataset card (default: made from the source datasets' names).",
)
_LICENSE = click.option(
    "--license",
    "license_",
    default=None,
    help="Licence id for the card (a Hub licence id such as cc-by-sa-4.0; default: the "
    "source datasets' licence when they share a known one, else 'other').",
)


@click.command("export")
@click.argument("out_dir", metavar="OUT_DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--to",
    "kinds",
    multiple=True,
    required=True,
    metavar="KIND[,KIND]",
    help="What to write: parquet (OUT/triples.parquet, rejected.parquet), hf (OUT/hf_dataset, "
    "a saved datasets.DatasetDict), card (OUT/hub: the data per source dataset and a dataset "
    "card, ready for `transnli publish`). Repeat it or give a comma list.",
)
@click.option(
    "--reviewed",
    type=click.Choice(["good-only", "column"]),
    default=None,
    help="Apply RUN/review.jsonl (`transnli review`): keep only the triples judged good, or add "
    "a human_judgement column; the card states the measured precision (parquet and card only).",
)
@_TITLE
@_LICENSE
def export(out_dir, kinds, reviewed, title, license_):
    """Export the finished generation run in OUT_DIR, without generating again.

    Reads triples.jsonl, rejected.jsonl, stats.json and config.json; every table gets the same
    declared schema, so the exports of different runs load together.
    """
    from transnli.generator.publish import ExportError, export_finished, parse_kinds
    from transnli.review.errors import ReviewError
    from transnli.review.export import export_reviewed

    try:
        if reviewed:
            written = export_reviewed(
                out_dir, parse_kinds(kinds), reviewed, title=title, license=license_
            )
        else:
            written = export_finished(out_dir, parse_kinds(kinds), title=title, license=license_)
    except (ExportError, ReviewError) as e:
        raise click.ClickException(str(e)) from e
    for path in written:
        click.echo(f"exported {path}", err=True)
    if not written:
        click.echo(f"{out_dir} has no triples; nothing was exported", err=True)


@click.command("publish")
@click.argument("out_dir", metavar="OUT_DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--repo-id",
    required=True,
    metavar="USER/NAME",
    help="The Hub dataset repository to upload to (created when it does not exist).",
)
@click.option("--private", is_flag=True, help="Create the repository as private.")
@click.option(
    "--token-env",
    default="HF_TOKEN",
    show_default=True,
    help="Environment variable holding a Hub token with write access (else the token "
    "`hf auth login` saved).",
)
@click.option(
    "--reviewed",
    type=click.Choice(["good-only", "column"]),
    default=None,
    help="Upload the reviewed data and card, as `transnli export --reviewed` writes them.",
)
@_TITLE
@_LICENSE
def publish(out_dir, repo_id, private, token_env, reviewed, title, license_):
    """Upload the finished run in OUT_DIR to the Hugging Face Hub as a dataset.

    Writes OUT_DIR/hub first (as `transnli export --to card`): one Parquet folder per source
    dataset and the dataset card (README.md), then uploads that folder.
    """
    from transnli.generator.publish import ExportError
    from transnli.generator.publish import publish as publish_run
    from transnli.review.errors import ReviewError
    from transnli.review.export import reviewed_card_maker

    try:
        url = publish_run(
            out_dir,
            repo_id,
            private=private,
            token_env=token_env,
            title=title,
            license=license_,
            make_card=reviewed_card_maker(reviewed) if reviewed else None,
        )
    except (ExportError, ReviewError) as e:
        raise click.ClickException(str(e)) from e
    click.echo(f"published {out_dir} to {url}", err=True)
