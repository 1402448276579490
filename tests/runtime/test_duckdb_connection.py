"""The DuckDB connection the dedup tasks open: one instance per process, each task's tables its own."""

import duckdb
import pytest

from mixture.pipelines.runtime.duckdb_connection import duckdb_connection


def test_tasks_in_one_process_share_an_instance_but_not_their_tables():
    with duckdb_connection("512MB") as con:
        con.execute("CREATE TABLE members AS SELECT range AS g FROM range(10)")
        assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0].startswith("488")
        # a second connection while one is open: an instance of its own
        with duckdb_connection() as inner, pytest.raises(duckdb.CatalogException):
            inner.execute("SELECT * FROM members")
    with duckdb_connection() as con:  # the next task: no table of the last one, no memory limit of the last one
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'memory'").fetchone()[0] == 0
        assert not con.execute("SELECT current_setting('memory_limit')").fetchone()[0].startswith("488")
        con.execute("CREATE TABLE members AS SELECT 1 AS g")


def test_a_failed_tasks_tables_are_gone_for_the_next_task():
    with pytest.raises(RuntimeError), duckdb_connection() as con:
        con.execute("CREATE TABLE pairs AS SELECT 1 AS a")
        con.execute("CREATE VIEW kept AS SELECT * FROM pairs")
        raise RuntimeError("the task failed")
    with duckdb_connection() as con:
        con.execute("CREATE TABLE pairs AS SELECT 2 AS a")  # would fail if the failed task's table were left
        con.execute("CREATE VIEW kept AS SELECT * FROM pairs")
        assert con.execute("SELECT a FROM kept").fetchall() == [(2,)]

