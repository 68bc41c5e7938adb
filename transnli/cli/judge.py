"""`transnli judge fit RUN [RUN...] --out PATH`: refit the trained judge's calibration on the
reviewed judgements of some runs (transnli.review.refit); `generate --judge-model PATH` uses it."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def judge() -> None:
    """The trained judges: the default preset's, and the stacked pair judge."""


@judge.command("fit")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="A new judge file to write (for runs of a pair judge: a new folder).",
)
def fit(runs: tuple[Path, ...], out: Path) -> None:
    """Refit the judge's calibration on the triples people judged in RUNS (`transnli review`),
    validated by cross-validation on those judgements, and write it to --out with its provenance
    (docs/review.md, "Teaching the judge your genre"). RUNS made with `--acceptability
    pair-judge` give a copy of the pair judge's folder with its stack calibration refitted."""
    from transnli.review.errors import ReviewError
    from transnli.review.refit import fit_judge, summary_lines

    try:
        record = fit_judge(list(runs), out)
    except (ReviewError, OSError) as e:
        raise click.ClickException(str(e)) from e
    for line in summary_lines(record, out):
        click.echo(line)
