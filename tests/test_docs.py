"""The docs match the code: docs/README.md lists every page; every option of every command appears
in the page the index names for that command; every code name the contributor pages tell a
reader to edit or call exists, and every .py file any page names is there."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import click
import pytest

from transnli.cli import main
from transnli.cli.options import llm_transport_options

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
# Pages written for contributors: every `module.NAME` and `function(` they name must exist.
CONTRIBUTOR_PAGES = ("design.md", "development.md")
# The package's folders, where a page may name a file by its path inside the folder.
FOLDERS = (
    "generator", "evaluator", "common", "review", "resources", "transnli", "tests", "benchmarks",
    "scripts",
)  # fmt: skip
# `name.json`, `triples.jsonl`, ...: file names, not module attributes.
FILE_SUFFIXES = {"json", "jsonl", "md", "toml", "py", "parquet", "txt", "csv", "html", "gz", "sh"}


def index_lines() -> dict[str, str]:
    """page file name -> its line in the index."""
    lines = {}
    for line in INDEX.read_text(encoding="utf-8").split("\n- ")[1:]:
        match = re.match(r"\[([\w.-]+\.md)\]\(([\w.-]+\.md)\)", line)
        assert match and match[1] == match[2], f"docs/README.md: bad entry {line[:60]!r}"
        lines[match[1]] = " ".join(line.split())
    return lines


def commands() -> dict[str, click.Command]:
    return dict(main.commands)


def test_the_index_lists_every_page_once():
    listed = index_lines()
    pages = {p.name for p in DOCS.glob("*.md")} - {INDEX.name}
    assert sorted(pages - set(listed)) == [], "pages missing from docs/README.md"
    assert sorted(set(listed) - pages) == [], "docs/README.md links pages that do not exist"


def pages_of(command: str) -> list[str]:
    return [page for page, line in index_lines().items() if f"`transnli {command}`" in line]


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_appears_in_its_commands_page(name):
    pages = pages_of(name)
    assert pages, f"no line of docs/README.md names `transnli {name}`"
    text = "\n".join((DOCS / p).read_text(encoding="utf-8") for p in pages)
    shared = {o.name for f in (True, False) for o in llm_transport_options(f)}
    llm = (DOCS / "llm.md").read_text(encoding="utf-8")
    missing = []
    for param in commands()[name].params:
        if not isinstance(param, click.Option):
            continue
        where = text + llm if param.name in shared else text
        for flag in param.opts + param.secondary_opts:
            if flag.startswith("--") and not re.search(rf"(?<![\w-]){flag}(?![\w-])", where):
                missing.append(flag)
    assert missing == [], f"`transnli {name}` options missing from {', '.join(pages)}"


def package_modules() -> dict[str, list[str]]:
    """Module base name -> the full names of transnli's modules of that name (the packages are
    the ones pyproject.toml installs)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = setuptools["package-dir"]
    found: dict[str, list[str]] = {}
    for name in setuptools["packages"]:
        top = max((k for k in folders if name == k or name.startswith(k + ".")), key=len)
        folder = ROOT / folders[top] / name[len(top) :].lstrip(".").replace(".", "/")
        if not (folder / "__init__.py").is_file():
            continue  # a package of data only (transnli.docs ships the judging guideline)
        module = importlib.import_module(name)
        found.setdefault(name.rsplit(".", 1)[-1], []).append(name)
        for info in pkgutil.iter_modules(module.__path__):
            if not info.ispkg:
                found.setdefault(info.name, []).append(f"{name}.{info.name}")
    return found


def has_attribute(modules: list[str], attr: str) -> bool:
    """`module.attr` names a thing of that module, or one of its submodules."""
    for m in modules:
        if hasattr(importlib.import_module(m), attr):
            return True
        try:
            importlib.import_module(f"{m}.{attr}")
            return True
        except ModuleNotFoundError:
            pass
    return False


def defined_somewhere(name: str) -> bool:
    pattern = re.compile(rf"^\s*(def|class) {re.escape(name)}\b|^{re.escape(name)} = ", re.M)
    return any(
        pattern.search(p.read_text(encoding="utf-8"))
        for folder in FOLDERS[:6]
        for p in (ROOT / folder).rglob("*.py")
    )


@pytest.mark.parametrize("page", CONTRIBUTOR_PAGES)
def test_the_code_names_a_contributor_page_gives_exist(page):
    modules = package_modules()
    wrong = []
    for span in re.findall(r"`([^`\n]+)`", (DOCS / page).read_text(encoding="utf-8")):
        for mod, attr in re.findall(r"(?<![\w./])([a-z_]\w*)\.([A-Za-z_]\w*)", span):
            if (
                attr not in FILE_SUFFIXES
                and mod in modules
                and not has_attribute(modules[mod], attr)
            ):
                wrong.append(f"{mod}.{attr}")
        for func in re.findall(r"(?:^|@)([a-z_]\w*)\(", span):
            if not defined_somewhere(func):
                wrong.append(f"{func}(")
    assert wrong == [], f"docs/{page} names code that does not exist"


def file_exists(path: str) -> bool:
    """A path from the repository root or inside one of the package's folders; a bare file name
    (a page naming `options.py` of the folder it is about) anywhere in those folders."""
    if (ROOT / path).exists() or any((ROOT / folder / path).exists() for folder in FOLDERS):
        return True
    return "/" not in path and any(
        next((ROOT / folder).rglob(path), None) is not None for folder in FOLDERS
    )


def test_every_python_file_a_page_names_exists():
    wrong = []
    for doc in sorted(DOCS.glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        for path in re.findall(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.py)\b", text):
            if not file_exists(path):
                wrong.append(f"{doc.name}: {path}")
    assert wrong == []
