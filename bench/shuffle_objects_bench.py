"""Objects written and requests made by one shuffle (T writers → P readers) on the gs:// and s3:// emulators, in
the layout before (a file per partition and writer), after (a file per writer, a byte range per partition),
combined (after, then the writer files regrouped into C combined files that the readers read) and indexed
(combined, then the combined files' indexes merged into one that each reader reads a slice of)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

# gcsfs probes for zonal/HNS buckets over gRPC unless told not to (read when gcsfs is imported; tests/remote too)
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

import numpy as np
import pyarrow as pa

from bench.common import machine, show

BEGIN, END = "<!-- shuffle-objects-bench:begin -->", "<!-- shuffle-objects-bench:end -->"
ROWS = 400_000  # the fixed input: key rows as the exact-dedup shuffle's (an id, a 64-bit hash, an address)
SCHEMA = pa.schema([("rank", pa.int32()), ("idx", pa.int64()), ("id", pa.string()), ("exact_hash", pa.uint64())])

PHASES = ("write", "combine", "read")
COMBINED = ("combined", "indexed")  # the layouts with a combine round (indexed: and the merged index after it)
COUNTS: Counter = Counter()  # (kind of request) → number, for the phase that runs


def _count(kind: Callable[..., str], call):
    """`call` (an async method of a filesystem that makes one HTTP request) counting each request by its kind."""
    @functools.wraps(call)
    async def counted(self, *args, **kwargs):
        COUNTS[kind(*args, **kwargs)] += 1
        return await call(self, *args, **kwargs)
    return counted


def _gcs_kind(method: str, path: str, *args, **kwargs) -> str:
    if method == "POST" and "/upload/" in path:
        return "write"
    if method == "GET" and ("Range" in (kwargs.get("headers") or {}) or kwargs.get("alt") == "media"):
        return "read"
    if method == "GET" and path.endswith("/o"):
        return "list"
    return "other"


def _s3_kind(method, *args, **kwargs) -> str:
    name = method if isinstance(method, str) else getattr(method, "__name__", str(method))
    if name in ("put_object", "upload_part", "create_multipart_upload", "complete_multipart_upload"):
        return "write"
    if name == "get_object":
        return "read"
    if name.startswith("list_objects"):
        return "list"
    return "other"


def count_requests() -> None:
    """Every HTTP request gcsfs and s3fs make in this process, counted in COUNTS."""
    import gcsfs.core
    import s3fs.core

    gcsfs.core.GCSFileSystem._request = _count(_gcs_kind, gcsfs.core.GCSFileSystem._request)
    from fsspec.asyn import sync_wrapper

    s3fs.core.S3FileSystem._call_s3 = _count(_s3_kind, s3fs.core.S3FileSystem._call_s3)
    s3fs.core.S3FileSystem.call_s3 = sync_wrapper(s3fs.core.S3FileSystem._call_s3)  # S3File's writes call this


def fixed_input(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table({"rank": pa.array(rng.integers(0, 1000, rows).astype(np.int32)),
                     "idx": pa.array(np.arange(rows, dtype=np.int64)),
                     "id": pa.array([f"doc-{i:08d}" for i in range(rows)]),
                     "exact_hash": pa.array(rng.integers(0, 2**63, rows, dtype=np.int64).astype(np.uint64) * 2)},
                    schema=SCHEMA)


def _server_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _phase(server: int, started: tuple[float, float, float]) -> dict:
    cpu, srv, wall = started
    return {"requests": dict(COUNTS), "cpu": time.process_time() - cpu, "server_cpu": _server_cpu(server) - srv,
            "wall": time.perf_counter() - wall}


def run_shuffle(url: str, data: pa.Table, writers: int, parts: int, layout: str, server: int,
                combined: int = 8) -> dict:
    """T = `writers` tasks each write their share of `data` partitioned over `parts` by hash prefix (`combined`
    layout: then `combined` tasks each combine ⌈T / combined⌉ writer files), then P = `parts` tasks each read
    their partition with DuckDB (the dedup stages' code); objects, requests by kind and CPU (this process's, the
    emulator's) per phase."""
    import fsspec

    from mixture.pipelines.dedup.combine import combine
    from mixture.pipelines.dedup.shuffle import (
        PART,
        fetch_partition,
        matching_files,
        prefix_partition,
        register,
        write_merged_index,
    )
    from mixture.pipelines.dedup.shuffle import write_partitions as write
    from mixture.pipelines.runtime.duckdb_connection import duckdb_connection

    out: dict = {"T": writers, "P": parts, "layout": layout}
    bounds = np.linspace(0, data.num_rows, writers + 1).astype(int)
    COUNTS.clear()
    cpu, srv, wall = time.process_time(), _server_cpu(server), time.perf_counter()
    for w in range(writers):
        share = data.slice(bounds[w], bounds[w + 1] - bounds[w])
        share = share.append_column(PART, pa.array(prefix_partition(share.column("exact_hash").to_numpy(), parts)))
        batches = share.sort_by([(PART, "ascending")]).to_batches(65_536)
        if layout != "before":
            write(batches, f"{url}/{w:05d}.parquet", parts)
        else:
            write(batches, lambda q, w=w: f"{url}/{q:05d}/{w:05d}.parquet")
    out["write"] = _phase(server, (cpu, srv, wall))
    COUNTS.clear()
    cpu, srv, wall = time.process_time(), _server_cpu(server), time.perf_counter()
    if layout in COMBINED:
        group = -(-writers // combined)
        for c in range(-(-writers // group)):
            combine(f"{url}/*.parquet", c, group, writers)
        if layout == "indexed":
            write_merged_index(f"{url}/*.parquet")
    out["combine"] = _phase(server, (cpu, srv, wall))
    fs, root = fsspec.core.url_to_fs(url)
    fs.invalidate_cache()
    out["objects"] = len(fs.find(root))
    COUNTS.clear()
    cpu, srv, wall = time.process_time(), _server_cpu(server), time.perf_counter()
    seen, total = 0, 0
    for q in range(parts):
        with tempfile.TemporaryDirectory() as scratch, duckdb_connection("256MB") as con:
            files = (fetch_partition(f"{url}/*.parquet", q, scratch, parts) if layout != "before"
                     else matching_files(f"{url}/{q:05d}/*.parquet"))
            register(con, "part", files, SCHEMA)
            n, s = con.execute("SELECT count(*), coalesce(sum(exact_hash % 1000003), 0) FROM part").fetchone()
            seen, total = seen + n, total + int(s)
    out["read"] = _phase(server, (cpu, srv, wall))
    want = int((data.column("exact_hash").to_numpy() % np.uint64(1000003)).sum())
    if seen != data.num_rows or total != want:
        raise RuntimeError(f"{layout} T={writers} P={parts}: readers saw {seen:,} rows (checksum {total}), "
                           f"the input has {data.num_rows:,} ({want})")
    fs.rm(root, recursive=True)
    return out


@contextlib.contextmanager
def emulators() -> Iterator[dict[str, tuple[str, int]]]:
    """The tests' GCS emulator and moto S3 server: {protocol: (bucket URL, server pid)}."""
    from tests.remote.conftest import BUCKET, _environ, _server, free_port, gcs_env, s3_env

    here = Path(__file__).resolve().parent.parent / "tests" / "remote" / "gcs_emulator.py"
    with tempfile.TemporaryDirectory() as logs, contextlib.ExitStack() as stack:
        gp, sp = free_port(), free_port()
        gcs = stack.enter_context(_server([sys.executable, str(here), "127.0.0.1", str(gp), BUCKET],
                                          f"http://127.0.0.1:{gp}/storage/v1/b", Path(logs) / "gcs.log"))
        s3 = stack.enter_context(_server([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(sp)],
                                         f"http://127.0.0.1:{sp}/moto-api/", Path(logs) / "s3.log"))
        env = {**gcs_env(f"http://127.0.0.1:{gp}"), **s3_env(f"http://127.0.0.1:{sp}")}
        stack.enter_context(_environ(env))
        import fsspec

        fsspec.filesystem("s3").mkdir(BUCKET)
        yield {"gs": (f"gs://{BUCKET}", gcs.pid), "s3": (f"s3://{BUCKET}", s3.pid)}


def _fmt(r: dict, phase: str) -> str:
    req = r[phase]["requests"]
    parts = ", ".join(f"{k} {v:,}" for k, v in sorted(req.items()))
    return f"{sum(req.values()):,} ({parts})"


def report(results: list[dict], load: list[str], rows: int) -> str:
    lines = [BEGIN, "## Shuffle objects and requests (`bench/shuffle_objects_bench.py`)", "",
             f"Machine: {machine()}. Load average (1/5/15 min) before each store: {'; '.join(load)} (the machine is "
             "shared: CPU seconds are what to compare, wall times are upper bounds).", "",
             f"Reproduce: `nice python -m bench.shuffle_objects_bench` (options: `--tasks`, `--stores`). Input: "
             f"{rows:,} key rows as the exact-dedup shuffle's (id, 64-bit hash, address), the same at every T. T "
             "writer tasks each write their share partitioned over P by hash prefix, then P reader tasks each read "
             "their partition into DuckDB (pipelines/dedup/shuffle.py, the dedup stages' code), in this process one "
             "after the other against the tests' emulators (tests/remote/conftest.py). `before`: a Parquet file per "
             "partition and writer (`<folder>/<q>/<writer>.parquet`, the layout until this change); `after`: one file "
             "per writer, a byte range per partition and its index at the end (`<folder>/<writer>.parquet`; a reader "
             "makes one listing, then per writer one range read for the index entry and one for its range); `combined`: "
             "after, then a combine round (pipelines/dedup/combine.py: task c reads writer files [c·g, (c+1)·g) front "
             "to back and writes them as one file, partition by partition; g = ⌈T / C⌉) and the readers read the C "
             "combined files (a listing of each folder, then per combined file an index entry and a range); `indexed`: "
             "combined, then one task merges the combined files' indexes into one object (shuffle.write_merged_index: "
             "their trailers and entries, one upload; counted with the combine round) and each reader reads its "
             "slice of it (one request) and its range of each combined file. "
             "Requests: every HTTP request gcsfs / s3fs made (counted in `GCSFileSystem._request` / "
             "`S3FileSystem._call_s3`), by kind (write: uploads; read: object GETs; list; other: renames, "
             "metadata, deletes — a write is published by writing a temporary name then renaming it). CPU: this "
             "process (client) + the emulator's (server), seconds.", "",
             "| store | layout | T | P | objects | ≤ 2(T+P) | write requests | combine requests | read requests | "
             "client CPU (write + combine + read) | server CPU | wall |",
             "|---|---|---:|---:|---:|---|---|---|---|---:|---:|---:|"]
    for r in results:
        ok = "yes" if r["objects"] <= 2 * (r["T"] + r["P"]) else "no"
        lines.append(f"| {r['store']} | {r['layout']} | {r['T']:,} | {r['P']:,} | {r['objects']:,} | {ok} | "
                     f"{_fmt(r, 'write')} | {_fmt(r, 'combine') if r['layout'] in COMBINED else '—'} | "
                     f"{_fmt(r, 'read')} | {' + '.join(format(r[p]['cpu'], '.1f') for p in PHASES)} | "
                     f"{sum(r[p]['server_cpu'] for p in PHASES):.1f} | {sum(r[p]['wall'] for p in PHASES):.0f} s |")
    lines += [""] + summary(results) + ["", END]
    return "\n".join(lines)


def _total(r: dict, phase: str | None = None) -> int:
    return sum(sum(r[p]["requests"].values()) for p in ((phase,) if phase else PHASES))


def _cpu(r: dict) -> float:
    return sum(r[p]["cpu"] + r[p]["server_cpu"] for p in PHASES)


def _after(runs: list[dict], run: dict) -> dict | None:
    """The `after` run at `run`'s T and P, if there was one."""
    return next((r for r in runs if r["layout"] == "after" and (r["T"], r["P"]) == (run["T"], run["P"])), None)


def summary(results: list[dict]) -> list[str]:
    """Before → after at each T both ran, and the CPU of the largest T against the smallest at one P."""
    out = []
    for store in dict.fromkeys(r["store"] for r in results):
        mine = [r for r in results if r["store"] == store]
        for b in (r for r in mine if r["layout"] == "before"):
            if a := _after(mine, b):
                out.append(f"- {store}, T = P = {b['T']}: objects {b['objects']:,} → {a['objects']:,}; requests "
                           f"{_total(b):,} → {_total(a):,} (writing {_total(b, 'write'):,} → {_total(a, 'write'):,}, "
                           f"reading {_total(b, 'read'):,} → {_total(a, 'read'):,}); CPU (client + server) "
                           f"{_cpu(b):.1f} → {_cpu(a):.1f} s.")
        for c in (r for r in mine if r["layout"] == "combined"):
            if a := _after(mine, c):
                out.append(f"- {store}, T = {c['T']:,}, P = {c['P']:,}, combined into {c['combined']}: reading "
                           f"{_total(a, 'read'):,} → {_total(c, 'read'):,} requests, "
                           f"{_total(c, 'combine'):,} to combine; all requests {_total(a):,} → {_total(c):,}; "
                           f"objects {a['objects']:,} → {c['objects']:,}; CPU (client + server) {_cpu(a):.1f} → "
                           f"{_cpu(c):.1f} s.")
        for i in (r for r in mine if r["layout"] == "indexed"):
            c = next((r for r in mine if r["layout"] == "combined" and (r["T"], r["P"]) == (i["T"], i["P"])), None)
            if c:
                out.append(f"- {store}, T = {i['T']:,}, P = {i['P']:,}, combined into {i['combined']}, indexed: reading "
                           f"{_total(c, 'read'):,} → {_total(i, 'read'):,} requests, combining and indexing "
                           f"{_total(c, 'combine'):,} → {_total(i, 'combine'):,}; all requests {_total(c):,} → "
                           f"{_total(i):,}; objects {c['objects']:,} → {i['objects']:,}; CPU (client + server) "
                           f"{_cpu(c):.1f} → {_cpu(i):.1f} s.")
        for p in sorted({r["P"] for r in mine if r["layout"] == "after"}):
            at = sorted((r for r in mine if r["layout"] == "after" and r["P"] == p), key=lambda r: r["T"])
            if len(at) > 1:
                lo, hi = at[0], at[-1]
                out.append(f"- {store}, after, P = {p}: CPU (client + server) at T = {hi['T']:,} is "
                           f"{_cpu(hi) / max(_cpu(lo), 1e-9):.2f}× that at T = {lo['T']:,} ({_cpu(hi):.1f} s against "
                           f"{_cpu(lo):.1f} s); requests {_total(hi):,} against {_total(lo):,}.")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--stores", nargs="+", default=["gs", "s3"])
    ap.add_argument("--layouts", nargs="+", default=["before", "after", *COMBINED])
    ap.add_argument("--combined", type=int, default=8, help="combined files per shuffle (layout combined)")
    ap.add_argument("--partitions", type=int, nargs="*", default=[], help="P values besides P = T (after only)")
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--skip-before-above", type=int, default=256, help="the before layout only up to this T")
    ap.add_argument("--max-pairs", type=int, default=70_000, help="runs with T × P above this are not run")
    ap.add_argument("--no-publish", action="store_true")
    args = ap.parse_args()
    count_requests()
    data = fixed_input(args.rows)
    results, load = [], []
    with emulators() as stores:
        for name in args.stores:
            load.append(f"{name}: " + " / ".join(f"{x:.1f}" for x in os.getloadavg()))
            url, pid = stores[name]
            for t in args.tasks:
                runs = [(layout, t) for layout in args.layouts if layout != "before" or t <= args.skip_before_above]
                runs += [("after", p) for p in args.partitions if p < t and "after" in args.layouts]
                for layout, p in runs:
                    if t * p > args.max_pairs and layout not in COMBINED:
                        print(f"{name} {layout} T={t} P={p}: not run (T × P > {args.max_pairs:,})", flush=True)
                        continue
                    r = run_shuffle(f"{url}/shuffle-{layout}-{t}-{p}", data, t, p, layout, pid, args.combined)
                    r["store"], r["combined"] = name, args.combined
                    print(r, flush=True)
                    results.append(r)
    text = report(results, load, args.rows)
    show(text, BEGIN, END, not args.no_publish)


if __name__ == "__main__":
    main()
