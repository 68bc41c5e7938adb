"""`transnli run`: generate triples, then evaluate them, in one command."""

from __future__ import annotations

from pathlib import Path

import click

from transnli.cli.evaluate import evaluation_options, evaluation_settings, run_evaluation
from transnli.cli.generate import (
    GENERATION_OPTIONS,
    LLM_CHOICE_OPTIONS,
    RUN_FOLDER_OPTIONS,
    generate_folder,
)
from transnli.cli.options import echo_err, grouped, resumable_on_interrupt
from transnli.generator.run import RunOptions


@click.command("run")
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
@grouped(GENERATION_OPTIONS + RUN_FOLDER_OPTIONS + LLM_CHOICE_OPTIONS)
@evaluation_options
@resumable_on_interrupt
def run(input_source, out_dir, config, run, models, evaluation, llm):
    """Generate triples from INPUT, then evaluate them with each --model.

    Takes every option of `generate` and of `evaluate`. Rerunning the same command continues an
    unfinished generation (or reuses a finished one with the same settings) and reuses every
    cached label.
    """
    # OUT/evaluate belongs to this command: each run replaces what an earlier one wrote there.
    settings = evaluation_settings(evaluation, llm, overwrite=True)
    generation = {**config, "device": settings.device, **llm}
    # -q / --no-progress silence both stages
    options = RunOptions(**run, quiet=not settings.show_progress)
    gen_dir, eval_dir = Path(out_dir) / "generate", Path(out_dir) / "evaluate"
    stats = generate_folder(input_source, gen_dir, generation, options)
    if not stats["triples_accepted"]:
        raise click.ClickException(
            f"no triples were generated from {input_source}; nothing to evaluate"
        )
    result = run_evaluation([gen_dir / "triples.jsonl"], models, eval_dir, settings)
    echo_err(f"wrote {len(result.files)} files to {result.out_dir}")
