"""Provisioning WordNet for nltk where `transnli setup` has not run: built from the system's
WordNet database into the first writable nltk_data folder, or refused in one line that names
what to install and the command to run."""

from __future__ import annotations

import nltk.data
import pytest
import transnli.resources.provision as provision
from click.testing import CliRunner

from transnli.cli import main


def test_wordnet_is_built_into_the_first_writable_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(nltk.data, "path", list(nltk.data.path))
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # nothing can be made under a file: the next place is used
    cache = tmp_path / "cache" / "nltk_data"
    monkeypatch.setattr(provision, "nltk_data_targets", lambda: [blocked / "nltk_data", cache])
    target = provision.build_wordnet()
    assert target == cache / "corpora" / "wordnet"
    assert (target / "lexnames").read_text() == provision.lexnames_text()
    assert (target / "data.noun").stat().st_size == (
        provision.SYSTEM_WORDNET / "data.noun"
    ).stat().st_size
    assert str(cache) == nltk.data.path[0]
    assert not list(cache.glob("corpora/*.partial"))  # built aside, renamed into place


def test_no_wordnet_anywhere_is_one_line_naming_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv(provision.WORDNET_DIR_ENV, str(tmp_path / "none"))
    with pytest.raises(provision.WordNetMissing) as caught:
        provision.build_wordnet_from_system(tmp_path / "nltk_data")
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path / "none") in message
    assert "apt-get install wordnet-base wordnet-sense-index" in message
    assert "WNSEARCHDIR" in message and "`transnli setup`" in message
    assert not (tmp_path / "nltk_data").exists()


def test_setup_says_each_step_and_fails_when_one_does(monkeypatch):
    """Every step runs and says what it did; a failing one is one line and exit 1."""
    import transnli.generator.provisioning as provisioning

    steps = (
        provisioning.SetupStep("first", "instant", lambda: "done"),
        provisioning.SetupStep("second", "instant", lambda: (_ for _ in ()).throw(OSError("no"))),
        provisioning.SetupStep("third", "instant", lambda: "done too"),
    )
    monkeypatch.setattr(provisioning, "STEPS", steps)
    result = CliRunner().invoke(main, ["setup"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "[setup] first ... (instant)" in lines and "[setup] second: no" in lines
    assert any(line.startswith("[setup] third: done too (") for line in lines)
    assert "1 step(s) failed" in result.output and "Traceback" not in result.output
