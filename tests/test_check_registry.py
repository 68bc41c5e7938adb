"""The check registry (transnli.generator.checks.registry): backends by kind, built by name."""

import pytest
from transnli.generator.checks.acceptability import NoAcceptability
from transnli.generator.checks.registry import build_check, check_backends, register_check


def test_backends_by_kind_sorted_with_none_last():
    assert check_backends("grammar") == ("harper", "languagetool", "none")
    assert check_backends("acceptability") == (
        "cola", "judge", "link-grammar", "llm", "lm", "pair-judge", "none"
    )  # fmt: skip
    assert check_backends("no-such-kind") == ()


def test_a_backend_knows_its_kind_and_name():
    check = build_check("acceptability", "none", cola_model="ignored")
    assert isinstance(check, NoAcceptability)
    assert (check.name, check.backend) == ("acceptability", "none")


def test_unknown_backend_and_a_name_taken_twice():
    with pytest.raises(ValueError, match=r"unknown grammar backend 'x'; one of harper, "):
        build_check("grammar", "x")
    with pytest.raises(ValueError, match="acceptability backend 'none' is registered twice"):

        @register_check("acceptability", "none")
        class Again:
            pass
