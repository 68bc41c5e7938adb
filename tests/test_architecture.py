"""The layering rules of docs/design.md, checked on the source: no import cycles (deferred imports
count), no `_private` name imported from another module, and the generator never imports the
evaluator."""

from __future__ import annotations

import textwrap

from architecture import ImportEdge, import_cycles, import_edges, module_files, private_imports


def test_the_module_list_covers_every_package():
    modules = module_files()
    assert "transnli.api" in modules
    assert "transnli.generator.record" in modules
    assert "transnli.evaluator.rules" in modules
    assert "transnli.resources" in modules


def test_there_is_no_import_cycle():
    cycles = import_cycles(import_edges())
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_private_name_is_imported_from_another_module():
    found = private_imports(import_edges())
    assert found == [], "private imports:\n" + "\n".join(found)


def test_the_generator_never_imports_the_evaluator():
    wrong = [
        f"{e.source}:{e.line} -> {e.target}"
        for e in import_edges()
        if e.source.startswith("transnli.generator") and e.target.startswith("transnli.evaluator")
    ]
    assert wrong == []


def test_the_cycle_finder_sees_a_cycle_through_a_deferred_import():
    edges = [
        ImportEdge("a", "b", (), 1),
        ImportEdge("b", "c", (), 1),
        ImportEdge("c", "a", (), 1),
        ImportEdge("c", "d", (), 1),
    ]
    assert import_cycles(edges) == [["a", "b", "c"]]
    assert import_cycles(edges[1:]) == []


def test_the_private_finder_names_the_line():
    edges = [ImportEdge("x", "y", ("public", "_hidden", "__version__"), 7)]
    assert private_imports(edges) == ["x:7 imports y._hidden"]


def test_type_checking_imports_are_not_edges(tmp_path, monkeypatch):
    import architecture

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from pkg.b import Thing
            def f():
                from .b import _helper
            """
        )
    )
    (pkg / "b.py").write_text("from pkg import a\n")
    monkeypatch.setattr(architecture, "PACKAGE_DIRS", {"pkg": pkg})
    edges = architecture.import_edges()
    assert {(e.source, e.target, e.names) for e in edges} == {
        ("pkg.a", "pkg.b", ("_helper",)),
        ("pkg.b", "pkg.a", ()),
    }
