"""`transnli export` and `transnli publish`: exports of a finished generation run, and the upload
of a generation run or of an evaluation folder to the Hugging Face Hub (the work is in
transnli.generator.publish and transnli.evaluator.publish_eval; the transport they share is
transnli.common.hub)."""

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
    "card, ready for `transnli publish`; for an evaluation folder, its evaluation card and the "
    "files `publish` would upload). Repeat it or give a comma list.",
)
@click.option(
    "--reviewed",
    type=click.Choice(["good-only", "column"]),
    default=None,
    help="Apply RUN/review.jsonl (`transnli review`): keep only the triples judged good, or add "
    "a human_judgement column; the card states the measured precision (parquet and card only). "
    "Written beside the run's own exports: OUT/triples.reviewed.parquet, OUT/hub-reviewed.",
)
@_TITLE
@_LICENSE
def export(out_dir, kinds, reviewed, title, license_):
    """Export the finished generation run in OUT_DIR, without generating again.

    Reads triples.jsonl, rejected.jsonl, stats.json and config.json; every table gets the same
    declared schema, so the exports of different runs load together. Given an evaluation folder
    (the --out of `transnli evaluate`), `--to card` writes OUT_DIR/hub: its evaluation card and
    the files `transnli publish` would upload, to read offline.
    """
    from transnli.generator.publish import ExportError, export_finished, parse_kinds

    if _is_evaluation(out_dir):
        _export_evaluation(out_dir, parse_kinds(kinds), reviewed, title, license_)
        return
    from transnli.review.errors import ReviewError
    from transnli.review.export import export_reviewed

    try:
        if reviewed:
            written = export_reviewed(
                out_dir,
                parse_kinds(kinds),
                reviewed,
                title=title,
                license=license_,
                echo=lambda line: click.echo(line, err=True),
            )
        else:
            written = export_finished(out_dir, parse_kinds(kinds), title=title, license=license_)
    except (ExportError, ReviewError) as e:
        raise click.ClickException(str(e)) from e
    for path in written:
        click.echo(f"exported {path}", err=True)
    if not written:
        click.echo(f"{out_dir} has no triples; nothing was exported", err=True)


def _is_evaluation(folder: Path) -> bool:
    try:
        return folder_kind(folder) == "evaluation"
    except click.ClickException:  # neither: export's own checks say why
        return False


def _export_evaluation(folder: Path, kinds, reviewed, title, license_) -> None:
    from transnli.evaluator.publish_eval import PublishEvaluationError, export_evaluation_card

    if reviewed is not None or set(kinds) != {"card"}:
        raise click.UsageError(
            f"{folder} is an evaluation folder: it exports its card only (--to card); parquet, "
            "hf and --reviewed apply to a generation run"
        )
    try:
        hub = export_evaluation_card(
            folder, title=title, license=license_, review_of=reviewed_precision
        )
    except PublishEvaluationError as e:
        raise click.ClickException(str(e)) from e
    files = sum(1 for p in hub.rglob("*") if p.is_file())
    click.echo(f"exported {hub} (the evaluation card README.md and {files - 1} files)", err=True)


def folder_kind(folder: Path) -> str:
    """What `transnli publish` was given: "generate" (a generation run folder) or "evaluation"
    (the --out of `transnli evaluate`); a ClickException saying so when it is neither."""
    from transnli.evaluator.outdir import OUTPUT_NAMES
    from transnli.generator.run_folder import FINISHED, PROGRESS, REJECTED, TRIPLES

    if not folder.is_dir():
        raise click.ClickException(
            f"{folder} is not a folder; give the --out folder of `transnli generate` (publishes "
            "the triples) or of `transnli evaluate` (publishes the results)"
        )
    names = {p.name for p in folder.iterdir()}
    generation = names & {FINISHED, PROGRESS, TRIPLES, REJECTED}
    evaluation = names & (set(OUTPUT_NAMES) - {"tables"})
    if generation and evaluation:
        raise click.ClickException(
            f"{folder} holds both a generation run ({', '.join(sorted(generation))}) and "
            f"evaluation outputs ({', '.join(sorted(evaluation))}); keep them in separate folders"
        )
    if generation:
        return "generate"
    if evaluation:
        return "evaluation"
    nested = [folder / sub for sub in ("generate", "evaluate") if (folder / sub).is_dir()]
    hint = (
        " (it looks like the --out of `transnli run`: publish "
        + " or ".join(str(p) for p in nested)
        + ")"
        if nested
        else ""
    )
    raise click.ClickException(
        f"{folder} is neither a generation run (no {FINISHED}, {TRIPLES}) nor an evaluation "
        f"folder (no summary.json, report.md){hint}; give the --out folder of `transnli "
        "generate` or of `transnli evaluate`"
    )


def reviewed_precision(triples_file: Path):
    """The precision `transnli review` measured on the random sample of a finished generation
    run's triples.jsonl (for the evaluation card), or None: no run, no review, no sample."""
    from transnli.evaluator.eval_card import ReviewedPrecision
    from transnli.generator.run_folder import FINISHED, TRIPLES
    from transnli.review.agreement import summarise
    from transnli.review.errors import ReviewError
    from transnli.review.integrity import load_checked
    from transnli.review.log import LOG

    run = triples_file.parent
    if triples_file.name != TRIPLES or not (run / FINISHED).is_file() or not (run / LOG).is_file():
        return None
    # only judgements of this run's triples as they are now, from the declared sample
    try:
        review = summarise(load_checked(run).counted)
    except ReviewError as exc:
        click.echo(f"Warning: the card states no reviewed precision: {exc}", err=True)
        return None
    if not review.sample_judged:
        return None
    return ReviewedPrecision(
        str(triples_file),
        review.sample_good,
        review.sample_judged,
        review.interval,
        len(review.annotators),
    )


@click.command("publish")
@click.argument("out_dir", metavar="FOLDER", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--repo-id",
    required=True,
    metavar="USER/NAME",
    help="The Hub dataset repository to upload to (created when it does not exist).",
)
@click.option("--private", is_flag=True, help="Create the repository as private.")
@click.option(
    "--token-env",
    default=None,
    metavar="NAME",
    help="Environment variable holding a Hub token with write access; only that variable is "
    "read (an error when it is unset or empty). Default: huggingface_hub's own token, HF_TOKEN "
    "or else the one `hf auth login` saved.",
)
@click.option(
    "--triples-repo-id",
    default=None,
    metavar="USER/NAME",
    help="Evaluation folders only: the Hub dataset the evaluated triples were published as; "
    "the card links it.",
)
@click.option(
    "--title",
    default=None,
    help="Title of the card (default: a run's from its source datasets' names, an "
    "evaluation's from its models' names).",
)
@click.option(
    "--license",
    "license_",
    default=None,
    help="Licence id for the card (a Hub licence id such as cc-by-sa-4.0). A run's default: the "
    "source datasets' licence when they share a known one, else 'other'; an evaluation's card "
    "has none unless given.",
)
@click.option(
    "--reviewed",
    type=click.Choice(["good-only", "column"]),
    default=None,
    help="Generation runs only: upload the reviewed data and card, as `transnli export "
    "--reviewed` writes them.",
)
def publish(out_dir, repo_id, private, token_env, triples_repo_id, title, license_, reviewed):
    """Upload a generation run or an evaluation in FOLDER to the Hugging Face Hub as a dataset.

    A finished `transnli generate` run: writes FOLDER/hub first (as `transnli export --to
    card`), one Parquet folder per source dataset and the dataset card (README.md), then uploads
    that folder. An evaluation folder (the --out of `transnli evaluate`): uploads summary.json,
    report.md, run_info.json, samples.jsonl and plots/ with an evaluation card (README.md) that
    describes the models, the triples and the rules; nothing is written into FOLDER.
    """
    kind = folder_kind(out_dir)
    options = {"private": private, "token_env": token_env, "title": title, "license": license_}
    if kind == "generate":
        if triples_repo_id is not None:
            raise click.UsageError(
                "--triples-repo-id applies to an evaluation folder; "
                f"{out_dir} is a generation run (its triples are what is published)"
            )
        from transnli.generator.publish import ExportError
        from transnli.generator.publish import publish as publish_run
        from transnli.review.errors import ReviewError
        from transnli.review.export import reviewed_card_maker

        maker = (
            reviewed_card_maker(reviewed, lambda line: click.echo(line, err=True))
            if reviewed
            else None
        )
        try:
            url = publish_run(out_dir, repo_id, make_card=maker, **options)
        except (ExportError, ReviewError) as e:
            raise click.ClickException(str(e)) from e
    else:
        if reviewed is not None:
            raise click.UsageError(
                f"--reviewed applies to a generation run; {out_dir} is an evaluation folder"
            )
        from transnli.evaluator.publish_eval import PublishEvaluationError, publish_evaluation
        from transnli.review.errors import ReviewError

        try:
            url = publish_evaluation(
                out_dir,
                repo_id,
                triples_repo_id=triples_repo_id,
                review_of=reviewed_precision,
                **options,
            )
        except (PublishEvaluationError, ReviewError) as e:
            raise click.ClickException(str(e)) from e
    click.echo(f"published {out_dir} to {url}", err=True)
