"""LICENSE and CITATION.cff: present, consistent with pyproject and the package version."""

from __future__ import annotations

import re
from pathlib import Path

import transnli

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_mit_as_pyproject_says():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Copyright (c) 2026 the transnli authors" in text
    assert 'license = { text = "MIT" }' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_citation_cites_the_tool_and_the_paper():
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["license"] == "MIT"
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert str(cff["version"]) == re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)
    if transnli.__version__ != "0+unknown":  # installed: the metadata's version
        assert str(cff["version"]) == transnli.__version__
    paper = cff["preferred-citation"]
    assert (
        paper["title"] == "Transitive self-consistency evaluation of NLI models without gold labels"
    )
    assert [a["family-names"] for a in paper["authors"]] == ["Wu", "Last"] and paper["year"] == 2025


def test_sdist_manifest_ships_license_and_citation():
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").split()
    assert "LICENSE" in manifest and "CITATION.cff" in manifest
