"""Candidate filters: judge a built candidate from WordNet and the spaCy parse, before the checks.

The checks (grammar, acceptability) read only the sentences; a filter also knows *which* word was
replaced, by which antonym, and how the word sits in the parse. Each filter is a small stage with
one job and a batch method, `judge_many(items) -> list[FilterVerdict]` (base.py); the pipeline runs
the filters a configuration names, in their registered order, over the survivors of the previous
one, and records every verdict on the record (`checks.<name>`), like a check's. The error
types of docs/judging.md say what each one is for.

One module per family, each filter registered by name beside its class (registry.py):
function_verbs (auxiliary, light_verb), phrases (fixed_phrase, licensing), verb
(argument_structure, clause_link, attributive_participle, verb_complements), coreference, senses
(rare_sense, sense_fit), adjective (relational_adj), collocation, and quality_model (the learned
scorer, over quality_features). A new filter is a new module here with a `@register_filter` class.

Filters never change a candidate; what they reject goes to rejected.jsonl with `rejected_by` the
filter's name. Except for the learned scorer, they are pure look-ups over WordNet and the parse
spaCy already made.
"""

from transnli.generator.filters.base import (
    PASS,
    CandidateFilter,
    FilterItem,
    FilterOptions,
    FilterVerdict,
    PerItemFilter,
)
from transnli.generator.filters.registry import (
    build_filters,
    filter_class,
    filter_names,
    filter_summary,
    register_filter,
)

__all__ = [
    "PASS",
    "CandidateFilter",
    "FilterItem",
    "FilterOptions",
    "FilterVerdict",
    "PerItemFilter",
    "build_filters",
    "filter_class",
    "filter_names",
    "filter_summary",
    "register_filter",
]
