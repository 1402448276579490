"""`mixture sql`: the dropped and quarantine views, `.tables`, errors and help; and the accounting modules import
each other without a cycle."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from mixture.accounting import VIEWS, StoreReader, connect, table_list
from mixture.cli import app
from mixture.store.schema import DROP_COUNTER

runner = CliRunner()
ACCOUNTING = Path(__file__).resolve().parents[2] / "mixture" / "accounting"


def _csv(output: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(output))


def _drops_by_reason(store: str) -> dict[str, int]:
    out = runner.invoke(app, ["sql", store, "SELECT reason, count(*) AS n FROM dropped GROUP BY 1", "--format",
                              "csv"])
    assert out.exit_code == 0, out.output
    return {r.reason: int(r.n) for r in _csv(out.stdout).itertuples()}


def _expected_drops(counters: dict) -> dict[str, int]:
    return {reason: counters[counter] for reason, counter in DROP_COUNTER.items() if counters[counter]}


def test_dropped_and_quarantine_views_equal_counters(store: Path, template_store) -> None:
    counters = template_store[1].counters.model_dump()
    assert _drops_by_reason(str(store)) == _expected_drops(counters)
    out = runner.invoke(app, ["sql", str(store), "SELECT count(*) AS n, count(DISTINCT file) AS files, "
                              "min(reason) AS reason FROM quarantine", "--format", "csv"])
    assert out.exit_code == 0, out.output
    row = _csv(out.stdout).iloc[0]
    assert (row.n, row.files) == (counters["bad_input"], 1) and isinstance(row.reason, str)
    con = connect(StoreReader(str(store)))
    columns = [r[0] for r in con.execute("DESCRIBE dropped").fetchall()]
    assert columns == ["id", "source", "origin", "reason", "detail", "n_chars", "text_head", "file"]


def test_side_views_on_a_memory_store(memory_store: str, template_store) -> None:
    assert _drops_by_reason(memory_store) == _expected_drops(template_store[1].counters.model_dump())


def test_side_views_of_a_store_without_side_files(store: Path) -> None:
    for d in ("_dropped", "_quarantine"):
        for f in (store / d).rglob("*.parquet"):
            f.unlink()
    con = connect(StoreReader(str(store)))
    assert con.execute("SELECT count(*) FROM dropped").fetchall() == [(0,)]
    assert con.execute("SELECT count(*) FROM quarantine").fetchall() == [(0,)]


def test_tables_lists_every_view_with_rows(store: Path, template_store) -> None:
    art = template_store[1].model_dump(mode="json")
    loop = runner.invoke(app, ["sql", str(store), "--format", "csv"],
                         input=".tables\nCREATE TABLE mine AS SELECT 1 AS a;\n.tables;\n")
    assert loop.exit_code == 0, loop.output
    first, second = loop.stdout.split("name,rows,description\n")[1:]
    listed = _csv("name,rows,description\n" + first.split("Count")[0])
    expected_rows = {"documents": art["counters"]["records_out"], "shards": 45, "cells": len(art["cells"]),
                     "clusters": len(art["clusters"]), "sources": len(art["sources"]), "counters": 1,
                     "dropped": sum(_expected_drops(art["counters"]).values()),
                     "quarantine": art["counters"]["bad_input"]}
    shown = dict(zip(listed.name, listed.rows, strict=True))
    assert {n: shown[n] for n in expected_rows} == expected_rows
    assert list(listed.name) == [n for n in VIEWS if n in shown] and set(listed.name) >= set(expected_rows)
    assert all(isinstance(d, str) and d for d in listed.description)
    assert "_ledger_shards" not in shown  # helper tables stay hidden
    assert _csv("name,rows,description\n" + second).set_index("name").loc["mine", "rows"] == 1


def test_table_list_on_a_building_store(store: Path) -> None:
    (store / "store.json").unlink()
    reader = StoreReader(str(store))
    listed = table_list(reader, connect(reader))
    assert "counters" not in set(listed.name) and {"documents", "dropped", "quarantine"} <= set(listed.name)


def test_sql_error_has_no_markup(store: Path) -> None:
    one = runner.invoke(app, ["sql", str(store), "SELECT nope FROM cells"])
    assert one.exit_code == 1
    assert "BinderException" in one.stderr and "nope" in one.stderr
    assert "[red]" not in one.output and "[/" not in one.output


def test_help_names_every_view() -> None:
    out = runner.invoke(app, ["sql", "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert out.exit_code == 0
    text = " ".join(out.output.split())
    for view in VIEWS:
        assert view in text
    assert ".tables" in text


def _accounting_imports() -> dict[str, set[str]]:
    """{module: accounting modules it imports anywhere in its body (function-level imports count too)}."""
    graph: dict[str, set[str]] = {}
    for path in sorted(ACCOUNTING.glob("*.py")):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["mixture", "accounting"]:
                    deps.add(parts[2] if len(parts) > 2 else "__init__")
        graph[path.stem] = deps
    return graph


def test_accounting_modules_import_without_cycles() -> None:
    graph = _accounting_imports()
    assert graph["reader"] == set()  # the reader is the bottom: everything else builds on it

    def reach(start: str) -> set[str]:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(graph.get(m, ()))
        return seen

    cycles = sorted(m for m in graph if m in reach(m))
    assert cycles == []


@pytest.mark.slow
def test_side_views_on_built_store(built_store) -> None:
    counters = built_store.artifact.counters.model_dump()
    assert _drops_by_reason(str(built_store.store)) == _expected_drops(counters)
    out = runner.invoke(app, ["sql", str(built_store.store), "SELECT count(*) AS n FROM quarantine", "--format",
                              "csv"])
    assert out.exit_code == 0 and out.stdout.split() == ["n", str(counters["bad_input"])]
