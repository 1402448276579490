"""`mixture sql` reads the store and nothing else: no file written (COPY … TO, EXPORT), no database attached, no
file outside the store read, no extension installed, no setting changed, unless --unrestricted (also inside
EXPLAIN ANALYZE or PREPARE, and piped in); a store path holding a quote works."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mixture.cli import app

runner = CliRunner()


def sql(store: Path, query: str, *extra: str):
    return runner.invoke(app, ["sql", str(store), query, "--format", "csv", *extra])


def test_every_view_still_answers(store: Path) -> None:
    for view in ("documents", "shards", "cells", "dropped", "quarantine", "samples_uniform", "counters"):
        res = sql(store, f"SELECT count(*) AS n FROM {view}")
        assert res.exit_code == 0 and int(res.stdout.split()[-1]) > 0, (view, res.output)


@pytest.mark.parametrize(("query", "says"), [
    ("COPY (SELECT 1 AS a) TO '{out}/leak.csv'", "COPY statements are refused"),
    ("COPY (SELECT * FROM documents) TO '{store}/cluster=00/quality=0/mine.parquet'", "COPY statements are refused"),
    ("EXPORT DATABASE '{out}/db'", "EXPORT statements are refused"),
    ("ATTACH '{out}/other.duckdb' AS other", "ATTACH statements are refused"),
    ("INSTALL httpfs", "LOAD statements are refused"),
    ("SELECT * FROM read_csv('{secret}')", "disabled by configuration"),
    ("SELECT * FROM read_text('{store}/../secret.txt')", "disabled by configuration"),
    ("SET enable_external_access = true", "configuration has been locked"),
    # a writing statement inside another: EXPLAIN ANALYZE runs it, EXECUTE runs a prepared one
    ("EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{store}/leak.csv'", "COPY statements are refused"),
    ("EXPLAIN (ANALYZE, FORMAT json) COPY (SELECT 1 AS a) TO '{store}/leak.csv'", "COPY statements are refused"),
    ("PREPARE p AS COPY (SELECT 1 AS a) TO '{store}/leak.csv'; EXECUTE p", "COPY statements are refused"),
])
def test_writes_attaches_and_outside_reads_are_refused(store: Path, tmp_path: Path, query: str, says: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("a,b\n1,2\n")
    out = tmp_path / "out"
    out.mkdir()
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    res = sql(store, query.format(out=out, store=store, secret=secret))
    assert res.exit_code == 1 and says in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output
    assert list(out.iterdir()) == [] and sorted(p.relative_to(store) for p in store.rglob("*")) == before


@pytest.mark.parametrize("end", ["", ";", ";\n\n"])
def test_statements_from_stdin_are_refused_too(store: Path, end: str) -> None:
    """Statements piped in; the last one without ';' or an empty line after it ran without the refusal."""
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    res = runner.invoke(app, ["sql", str(store)], input=f"SELECT 1;\nCOPY (SELECT 1 AS a) TO '{store}/leak.csv'{end}")
    assert res.exit_code == 1 and "COPY statements are refused" in " ".join(res.output.split()), res.output
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


def test_plain_explain_and_prepare_still_run(store: Path) -> None:
    assert sql(store, "EXPLAIN SELECT count(*) FROM documents").exit_code == 0
    res = sql(store, "PREPARE q AS SELECT count(*) AS n FROM documents WHERE n_tokens > $1; EXECUTE q(0)")
    assert res.exit_code == 0 and int(res.stdout.split()[-1]) > 0, res.output


def test_unrestricted_lifts_the_limits(store: Path, tmp_path: Path) -> None:
    res = sql(store, f"COPY (SELECT count(*) AS n FROM documents) TO '{tmp_path}/n.csv'", "--unrestricted")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "n.csv").read_text().splitlines()[0] == "n"


def test_a_store_path_with_a_quote(store: Path, tmp_path: Path) -> None:
    quoted = tmp_path / "ana's store"
    shutil.copytree(store, quoted)
    res = sql(quoted, "SELECT count(*) AS n FROM samples_uniform")
    assert res.exit_code == 0 and int(res.stdout.split()[-1]) > 0, res.output
    assert sql(quoted, "SELECT count(*) AS n FROM documents").exit_code == 0
