"""Assemble the pipeline's stages from a configuration, and describe them for provenance."""

from __future__ import annotations

import platform

from transnli.common.versions import dist_version
from transnli.generator.config import GeneratorConfig


def build_checks(config: GeneratorConfig) -> list:
    """Grammar first (cheap, and compares with the original), acceptability second. Each backend
    raises BackendUnavailable at once when it cannot run here."""
    from transnli.generator.checks.registry import build_check
    from transnli.generator.memory import tune_allocator

    tune_allocator()  # before the checkers' threads make their arenas
    return [
        build_check("grammar", config.grammar, languagetool_url=config.languagetool_url),
        build_check(
            "acceptability",
            config.acceptability,
            cola_model=config.cola_model,
            cola_threshold=config.cola_threshold,
            lm=config.lm,
            lm_threshold=config.lm_threshold,
            lm_dtype=config.lm_dtype,
            judge_model=config.judge_model,
            judge_threshold=config.judge_threshold,
            device=config.device,
            **({"llm_client": build_llm_client(config)} if config.acceptability == "llm" else {}),
        ),
    ]


def build_wordnet_pipeline(config: GeneratorConfig):
    from transnli.generator.antonyms import WordNetAntonyms
    from transnli.generator.filters import build_filters
    from transnli.generator.pipeline import WordNetPipeline
    from transnli.generator.realise import Realiser
    from transnli.generator.tagging import SpacyTagger
    from transnli.generator.vectors import AntonymRanker, load_vectors

    checks = build_checks(config)  # first: a missing backend should fail before slow loads
    ranker = AntonymRanker(load_vectors(config.vectors))
    return WordNetPipeline(
        config,
        tagger=SpacyTagger(config.spacy_model),
        antonyms=WordNetAntonyms(config.antonyms),
        ranker=ranker,
        realiser=Realiser(),
        checks=checks,
        filters=build_filters(
            config.filters,
            include_aux=config.include_aux,
            ranker=ranker,
            quality_threshold=config.quality_threshold,
            quality_model=config.quality_model,
        ),
    )


def build_llm_client(config: GeneratorConfig):
    """The LLM client a configuration names, behind the reply cache."""
    from transnli.common.llm.clients import make_client

    return make_client(
        config.llm_backend,
        config.llm_model,
        base_url=config.llm_base_url,
        api_key_env=config.llm_api_key_env,
        concurrency=config.llm_concurrency,
        timeout=config.llm_timeout,
        max_retries=config.llm_max_retries,
        temperature=config.llm_temperature,
        max_tokens=config.llm_max_tokens or None,
        device=config.device,
    )


def build_llm_pipeline(config: GeneratorConfig, client=None):
    """The LLM pipeline ("llm" or "wordnet+llm"). The WordNet stages are built too: "wordnet+llm"
    needs them, and "llm" uses them to compare each answer with WordNet's choice (when they cannot
    be loaded, "llm" runs without the comparison)."""
    from transnli.generator.antonyms import WordNetAntonyms
    from transnli.generator.llm.pipeline import LLMPipeline
    from transnli.generator.llm.prompting import REPLACE_ANTONYM, load_template
    from transnli.generator.realise import Realiser
    from transnli.generator.tagging import SpacyTagger
    from transnli.generator.vectors import AntonymRanker, load_vectors

    checks = build_checks(config)
    if client is None:
        client = build_llm_client(config)
    client.prepare()  # a local model that cannot be loaded fails here, before any output
    try:
        antonyms = WordNetAntonyms(config.antonyms)
        if antonyms.version() == "wordnet-missing":
            raise LookupError("WordNet is not available to nltk (see `transnli doctor`)")
        ranker, realiser = AntonymRanker(load_vectors(config.vectors)), Realiser()
    except (ImportError, LookupError, OSError, RuntimeError):
        if config.pipeline == "wordnet+llm":
            raise
        antonyms = ranker = realiser = None
    return LLMPipeline(
        config,
        tagger=SpacyTagger(config.spacy_model),
        antonyms=antonyms,
        ranker=ranker,
        realiser=realiser,
        checks=checks,
        client=client,
        template=load_template(REPLACE_ANTONYM),
    )


def build_negation_pipeline(config: GeneratorConfig):
    """The negation pipeline ("negation"), with the WordNet stages too for "wordnet+negation"."""
    from transnli.generator.negation import Negator
    from transnli.generator.negation_pipeline import NegationPipeline
    from transnli.generator.tagging import SpacyTagger

    if config.pipeline == "wordnet+negation":
        wordnet = build_wordnet_pipeline(config)
        return NegationPipeline(
            config,
            wordnet.tagger,
            Negator(),
            wordnet.checks,
            antonyms=wordnet.antonyms,
            ranker=wordnet.ranker,
            realiser=wordnet.realiser,
            filters=wordnet.filters,
        )
    checks = build_checks(config)
    return NegationPipeline(config, SpacyTagger(config.spacy_model), Negator(), checks)


def build_pipeline(config: GeneratorConfig):
    """The pipeline `config.pipeline` names."""
    if config.pipeline == "wordnet":
        return build_wordnet_pipeline(config)
    if config.pipeline in ("negation", "wordnet+negation"):
        return build_negation_pipeline(config)
    return build_llm_pipeline(config)


def provenance(config: GeneratorConfig, pipeline, input_desc: dict) -> dict:
    """config.json: everything needed to reproduce or cite a run. No timestamps, so that the same
    input and configuration give a byte-identical file."""
    return {
        "transnli_version": dist_version("transnli"),
        "input": input_desc,
        "config": config.to_dict(),
        "resources": {
            "wordnet": pipeline.antonyms.version() if pipeline.antonyms is not None else None,
            "spacy_model": pipeline.tagger.model_name,
            "spacy": dist_version("spacy"),
            "vectors": pipeline.ranker.vectors.version if pipeline.ranker is not None else None,
            "lemminflect": dist_version("lemminflect"),
            "checks": {c.name: _check_provenance(c) for c in pipeline.checks},
            "python": platform.python_version(),
            **(
                {"negation": pipeline.negator.version}
                if getattr(pipeline, "negator", None) is not None
                else {}
            ),
            **(
                {"quality_model": _quality_model_provenance(config.quality_model)}
                if "quality_model" in config.filters
                else {}
            ),
            **(
                {
                    "llm": {
                        **pipeline.client.describe(),
                        "prompt": pipeline.template.id,
                        "compared_with_wordnet": pipeline.compare,
                    }
                }
                if getattr(pipeline, "client", None) is not None
                else {}
            ),
        },
    }


def pipeline_provenance(pipeline, input_desc: dict) -> dict:
    """`provenance` of a built pipeline's own configuration (what a --workers run's parent asks
    a worker for: it builds no pipeline itself)."""
    return provenance(pipeline.config, pipeline, input_desc)


def _check_provenance(check) -> dict:
    """A check's backend and version, and the settings it resolved itself (a check backend may
    define effective_settings(): e.g. the judge's file and threshold when the config says None)."""
    entry = {"backend": check.backend, "version": check.version()}
    effective = getattr(check, "effective_settings", None)
    if effective is not None:
        entry["settings"] = effective()
    return entry


def _quality_model_provenance(path: str | None) -> dict:
    """Which scorer a run used: the file and its sha256 (the model's bytes decide the output)."""
    import hashlib
    from pathlib import Path

    from transnli.generator.filters.quality_model import default_model_path

    p = Path(path) if path else default_model_path()
    return {
        "file": str(path) if path else "shipped:resources/models/quality_model.json",
        "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
    }
