"""`transnli doctor`: every resource and backend, whether it is usable, and how to get it (the
checks are in transnli.generator.doctor and transnli.evaluator.doctor)."""

from __future__ import annotations

import json

import click

from transnli.evaluator.doctor import TorchProbe, evaluation_checks
from transnli.generator.doctor import judge_model_status, preset_status, run_checks


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--model",
    "-m",
    "models",
    multiple=True,
    metavar="SPEC",
    help="Also check this model spec (repeatable), without loading its weights; exit "
    "status 1 when one cannot be used.",
)
@click.option(
    "--judge-model",
    "judge_models",
    multiple=True,
    metavar="PATH",
    help="Also check this judge (repeatable): a judge file or a pair judge folder, as "
    "`generate --judge-model` takes it, without loading weights; exit status 1 when one "
    "cannot be used.",
)
@click.option("--deep", is_flag=True, help="Load every resource for real (slower: 10-20 s).")
@click.option(
    "--preset",
    default=None,
    metavar="NAME",
    help="Say whether this preset can run (default: the one `generate` uses, $TRANSNLI_PRESET "
    "or default); exit status 1 when it cannot.",
)
def doctor(as_json, models, judge_models, deep, preset):
    """List every resource and backend, whether it is usable, and how to get it when not."""
    probe = TorchProbe(deep)  # first: it runs while the other checks do
    rows = run_checks(deep=deep) + [judge_model_status(p) for p in judge_models]
    rows += evaluation_checks(models, probe)
    rows.append(preset_status(rows, preset))
    named = ("model: ", "preset: ", "judge: ")
    failed = [r for r in rows if r.name.startswith(named) and not r.usable]
    if as_json:
        click.echo(json.dumps([r.__dict__ for r in rows], indent=2))
    else:
        from tabulate import tabulate

        click.echo(
            tabulate(
                [
                    (
                        r.name,
                        "ok" if r.usable else "MISSING",
                        r.version or "",
                        r.detail if r.usable else "; ".join(filter(None, (r.detail, r.fix))),
                    )
                    for r in rows
                    if not r.name.startswith(("model: ", "preset: "))
                ],
                headers=["resource", "status", "version", "detail / how to get it"],
            )
        )
        for r in rows:
            if r.name.startswith("model: "):
                verdict = "usable" if r.usable else "NOT usable"
                click.echo(
                    f"\n{r.name[7:]}: {verdict}: {r.detail}"
                    + (f"\n  fix: {r.fix}" if not r.usable else "")
                )
        status = rows[-1]
        click.echo(f"\n{status.name[8:]} preset: {status.detail}")
    if failed:
        raise click.exceptions.Exit(1)
