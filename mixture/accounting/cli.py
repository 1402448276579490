"""CLI commands of the accounting layer: audit, report, diff, counts, sql."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import duckdb
import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mixture.accounting.checks import AuditResult, audit
from mixture.accounting.counts import COUNTS_SUFFIXES
from mixture.accounting.diffs import diff
from mixture.accounting.reader import StoreNotReady, StoreReader
from mixture.accounting.render import FORMATS, exact_frame, render
from mixture.accounting.reports import matrix, parse_by, report, source_counts
from mixture.accounting.views import VIEWS, connect, refused, table_list
from mixture.spec.amounts import humanize
from mixture.store.formats import FormatError

console = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def open_store(uri: str) -> StoreReader:
    """The store at `uri` for a command, or exit 2 with what is wrong: a location that cannot be opened, or no
    store folder there (every command that takes a store checks it this way)."""
    try:
        reader = StoreReader(uri)
        exists = reader.fs.exists(reader.root)
    except (ValueError, ImportError, OSError) as exc:
        err.print(f"[red]{uri}: cannot open ({escape(str(exc))}); pass a local path or an fsspec URI such as "
                  "gs://bucket/store", soft_wrap=True)
        raise typer.Exit(2) from exc
    if not exists:
        err.print(f"[red]{uri}: no such store (the folder does not exist); pass the folder that holds store.json, "
                  "or build it with `mixture build SPEC`", soft_wrap=True)
        raise typer.Exit(2)
    return reader


def _complete(uri: str) -> StoreReader:
    reader = open_store(uri)
    try:
        reader.store_info  # noqa: B018 - raises StoreNotReady while building, FormatError when it does not match
    except StoreNotReady:
        err.print(f"[yellow]{uri}: building — no store.json yet; wait for `mixture build` to finish (or rerun it)")
        raise typer.Exit(1) from None
    except FormatError as exc:
        err.print(f"[red]{escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None
    return reader


@contextmanager
def reading_shards(*readers: StoreReader) -> Iterator[None]:
    """A DuckDB error while a command scans stores' shards (a damaged page header reads as "don't know what type", a
    damaged footer as "Footer length error"): one line pointing to the audit that names the shard, exit 1."""
    try:
        yield
    except duckdb.Error as exc:
        audits = " or ".join(f"`mixture audit {escape(r.uri)} --checksums all`" for r in readers)
        where = ", ".join(escape(r.uri) for r in readers)
        err.print(f"[red]error:[/] {where}: reading the shards failed ({type(exc).__name__}: "
                  f"{escape(_first_line(exc))}). A shard whose bytes changed after the build fails this way: run "
                  f"{audits} to name it.", soft_wrap=True)
        raise typer.Exit(1) from None


def damaged_shard_error(exc: Exception) -> bool:
    """Whether a DuckDB error is one a damaged shard raises (not a query's own mistake or a locked setting)."""
    return type(exc) is duckdb.Error or isinstance(exc, READ_ERRORS) or (
        isinstance(exc, duckdb.InvalidInputException) and "parquet" in str(exc).lower())


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300].rstrip(" :")


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        err.print(f"[red]--format {fmt!r}: expected one of {', '.join(FORMATS)}")
        raise typer.Exit(2)


def _emit(text: str, out: str | None) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    from mixture.accounting.reader import open_fs
    from mixture.store.io import write_atomic

    fs, path = open_fs(out)
    write_atomic(fs, path, text)
    err.print(f"wrote {out}")


def _format_from_out(out: str | None, fmt: str | None, default: str) -> str:
    if fmt:
        return fmt
    if out:
        for ext, f in ((".csv", "csv"), (".json", "json"), (".md", "md")):
            if out.endswith(ext):
                return f
    return default


# -- audit ------------------------------------------------------------------------------------------------------
def print_audit(result: AuditResult, max_failures: int = 20) -> None:
    table = Table(title=f"audit of {result.uri}")
    for col in ("check", "result", "items", "what is checked / note"):
        table.add_column(col, justify="right" if col == "items" else "left")
    style = {"pass": "[green]pass", "fail": "[red bold]FAIL", "skip": "[yellow]skip"}
    for c in result.checks:
        detail = c.description + (f" [dim]({c.note})" if c.note else "")
        table.add_row(c.name, style[c.status], f"{c.checked:,}", detail)
    console.print(table)
    for c in result.checks:
        if not c.failures:
            continue
        console.print(f"[red bold]{c.name}[/]: {len(c.failures):,} violation(s)")
        for f in c.failures[:max_failures]:
            console.print(f"  - {f.message()}", markup=False)
        if len(c.failures) > max_failures:
            console.print(f"  … and {len(c.failures) - max_failures:,} more (--max-failures)")
    if result.building:
        console.print("[yellow bold]building[/]: the store has no store.json yet — it is not complete")
    elif result.ok:
        console.print(f"[green bold]ok[/]: every invariant holds ({len(result.checks)} checks)")
    else:
        console.print(f"[red bold]FAILED[/]: {len(result.failures):,} violation(s) in "
                      f"{sum(c.status == 'fail' for c in result.checks)} check(s)")


def audit_cmd(
    store: str = typer.Argument(..., help="Store folder: local path or fsspec URI (gs://, s3://, memory://)."),
    deep: bool = typer.Option(False, "--deep", help="Also re-tokenize a seeded sample, verify every checksum and "
                                                    "recount docs/tokens per source."),
    sample: int = typer.Option(1000, "--sample", min=0, help="Documents re-tokenized by --deep (0 = all)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the --deep and checksum samples."),
    checksums: str = typer.Option("auto", "--checksums",
                                  help="auto (all up to 4 GiB of shards, else a seeded sample), all, none."),
    fmt: str = typer.Option("table", "--format", help="table or json."),
    max_failures: int = typer.Option(20, "--max-failures", min=1, help="Violations shown per check."),
    inputs: bool = typer.Option(False, "--inputs", help="Also list the sources (and the benchmark, model and "
                                                        "tokenizer files) again and name every file added, removed or "
                                                        "changed since the build."),
) -> None:
    """Check every invariant of docs/store.md (cheapest evidence first). Exit 0 = all hold; 1 = violations
    (each naming the cell/shard and the two numbers that differ; with --inputs, each input file that changed) or
    the store is still building."""
    if checksums not in ("auto", "all", "none"):
        err.print(f"[red]--checksums {checksums!r}: expected auto, all or none")
        raise typer.Exit(2)
    if fmt not in ("table", "json"):
        err.print(f"[red]--format {fmt!r}: expected table or json")
        raise typer.Exit(2)
    reader = open_store(store)
    status = err.status("auditing…") if fmt == "table" and err.is_terminal else nullcontext()
    with status as s:
        result = audit(reader, deep=deep, sample=sample, seed=seed, checksum_mode=checksums,  # type: ignore[arg-type]
                       inputs=inputs, progress=(lambda msg: s.update(f"auditing: {msg}")) if s is not None else None)
    if fmt == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=1, default=str) + "\n")
    else:
        print_audit(result, max_failures)
    raise typer.Exit(result.exit_code)


# -- report -----------------------------------------------------------------------------------------------------
def report_cmd(
    store: str = typer.Argument(..., help="Store folder: local path or fsspec URI."),
    by: str = typer.Option("cell", "--by", help="cell, cluster, quality, source, content_type, category, language, or a pair "
                                                "such as cluster,quality (a matrix in table/md)."),
    fmt: str = typer.Option("table", "--format", help="table, csv, json or md (Markdown for an issue)."),
    out: str = typer.Option(None, "--out", help="Write to this file/URI instead of stdout."),
) -> None:
    """Tokens (exact and humanised), documents, share of tokens and mean tokens/doc per group."""
    _check_format(fmt)
    try:
        keys = parse_by(by)
    except ValueError as exc:
        err.print(f"[red]{exc}")
        raise typer.Exit(2) from exc
    reader = _complete(store)
    with reading_shards(reader):
        df = report(reader, keys)
    total = int(df["tokens"].sum())
    title = f"{reader.uri}: {humanize(total)} tokens ({total:,}) by {', '.join(keys)}"
    if keys == ["cluster", "quality"] and fmt in ("table", "md"):
        with reading_shards(reader):
            wide = matrix(reader)
        shown = wide.copy()
        for c in shown.columns[2:]:
            shown[c] = [humanize(v) for v in shown[c]]
        _emit(render(shown, fmt, title=f"{title} (tokens)", total=False), out)
        return
    _emit(render(df, fmt, title=title), out)


# -- diff -------------------------------------------------------------------------------------------------------
def diff_cmd(
    a: str = typer.Argument(..., help="Before: a store, or a counts file (.csv/.json/.yaml: cell,tokens[,docs])."),
    b: str = typer.Argument(..., help="After: a store or a counts file."),
    fmt: str = typer.Option("table", "--format", help="table, csv, json or md."),
    ids: bool = typer.Option(True, "--ids/--no-ids", help="List documents that entered/left each cell (by id)."),
    samples: int = typer.Option(3, "--samples", min=0, help="Example ids shown per cell."),
    show_all: bool = typer.Option(False, "--all", help="Show unchanged cells too."),
    out: str = typer.Option(None, "--out", help="Write the per-cell table to this file/URI."),
) -> None:
    """Per-cell token and doc deltas, cells added/removed, incompatible changes (tokenizer, k, bucket edges), and
    documents that entered or left each cell."""
    _check_format(fmt)
    sides = []
    for x in (a, b):
        if x.endswith(COUNTS_SUFFIXES):
            sides.append(x)
        else:
            sides.append(open_store(x))
    try:
        with reading_shards(*(x for x in sides if isinstance(x, StoreReader))):
            result = diff(sides[0], sides[1], ids=ids, samples=samples)
    except (ValueError, FileNotFoundError) as exc:
        err.print(f"[red]{exc}")
        raise typer.Exit(2) from exc
    if fmt == "json":
        _emit(json.dumps(result.to_dict(), indent=1, default=str) + "\n", out)
        return
    df = result.cells if show_all else result.changed
    df = df.copy()
    for col in ("entered_sample", "left_sample"):
        if col in df.columns:
            df[col] = [", ".join(v) for v in df[col]]
    if fmt == "csv":
        _emit(df.to_csv(index=False), out)
        return
    text = "\n".join(result.summary) + "\n\n"
    if df.empty:
        text += "no cell differs\n"
    else:
        text += render(df, fmt, title=f"{result.a} → {result.b}", total=False)
    _emit(text, out)


# -- counts -----------------------------------------------------------------------------------------------------
def counts_cmd(
    store: str = typer.Argument(..., help="Store folder: local path or fsspec URI."),
    out: str = typer.Option(None, "--out", help="Output file/URI (.csv, .json or .md); stdout when omitted."),
    fmt: str = typer.Option(None, "--format", help="table, csv, json or md (default: from --out's extension)."),
) -> None:
    """A per-source table like the public token-count table: name, tokens, category, docs, share, license, …"""
    fmt = _format_from_out(out, fmt, "table" if out is None else "csv")
    _check_format(fmt)
    reader = _complete(store)
    with reading_shards(reader):
        df = source_counts(reader)
    _emit(render(df, fmt, title=f"{reader.uri}: tokens per source"), out)


# -- sql --------------------------------------------------------------------------------------------------------
# what a damaged shard raises besides the bare duckdb.Error ("don't know what type", "Footer length error")
READ_ERRORS = (duckdb.IOException, duckdb.InternalException, duckdb.SerializationException)


def _sql_error(exc: Exception, reader: StoreReader | None = None) -> None:
    err.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
    if reader is not None and damaged_shard_error(exc):
        err.print(f"(a shard whose bytes changed after the build can fail a query this way: `mixture audit "
                  f"{reader.uri} --checksums all` names it)", markup=False)


def _show(df: pd.DataFrame, fmt: str) -> None:
    sys.stdout.write(render(df, fmt, total=False) if not df.empty or fmt != "table" else "(no rows)\n")


def _run_sql(con: duckdb.DuckDBPyConnection, query: str, fmt: str, read_only: bool,
             reader: StoreReader | None = None) -> bool:
    why = refused(con, query) if read_only else None
    if why:
        err.print(f"[red]error:[/] {escape(why)}", soft_wrap=True)
        return False
    try:
        rel = con.sql(query)
        if rel is None:
            return True
        df = exact_frame(rel.to_arrow_table())
    except duckdb.Error as exc:
        _sql_error(exc, reader)
        return False
    _show(df, fmt)
    return True


def _tables(reader: StoreReader, con: duckdb.DuckDBPyConnection, fmt: str) -> bool:
    try:
        df = table_list(reader, con)
    except duckdb.Error as exc:
        _sql_error(exc)
        return False
    _show(df, fmt)
    return True


VIEW_NAMES = ", ".join(VIEWS)


def sql_cmd(
    store: str = typer.Argument(..., help="Store folder: local path or fsspec URI."),
    query: str = typer.Argument(None, help=f"SQL over the views {VIEW_NAMES}; omit for an interactive loop."),
    fmt: str = typer.Option("table", "--format", help="table, csv, json or md."),
    unrestricted: bool = typer.Option(False, "--unrestricted", help="lift the read-only limits: COPY … TO, EXPORT, "
                                      "ATTACH, INSTALL/LOAD, reading files outside the store, SET"),
) -> None:
    """Run DuckDB SQL on the store's views. Without a query: read statements from stdin (end each with ';' or
    an empty line; `.tables` lists every view and table with its row count and what it holds; `.quit` or EOF
    exits). Exit 1 when a statement failed.

    Read-only unless --unrestricted: DuckDB opens no file outside the store (enable_external_access off,
    allowed_directories the store), installs and loads no extension, takes no SET (lock_configuration), and
    statements that write or attach (COPY … TO, EXPORT, ATTACH, DETACH, INSTALL, LOAD) are refused, also inside
    EXPLAIN ANALYZE or PREPARE. A query failing on a damaged shard points to `mixture audit`. Tables and
    views a session creates live in memory and are gone when it ends."""
    _check_format(fmt)
    reader = open_store(store)
    try:
        reader.store_info  # noqa: B018 - a store.json that does not match its format gets no views
    except StoreNotReady:
        pass
    except FormatError as exc:
        err.print(f"[yellow]{escape(str(exc))}\nthe store.json views (clusters, sources, counters) are left out",
                  soft_wrap=True)
    with reading_shards(reader):  # the views read every shard's footer
        con = connect(reader, read_only=not unrestricted)
    if query is not None:
        raise typer.Exit(0 if _run_sql(con, query, fmt, not unrestricted, reader) else 1)
    interactive = sys.stdin.isatty()
    if interactive:
        err.print(f"views: {VIEW_NAMES}. End statements with ';'; .tables lists them.", markup=False)
    buf: list[str] = []
    ok = True
    while True:
        if interactive:
            err.print("mixture> " if not buf else "     ..> ", end="")
        line = sys.stdin.readline()
        if not line:
            break
        stripped = line.strip()
        if not buf and stripped in (".quit", ".exit", "\\q", "exit", "quit"):
            break
        if not buf and stripped.rstrip(";") == ".tables":
            ok = _tables(reader, con, fmt) and ok
            continue
        if stripped:
            buf.append(stripped)
        if buf and (not stripped or stripped.endswith(";")):
            ok = _run_sql(con, " ".join(buf), fmt, not unrestricted, reader) and ok
            buf = []
    if buf:  # the last statement, without ';' or an empty line after it: refused as the others are
        ok = _run_sql(con, " ".join(buf), fmt, not unrestricted, reader) and ok
    raise typer.Exit(0 if ok else 1)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_cmd)
    app.command("report")(report_cmd)
    app.command("diff")(diff_cmd)
    app.command("counts")(counts_cmd)
    app.command("sql")(sql_cmd)


__all__ = ["register", "print_audit"]
