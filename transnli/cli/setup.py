"""`transnli setup`: build, once, what the presets otherwise build on first use (WordNet for nltk,
the word vectors, the antonym index, the language model's conversion; transnli.generator
.provisioning). scripts/setup.sh runs it; a pip install needs it only to pay that time up front."""

from __future__ import annotations

import click

from transnli.generator.provisioning import run_setup


@click.command("setup")
def setup() -> None:
    """Prepare every offline resource now (each step does nothing when already done)."""
    failed = 0
    for result in run_setup(lambda step: click.echo(f"[setup] {step.name} ... ({step.cost})")):
        status = f"{result.detail} ({result.seconds:.1f} s)" if result.ok else result.detail
        click.echo(f"[setup] {result.name}: {status}", err=not result.ok)
        failed += not result.ok
    if failed:
        raise click.ClickException(f"{failed} step(s) failed; the lines above say why")
    click.echo("[setup] ready: `transnli doctor` lists what each preset can use")
