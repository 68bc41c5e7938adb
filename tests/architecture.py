"""The import graph of the transnli package, read from the source with `ast`.

Every import of a transnli module counts, wherever it stands (module level or inside a function):
a cycle hidden behind a deferred import is still a cycle for the reader. Imports under
``if TYPE_CHECKING:`` do not run and are left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The repository's top-level folders and the import packages they install as (pyproject.toml).
PACKAGE_DIRS = {
    "transnli": ROOT / "transnli",
    "transnli.generator": ROOT / "generator",
    "transnli.evaluator": ROOT / "evaluator",
    "transnli.resources": ROOT / "resources",
    "transnli.common": ROOT / "common",
    "transnli.review": ROOT / "review",
}


@dataclass(frozen=True)
class ImportEdge:
    source: str  # importing module
    target: str  # imported module
    names: tuple[str, ...]  # names taken from the target (empty for `import x`)
    line: int


def module_files() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST):
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                stack.extend(child.orelse)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child
            stack.append(child)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_edges() -> list[ImportEdge]:
    modules = module_files()
    edges: list[ImportEdge] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in _runtime_imports(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        edges.append(ImportEdge(module, alias.name, (), node.lineno))
                continue
            target = _resolve(module, is_package, node)
            names = tuple(a.name for a in node.names)
            # `from pkg import submodule` imports the submodule itself.
            plain = []
            for name in names:
                if f"{target}.{name}" in modules:
                    edges.append(ImportEdge(module, f"{target}.{name}", (), node.lineno))
                else:
                    plain.append(name)
            if target in modules and (plain or not names):
                edges.append(ImportEdge(module, target, tuple(plain), node.lineno))
    return edges


def import_cycles(edges: list[ImportEdge]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.source != e.target:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def private_imports(edges: list[ImportEdge]) -> list[str]:
    """`from module import _name` across modules (dunder names are public protocol)."""
    return [
        f"{e.source}:{e.line} imports {e.target}.{name}"
        for e in edges
        for name in e.names
        if name.startswith("_") and not name.startswith("__") and e.source != e.target
    ]
