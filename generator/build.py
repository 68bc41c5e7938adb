"""Assemble the pipeline's stages from a configuration, and describe them for provenance."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

from generator.config import GeneratorConfig


def dist_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def build_checks(config: GeneratorConfig) -> list:
    """Grammar first (cheap, and compares with the original), acceptability second. Each factory
    raises BackendUnavailable at once when its backend cannot run here."""
    from generator.checks.acceptability import make_acceptability_check
    from generator.checks.grammar import make_grammar_check

    return [
        make_grammar_check(config.grammar, languagetool_url=config.languagetool_url),
        make_acceptability_check(
            config.acceptability,
            cola_model=config.cola_model,
            cola_threshold=config.cola_threshold,
            device=config.device,
        ),
    ]


def build_wordnet_pipeline(config: GeneratorConfig):
    from generator.antonyms import WordNetAntonyms
    from generator.pipeline import WordNetPipeline
    from generator.realise import Realiser
    from generator.tagging import SpacyTagger
    from generator.vectors import AntonymRanker, load_vectors

    checks = build_checks(config)  # first: a missing backend should fail before slow loads
    return WordNetPipeline(
        config,
        tagger=SpacyTagger(config.spacy_model),
        antonyms=WordNetAntonyms(config.antonyms),
        ranker=AntonymRanker(load_vectors(config.vectors)),
        realiser=Realiser(),
        checks=checks,
    )


def provenance(config: GeneratorConfig, pipeline, input_desc: dict) -> dict:
    """config.json: everything needed to reproduce or cite a run. No timestamps, so that the same
    input and configuration give a byte-identical file."""
    return {
        "transnli_version": dist_version("transnli"),
        "input": input_desc,
        "config": config.to_dict(),
        "resources": {
            "wordnet": pipeline.antonyms.version(),
            "spacy_model": pipeline.tagger.model_name,
            "spacy": dist_version("spacy"),
            "vectors": pipeline.ranker.vectors.version,
            "lemminflect": dist_version("lemminflect"),
            "checks": {c.name: {"backend": c.backend, "version": c.version()} for c in pipeline.checks},
            "python": platform.python_version(),
        },
    }
