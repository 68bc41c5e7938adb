"""The filter registry (transnli.generator.filters.registry): names, running order, building by
name, and the docs' filter table kept to exactly the registered filters."""

import re
from pathlib import Path

import pytest
from transnli.generator.filters import (
    FilterOptions,
    PerItemFilter,
    build_filters,
    filter_class,
    filter_names,
    register_filter,
)

ROOT = Path(__file__).resolve().parent.parent

RUNNING_ORDER = (
    "auxiliary",
    "light_verb",
    "fixed_phrase",
    "licensing",
    "argument_structure",
    "coreference",
    "rare_sense",
    "relational_adj",
    "clause_link",
    "attributive_participle",
    "verb_complements",
    "sense_fit",
    "collocation",
    "quality_model",
)


def test_every_filter_is_registered_in_its_running_order():
    assert filter_names() == RUNNING_ORDER
    for name in filter_names():
        cls = filter_class(name)
        assert cls.name == name and callable(cls.from_options)


def test_filters_run_in_registered_order_whatever_order_they_are_asked_in():
    built = build_filters(["coreference", "licensing", "auxiliary"], include_aux=True)
    assert [f.name for f in built] == ["auxiliary", "licensing", "coreference"]
    assert built[0].include_aux is True


def test_unknown_filters_are_refused_with_every_known_name():
    with pytest.raises(
        ValueError, match=r"^unknown filter\(s\) sense, nope; choose from auxiliary,"
    ):
        build_filters(["sense", "auxiliary", "nope"])


def test_a_name_or_a_rank_cannot_be_taken_twice():
    assert "auxiliary" in filter_names()  # every filter module loaded
    with pytest.raises(ValueError, match="'auxiliary' is registered twice"):

        @register_filter("auxiliary", rank=999, summary="twice")
        class Again(PerItemFilter):
            pass

    with pytest.raises(ValueError, match="has the rank of 'auxiliary'"):

        @register_filter("not_registered_here", rank=10, summary="a clash")
        class SameRank(PerItemFilter):
            pass

    assert "not_registered_here" not in filter_names()


def test_from_options_hands_each_filter_its_settings():
    options = FilterOptions(include_aux=True)
    assert filter_class("auxiliary").from_options(options).include_aux is True
    assert filter_class("sense_fit").from_options(options).ranker is None


def test_the_docs_filter_table_lists_exactly_the_registered_filters():
    text = (ROOT / "docs" / "generation.md").read_text(encoding="utf-8")
    section = text.split("## Candidate filters", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    listed = [name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])]
    assert sorted(listed) == sorted(filter_names())
