"""`transnli alarm`: the no-knowledge alarm for any judges, as a pipeline guard (the inputs are
read and the alarms computed in transnli.evaluator.alarm_cli). Exit status: 0 no alarm, 1 the
alarm fires, 2 bad input or usage."""

from __future__ import annotations

import json
from pathlib import Path

import click

from transnli.evaluator.alarm_cli import (
    AlarmInputProblem,
    describe,
    evaluate_group,
    load_groups,
    parse_threshold,
    to_json,
)
from transnli.evaluator.schedule import KINDS


class BadAlarmInput(click.ClickException):
    """Bad input: exit status 2, so that 1 always means "the alarm fires"."""

    exit_code = 2


@click.command("alarm")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--threshold",
    "threshold_text",
    metavar="T",
    help="Accuracy every judge should have on every label (0.8 or 80%). The command exits "
    "with status 1 when it is provably violated (T > theta*).",
)
@click.option(
    "--pairs",
    "kind",
    type=click.Choice(KINDS),
    default="p_h",
    show_default=True,
    help="With predictions.jsonl: which kind of pair the judges labelled.",
)
@click.option("--dataset", default=None, help="With predictions.jsonl: only this dataset.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--m1-only",
    is_flag=True,
    help="Use only each judge's label counts (the paper's M = 1), not the pairs' joint "
    "counts that predictions and labelled-pairs files also give.",
)
def alarm(inputs, threshold_text, kind, dataset, as_json, m1_only):
    """No-knowledge alarm: from how several judges' labels are distributed on the same items, prove
    (no gold labels) that at least one judge is below an accuracy threshold on some label.

    INPUTS: a counts file (CSV: judge,<label>,<label>,...; or JSON {"judge": {"label": n}}), or
    predictions.jsonl or samples.jsonl files of `transnli evaluate` (the items: distinct pairs, as
    in its report.md), or one labelled-pairs JSONL file per judge.
    Exit status: 0 no alarm, 1 the alarm fires, 2 bad input.
    """
    try:
        threshold = parse_threshold(threshold_text)
    except ValueError as e:
        raise BadAlarmInput(f"--threshold: {e}") from None
    try:
        groups = load_groups(list(inputs), kind, dataset)
    except AlarmInputProblem as e:
        raise BadAlarmInput(str(e)) from e
    results = [evaluate_group(g, threshold, m2=not m1_only) for g in groups]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "threshold": None if threshold is None else float(threshold),
                    "results": [to_json(r) for r in results],
                },
                indent=2,
                sort_keys=True,
            )
        )
    else:
        for r in results:
            click.echo("\n".join(describe(r, threshold)))
    if any(r["fires"] for r in results):
        raise SystemExit(1)
