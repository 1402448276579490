"""The installed package's import graph, read from the source by AST: no import cycles, no bare checkout names.

Every module of the packages pyproject installs (`mixture`, `mixture.pipelines` from pipelines/, `mixture.explorer`
from app/, ...) is a node; every import in it, at module level or inside a function, is an edge (imports under
`if TYPE_CHECKING:` never run and are left out). `from pkg import name` is an edge to `pkg.name` when that is a
module, else to `pkg` (its `__init__`)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKOUT_NAMES = ("pipelines", "app", "specs")  # top-level folders of the checkout, installed under `mixture.`


def installed_modules() -> dict[str, Path]:
    """{dotted module name: source file} of every module pyproject installs."""
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = tool.get("package-dir", {})
    modules: dict[str, Path] = {}
    for package in tool["packages"]:
        top = next((p for p in sorted(dirs, key=len, reverse=True) if package == p or package.startswith(p + ".")),
                   None)
        folder = REPO / (dirs[top] + package[len(top):].replace(".", "/") if top else package.replace(".", "/"))
        for path in sorted(folder.glob("*.py")):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import / ImportFrom node that runs, at any depth (function bodies included)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            todo += node.orelse
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        todo += ast.iter_child_nodes(node)


def imported_names(module: str, path: Path) -> list[tuple[str, int]]:
    """(absolute dotted name, line) of everything `module` imports; `from x import y` gives `x.y`."""
    is_package = path.stem == "__init__"
    out = []
    for node in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
            continue
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            anchor = parts if is_package else parts[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        out += [(f"{base}.{alias.name}", node.lineno) for alias in node.names if alias.name != "*"]
        if any(alias.name == "*" for alias in node.names):
            out.append((base, node.lineno))
    return out


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """{module: the modules of `modules` it imports}."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for name, _ in imported_names(module, path):
            while name and name not in modules:  # `from pkg import function` → pkg; `import a.b.c` → a.b.c
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components with more than one module (every import cycle lies in one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def a_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """One cycle through the component's smallest module, as a path that ends where it starts (BFS: shortest)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle in {component}")


@pytest.fixture(scope="module")
def modules() -> dict[str, Path]:
    return installed_modules()


def test_every_package_folder_is_installed(modules):
    """A folder with an `__init__.py` under an installed package is itself listed in pyproject's packages."""
    roots = {path.parent for module, path in modules.items() if path.stem == "__init__"}
    missing = sorted(str(p.parent.relative_to(REPO)) for root in roots for p in root.glob("*/__init__.py")
                     if p.parent not in roots)
    assert not missing, f"package folders missing from [tool.setuptools] packages in pyproject.toml: {missing}"
    assert {"mixture", "mixture.pipelines.partition.assign", "mixture.explorer.main", "mixture.accounting.views"} <= set(modules)


def test_no_import_cycles(modules):
    graph = import_graph(modules)
    cycles = strongly_connected(graph)
    assert not cycles, "import cycles (function-level imports count):\n" + "\n".join(
        " → ".join(a_cycle(graph, c)) + f"   (strongly connected: {', '.join(sorted(c))})" for c in cycles)


def test_no_checkout_only_names(modules):
    """`pipelines`, `app` and `specs` exist only in a checkout; installed code imports `mixture.pipelines`,
    `mixture.explorer` and `mixture.specs`."""
    bad = [f"{modules[m].relative_to(REPO)}:{line}: import {name}" for m in modules
           for name, line in imported_names(m, modules[m]) if name.split(".")[0] in CHECKOUT_NAMES]
    assert not bad, "imports of checkout-only top-level names:\n" + "\n".join(bad)


def test_the_graph_sees_function_level_and_relative_imports(tmp_path):
    """The reader itself: a cycle closed by a function-level relative import is found and printed as a path."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
                              "def g():\n    from .a import x\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    mods = {"pkg": pkg / "__init__.py", **{f"pkg.{n}": pkg / f"{n}.py" for n in "abcd"}}
    graph = import_graph(mods)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}, "pkg.d": set()}
    assert strongly_connected(graph) == [{"pkg.a", "pkg.b", "pkg.c"}]
    assert a_cycle(graph, {"pkg.a", "pkg.b", "pkg.c"}) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
