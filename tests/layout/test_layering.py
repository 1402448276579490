"""The one layering rule: every package has a rank (docs/architecture.md) and every import points to a package of
an equal or lower rank. Command modules (`mixture X` commands: each package's `cli.py`) sit on top of everything.
Heavy third-party frameworks stay in the packages built on them (datatrove in the build, Streamlit in the explorer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.layout.test_import_graph import REPO, import_graph, imported_names, installed_modules

# rank → packages (or single modules) of the installed distribution; a module belongs to the longest listed prefix
RANKS: dict[int, tuple[str, ...]] = {
    0: ("mixture", "mixture.store", "mixture.text", "mixture.tokenizer", "mixture.demo_corpus", "mixture.specs"),
    1: ("mixture.stages", "mixture.decontam", "mixture.fit"),
    2: ("mixture.spec", "mixture.composition"),
    3: ("mixture.accounting",),
    4: ("mixture.planner",),
    5: ("mixture.pipelines", "mixture.overview"),
    6: ("mixture.explorer", "mixture.datasets"),
}
COMMANDS = 7  # `mixture.cli`, `mixture.explore_cli`, `mixture.demo` and every `<package>.cli`
COMMAND_MODULES = ("mixture.cli", "mixture.explore_cli", "mixture.demo")
# third-party frameworks only the packages built on them import
FRAMEWORKS = {"datatrove": ("mixture.pipelines",), "streamlit": ("mixture.explorer",)}


def unit_of(module: str) -> str:
    """The listed package (or module) `module` belongs to: the longest prefix in RANKS."""
    names = [n for names in RANKS.values() for n in names]
    found = [n for n in names if module == n or module.startswith(n + ".")]
    assert found, f"{module} is in no package of RANKS (tests/layout/test_layering.py): give it a rank"
    return max(found, key=len)


def rank_of(module: str) -> int:
    if module in COMMAND_MODULES or module.rsplit(".", 1)[-1] == "cli":
        return COMMANDS
    unit = unit_of(module)
    return next(r for r, names in RANKS.items() if unit in names)


@pytest.fixture(scope="module")
def modules() -> dict[str, Path]:
    return installed_modules()


def test_every_module_has_a_rank(modules):
    for module in modules:
        rank_of(module)


def test_imports_point_to_an_equal_or_lower_rank(modules):
    graph = import_graph(modules)
    up = [f"{modules[m].relative_to(REPO)}: {m} (rank {rank_of(m)}) imports {t} (rank {rank_of(t)})"
          for m in sorted(graph) for t in sorted(graph[m]) if rank_of(t) > rank_of(m)]
    assert not up, "imports that point up a rank (move the code down, or the importer up):\n" + "\n".join(up)


def test_frameworks_stay_in_their_packages(modules):
    bad = []
    for m, path in modules.items():
        for name, line in imported_names(m, path):
            allowed = FRAMEWORKS.get(name.split(".")[0])
            if allowed is not None and not any(m == a or m.startswith(a + ".") for a in allowed):
                bad.append(f"{path.relative_to(REPO)}:{line}: {m} imports {name}")
    assert not bad, "framework imports outside their packages:\n" + "\n".join(bad)


def test_the_rule_catches_an_upward_import(tmp_path):
    """The rank of a module and of a command module; an import from rank 0 to rank 5 is reported."""
    assert rank_of("mixture.store.formats") == 0 and rank_of("mixture.pipelines.dedup.shuffle") == 5
    assert rank_of("mixture.spec.cli") == COMMANDS and rank_of("mixture.demo") == COMMANDS
    assert rank_of("mixture.stages.keys") < rank_of("mixture.spec.models") < rank_of("mixture.accounting.checks")
    (tmp_path / "formats.py").write_text("def f():\n    from mixture.pipelines.build import build\n")
    (tmp_path / "build.py").write_text("")
    graph = import_graph({"mixture.store.formats": tmp_path / "formats.py",
                          "mixture.pipelines.build": tmp_path / "build.py"})
    assert [t for t in graph["mixture.store.formats"] if rank_of(t) > rank_of("mixture.store.formats")] == \
        ["mixture.pipelines.build"]


def test_the_architecture_page_lists_the_ranks():
    """docs/architecture.md's rank table is this test's RANKS."""
    text = (REPO / "docs" / "architecture.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            rows[int(cells[0])] = tuple(sorted(n.strip("` ") for n in cells[1].split(",")))
    assert rows == {r: tuple(sorted(n.removeprefix("mixture.") if n != "mixture" else n for n in names))
                    for r, names in RANKS.items()}
