"""`transnli review RUN`: judge a generation run's triples in the browser (transnli.review), or
with --agreement, print how far two annotators agree."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from transnli.cli.options import echo_err


def _shown(name: str | None) -> str:
    """A name from the log as the terminal must print it: control characters escaped."""
    if not name:
        return "(unnamed)"
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)


def _print_agreement(run_dir: Path) -> None:
    from transnli.review.agreement import summarise
    from transnli.review.export import report_problems
    from transnli.review.integrity import load_checked

    checked = load_checked(run_dir)
    report_problems(checked, echo_err)
    summary = summarise(checked.counted)
    people = ", ".join(_shown(a) for a in summary.annotators)
    click.echo(f"{summary.judged} triples judged by {len(summary.annotators)} ({people})")
    if checked.problems:
        click.echo(f"{len(checked.problems)} judgements not counted (see above)")
    if summary.precision is not None:
        lo, hi = summary.interval
        drawn = "; ".join(f"seed {seed}, size {size}" for seed, size in checked.samples())
        click.echo(
            f"precision on the random sample ({drawn}): {summary.precision:.3f} "
            f"({summary.sample_good}/{summary.sample_judged}; 95% Wilson {lo:.3f}-{hi:.3f})"
        )
    if not summary.pairs:
        click.echo("no triple was judged by two annotators: no agreement to report")
    for p in summary.pairs:

        def fmt(x):
            return "undefined" if x is None else f"{x:.3f}"

        click.echo(
            f"{_shown(p.first)} vs {_shown(p.second)}: {p.items} triples both "
            f"judged; good/bad: raw agreement {fmt(p.raw_good)}, Cohen's kappa "
            f"{fmt(p.kappa_good)}; error type: raw {fmt(p.raw_type)}, kappa {fmt(p.kappa_type)}"
        )


def _serve(run_dir: Path, settings, port: int) -> None:
    from transnli.review.index import LineIndex
    from transnli.review.log import LOG, JudgementLog
    from transnli.review.server import ReviewServer
    from transnli.review.session import ReviewSession

    triples = run_dir / "triples.jsonl"
    if not triples.is_file():
        raise click.ClickException(
            f"{triples} is missing; give the --out folder of a `transnli generate` run"
        )
    session = ReviewSession(LineIndex(triples), JudgementLog(run_dir / LOG), settings)
    try:
        server = ReviewServer(session, port)
    except OSError as e:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from e
    echo_err(
        f"reviewing {len(session.order)} of {len(session.index)} triples ({settings.order} "
        f"order); judgements go to {run_dir / LOG}"
    )
    click.echo(f"open {server.url}")
    echo_err("the address holds this session's token: the page and its API answer nothing else")
    sys.stdout.flush()  # a caller reading the URL from a pipe gets it now, not at exit
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        echo_err("stopped; run the same command again to go on where you left off")
    finally:
        server.server_close()


@click.command("review")
@click.argument("run_dir", metavar="RUN", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--order",
    type=click.Choice(["random", "all", "uncertain"]),
    default="random",
    show_default=True,
    help="random: a seeded sample of --sample triples (an unbiased precision estimate); all: "
    "every triple in file order; uncertain: least certain first (quality_model or "
    "acceptability score nearest its threshold).",
)
@click.option("--sample", type=int, default=100, show_default=True, help="Size of the sample.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample.")
@click.option("--annotator", default=None, help="Your name, kept on every judgement.")
@click.option(
    "--port",
    type=int,
    default=8765,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free one).",
)
@click.option(
    "--agreement",
    is_flag=True,
    help="Print the judged count, the sample's precision and the annotators' raw agreement and "
    "Cohen's kappa, instead of serving the page.",
)
def review(run_dir, order, sample, seed, annotator, port, agreement):
    """Judge the triples of the generation run in RUN in your browser, by keyboard.

    Serves a page on 127.0.0.1 (no external assets: works offline and through an SSH tunnel)
    and appends every judgement to RUN/review.jsonl; stop with Ctrl-C and run the same command
    again to resume. `transnli export RUN --reviewed good-only|column` then exports the result
    with the measured precision on its card. See docs/review.md.
    """
    from transnli.review.errors import ReviewError
    from transnli.review.session import SessionSettings

    try:
        if agreement:
            _print_agreement(run_dir)
            return
        settings = SessionSettings(order, sample, seed, annotator).validate()
        _serve(run_dir, settings, port)
    except ReviewError as e:
        raise click.ClickException(str(e)) from e
    except OSError as e:  # an unreadable run folder or log: one line, not a traceback
        raise click.ClickException(f"cannot read {e.filename or run_dir}: {e.strerror or e}") from e
