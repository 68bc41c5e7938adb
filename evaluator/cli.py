"""The `transnli` command: generator commands (generate, doctor) plus evaluator commands
(evaluate, pairs, run). The evaluator owns the entry point because it already depends on the
generator's record type; the generator knows nothing of the evaluator."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from transnli.evaluator.alarm_cli import alarm
from transnli.evaluator.augment import augment_command
from transnli.evaluator.commands import LLM_OPTIONS, evaluate, evaluation_options, pairs
from transnli.evaluator.doctor import doctor
from transnli.evaluator.gcpolicy import freeze_after_loading
from transnli.evaluator.plot_worker import use_plot_worker
from transnli.evaluator.show import show
from transnli.generator.cli import (
    GENERATION_SETTING_NAMES,
    generate,
    generate_triples,
    generation_options,
    resumable_on_interrupt,
)
from transnli.generator.publish_cli import export as export_command
from transnli.generator.publish_cli import publish as publish_command


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


@main.command("run")
@click.argument("input_source", metavar="INPUT")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output folder: triples go to OUT/generate, the evaluation to OUT/evaluate.",
)
# --device, --batch-size, the progress flags and the --llm-* transport flags come once, from the
# evaluation options, and serve both stages (model-based checks and an LLM generator use the same
# device and server).
@generation_options(llm_transport=False, exclude=("--device", "--batch-size", "--quiet"))
@evaluation_options
@resumable_on_interrupt
def run(input_source, out_dir, models, **options):
    """Generate triples from INPUT, then evaluate them with each --model.

    Takes every option of `generate` and of `evaluate`. Rerunning the same command continues an
    unfinished generation (or reuses a finished one with the same settings) and reuses every
    cached label.
    """
    from transnli.evaluator.commands import _setup_logging, llm_backend_extra
    from transnli.evaluator.errors import EvaluatorError
    from transnli.evaluator.evaluate import evaluate_triples
    from transnli.evaluator.settings import EvaluationSettings

    # Split the options: generation settings go to generate_triples; device and the LLM
    # transport settings go to both stages.
    shared = {"device", *LLM_OPTIONS}
    gen_opts = {k: options.pop(k) for k in list(options) if k in GENERATION_SETTING_NAMES - shared}
    gen_opts.update({k: options[k] for k in shared if k in options})
    gen_opts["quiet"] = not options["show_progress"]  # -q / --no-progress silence both stages
    gen_dir, eval_dir = Path(out_dir) / "generate", Path(out_dir) / "evaluate"
    stats = generate_triples(input_source, gen_dir, reuse_finished=True, **gen_opts)
    if not stats["triples_accepted"]:
        raise click.ClickException(
            f"no triples were generated from {input_source}; nothing to evaluate"
        )
    _setup_logging()
    try:
        extra = llm_backend_extra(options)
        # OUT/evaluate belongs to this command: each run replaces what an earlier one wrote there.
        result = evaluate_triples(
            [gen_dir / "triples.jsonl"],
            list(models),
            eval_dir,
            EvaluationSettings(backend_extra=extra, overwrite=True, **options),
            echo=lambda line: click.echo(line, err=True),
            command_line=["transnli", *sys.argv[1:]],
        )
    except EvaluatorError as e:
        raise click.ClickException(str(e)) from e
    click.echo(f"wrote {len(result.files)} files to {result.out_dir}", err=True)
