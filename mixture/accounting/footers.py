"""Per-file facts from Parquet: row counts, n_tokens sums, partition column ranges, checksums — never `text`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from mixture.accounting.reader import StoreReader, is_local

HASH_CHUNK = 8 << 20


@dataclass
class FileFacts:
    """What one Parquet shard holds; `error` is set (and the numbers are None) when it could not be read."""

    rows: int | None = None
    tokens: int | None = None
    cluster_min: int | None = None
    cluster_max: int | None = None
    quality_min: int | None = None
    quality_max: int | None = None
    error: str | None = None


def _bulk(reader: StoreReader, rels: list[str]) -> dict[str, FileFacts]:
    con = reader.connect_bare()
    rows = con.execute(
        "SELECT filename, count(*), sum(n_tokens), min(cluster), max(cluster), min(quality), max(quality) "
        f"FROM read_parquet({reader.parquet_list_sql(rels)}, filename=true, hive_partitioning=false) "
        "GROUP BY filename"
    ).fetchall()
    by_duck = {reader.duckdb_path(r): r for r in rels}
    out = {rel: FileFacts(rows=0, tokens=0) for rel in rels}
    for filename, n, tokens, cmin, cmax, qmin, qmax in rows:
        out[by_duck[filename]] = FileFacts(int(n), int(tokens or 0), cmin, cmax, qmin, qmax)
    return out


def _one(reader: StoreReader, rel: str) -> FileFacts:
    try:
        with reader.fs.open(reader.path(rel), "rb") as f:
            pf = pq.ParquetFile(f)
            names = set(pf.schema_arrow.names)
            missing = {"n_tokens", "cluster", "quality"} - names
            if missing:
                return FileFacts(rows=pf.metadata.num_rows, error=f"no column(s) {', '.join(sorted(missing))}")
            table = pf.read(columns=["n_tokens", "cluster", "quality"])
        facts = FileFacts(rows=pf.metadata.num_rows, tokens=int(pc.sum(table["n_tokens"]).as_py() or 0))
        if table.num_rows:
            for col in ("cluster", "quality"):
                mm = pc.min_max(table[col]).as_py()
                setattr(facts, f"{col}_min", mm["min"])
                setattr(facts, f"{col}_max", mm["max"])
        return facts
    except Exception as exc:  # noqa: BLE001 - a corrupt shard is a finding, not a crash
        return FileFacts(error=f"unreadable Parquet ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})")


def scan_files(reader: StoreReader, rels: list[str], threads: int = 8) -> dict[str, FileFacts]:
    """Facts for each shard: one multi-file DuckDB scan of the n_tokens/cluster/quality columns, falling back to
    file-by-file reads (to name the broken file) when any file is unreadable."""
    if not rels:
        return {}
    try:
        return _bulk(reader, rels)
    except Exception:  # noqa: BLE001 - some file is broken: find out which, file by file
        with ThreadPoolExecutor(threads) as ex:
            return dict(zip(rels, ex.map(lambda r: _one(reader, r), rels), strict=True))


def parquet_rows(reader: StoreReader, rels: Iterable[str]) -> dict[str, int | str]:
    """Row count from the footer of each file ({rel: rows} or {rel: error message})."""
    out: dict[str, int | str] = {}
    for rel in rels:
        try:
            with reader.fs.open(reader.path(rel), "rb") as f:
                out[rel] = pq.ParquetFile(f).metadata.num_rows
        except Exception as exc:  # noqa: BLE001
            out[rel] = f"unreadable Parquet ({type(exc).__name__}: {exc})"
    return out


def xxh64_file(reader: StoreReader, rel: str) -> str:
    h = xxhash.xxh64()
    # local files skip fsspec's per-file wrapper (it dominates for many small shards)
    opener = open(reader.path(rel), "rb") if is_local(reader.fs) else reader.fs.open(reader.path(rel), "rb")  # noqa: SIM115
    with opener as f:
        while chunk := f.read(HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def checksums(reader: StoreReader, rels: list[str], threads: int = 8,
              progress: Callable[[int], None] | None = None) -> dict[str, str]:
    """{rel: hex xxh64 of the file bytes} (or an error message starting with 'error:')."""

    def one(rel: str) -> str:
        try:
            return xxh64_file(reader, rel)
        except Exception as exc:  # noqa: BLE001
            return f"error: {type(exc).__name__}: {exc}"
        finally:
            if progress:
                progress(1)

    with ThreadPoolExecutor(threads) as ex:
        return dict(zip(rels, ex.map(one, rels), strict=True))
