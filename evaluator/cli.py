"""The `transnli` command: generator commands (generate, doctor) plus evaluator commands
(evaluate, pairs, run). The evaluator owns the entry point because it already depends on the
generator's record type; the generator knows nothing of the evaluator."""

from __future__ import annotations

import click

from evaluator.commands import evaluate, pairs
from generator.cli import doctor, generate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="transnli")
def main() -> None:
    """transnli: adversarial NLI test sets by antonym replacement, and transitive
    self-consistency evaluation of NLI models without gold labels."""


main.add_command(generate)
main.add_command(doctor)
main.add_command(evaluate)
main.add_command(pairs)
