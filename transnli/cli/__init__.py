"""The `transnli` command: one click group, one module per command family (generate, run,
evaluate and pairs, export and publish, augment, show, alarm, doctor, review, setup). Each command
builds the settings objects of its job and translates the library's errors into click's; no library
module imports click."""

from __future__ import annotations

import click

from transnli.cli.alarm import alarm
from transnli.cli.augment import augment_command
from transnli.cli.compare import compare
from transnli.cli.doctor import doctor
from transnli.cli.evaluate import evaluate, pairs
from transnli.cli.generate import generate
from transnli.cli.judge import judge
from transnli.cli.publish import export as export_command
from transnli.cli.publish import publish as publish_command
from transnli.cli.review import review
from transnli.cli.run import run
from transnli.cli.setup import setup
from transnli.cli.show import show
from transnli.evaluator.gcpolicy import freeze_after_loading
from transnli.evaluator.plot_worker import use_plot_worker


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="transnli")
def main() -> None:
    """transnli: adversarial NLI test sets by antonym replacement, and transitive
    self-consistency evaluation of NLI models without gold labels."""
    # A command-line run owns its process: what loading a model builds is frozen out of the
    # garbage collector's way (evaluator/gcpolicy.py).
    freeze_after_loading()
    use_plot_worker()  # and figures render on a second process (evaluator/plot_worker.py)


main.add_command(generate)
main.add_command(doctor)
main.add_command(evaluate)
main.add_command(pairs)
main.add_command(export_command)
main.add_command(publish_command)
main.add_command(augment_command)
main.add_command(show)
main.add_command(alarm)
main.add_command(compare)
main.add_command(run)
main.add_command(review)
main.add_command(setup)
main.add_command(judge)
