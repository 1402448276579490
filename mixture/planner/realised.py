"""The realised ledger: recount materialized shards with DuckDB and compare with the plan, per phase and cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from fsspec.core import url_to_fs

from mixture.accounting.verify import mixture_shard_problems
from mixture.planner import formats
from mixture.planner.formats import MANIFEST, Manifest, Plan
from mixture.store.formats import FormatError


class RealisedError(RuntimeError):
    """The directory holds no materialized mixture."""


def recount(out_dir: str | Path) -> dict[tuple[str, str], dict[str, int]]:
    """(phase, cell) -> docs, tokens, max_doc, straight from the Parquet shards (a local folder or any URI)."""
    fs, root = url_to_fs(str(out_dir))
    root = root.rstrip("/")
    fs.invalidate_cache(root)
    files = sorted(fs.glob(f"{root}/phase=*/*.parquet"))
    if not files:
        raise RealisedError(f"{out_dir}: no phase=*/*.parquet shards; run `mixture materialize` first")
    con = duckdb.connect()
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol not in ("file", "local"):
        con.register_filesystem(fs)  # DuckDB reads the bucket through fsspec (no httpfs needed)
        files = [f"{protocol}://{f}" for f in files]
    rows = con.execute(
        """
        SELECT regexp_extract(filename, 'phase=([^/]+)/', 1) AS phase, cell,
               count(*) AS docs, sum(n_tokens) AS tokens, max(n_tokens) AS max_doc
        FROM read_parquet(?, filename = true, hive_partitioning = false)
        GROUP BY ALL ORDER BY ALL
        """,
        [files],
    ).fetchall()
    con.close()
    return {(p, c): {"docs": int(d), "tokens": int(t), "max_doc": int(m)} for p, c, d, t, m in rows}


def read_manifest(out_dir: str | Path) -> Manifest | None:
    """DIR/manifest.json through its model (None when there is none); RealisedError when it does not match."""
    fs, root = url_to_fs(str(out_dir))
    if not fs.exists(f"{root.rstrip('/')}/{MANIFEST}"):
        return None
    try:
        return formats.read_manifest(str(out_dir))
    except FormatError as exc:
        raise RealisedError(str(exc)) from None  # names the file and field, and says to materialize again


def realised_ledger(out_dir: str | Path, plan: Plan) -> dict[str, Any]:
    """Planned vs realised tokens per (phase, cell), epochs per cell, phase totals; `ok` is False on any drift.

    Exact checks (the draw is deterministic): every shard's bytes are those the manifest recorded (size, xxh64),
    each (phase, cell) holds exactly the tokens the manifest says were drawn, and was drawn for exactly the
    tokens this plan asks. Tolerance against the plan's targets: a cell may differ from its planned tokens by at
    most its largest document (the draw cuts at document boundaries), a phase by the sum of those.
    """
    manifest = read_manifest(out_dir)
    corrupt = []
    if manifest is not None:  # every shard's bytes as the manifest recorded them, before any is counted
        fs, root = url_to_fs(str(out_dir))
        fs.invalidate_cache()
        corrupt = mixture_shard_problems(fs, root.rstrip("/"), str(out_dir).rstrip("/"), manifest.phases)
    try:
        counted = recount(out_dir)
    except duckdb.Error as exc:  # a damaged page header or footer: DuckDB names no file
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        why = "\n".join(corrupt) if corrupt else (f"{out_dir}: cannot read the shards ({type(exc).__name__}: {first}); "
                                                   "run `mixture materialize` again into a new folder")
        raise RealisedError(why) from None
    info = manifest.cells if manifest else {}
    man_cells = {ph.name: ph.cells for ph in manifest.phases} if manifest else {}
    rows, phases, flagged = [], [], []
    epochs: dict[str, dict[str, float]] = {}
    for ph in plan.phases:
        name = ph.name
        tot_plan = tot_real = tol_sum = 0
        for cell in plan.cells:
            c = cell.cell
            planned = cell.phases[name].tokens
            got = counted.get((name, c), {"docs": 0, "tokens": 0, "max_doc": 0})
            tol = info[c].max_doc_tokens if c in info else got["max_doc"]
            drift = got["tokens"] - planned
            drawn = man_cells.get(name, {}).get(c)
            manifest_tokens = drawn.tokens if drawn else None
            problems = []
            if abs(drift) > tol:
                problems.append(f"drift {drift:+,} tokens exceeds one document ({tol:,})")
            if manifest_tokens is not None and manifest_tokens != got["tokens"]:
                problems.append(f"manifest says {manifest_tokens:,} tokens, shards hold {got['tokens']:,}")
            if manifest is not None and (drawn.planned_tokens if drawn else 0) != planned:
                problems.append(f"the plan asks {planned:,} tokens, the mixture was drawn for "
                                f"{drawn.planned_tokens if drawn else 0:,}: it is another plan's")
            if planned == 0 and got["tokens"] == 0:
                continue
            rows.append({
                "phase": name, "cell": c, "planned_tokens": planned, "realised_tokens": got["tokens"],
                "docs": got["docs"], "drift": drift, "tolerance": tol,
                "rel_drift": drift / planned if planned else None, "ok": not problems, "problems": problems,
            })
            if problems:
                flagged.append(f"{name}/{c}")
            tot_plan += planned
            tot_real += got["tokens"]
            tol_sum += tol
            e = epochs.setdefault(c, {"planned": cell.exposure or 0.0, "realised": 0.0})
            avail = info[c].available_tokens if c in info else cell.available_tokens
            e["realised"] += got["tokens"] / avail if avail else 0.0
        phases.append({
            "phase": name, "budget": ph.tokens, "planned_tokens": tot_plan, "realised_tokens": tot_real,
            "drift": tot_real - ph.tokens, "tolerance": tol_sum, "ok": abs(tot_real - ph.tokens) <= tol_sum,
        })
    extra = sorted({f"{p}/{c}" for (p, c) in counted} - {f"{r['phase']}/{r['cell']}" for r in rows})
    return {
        "dir": str(out_dir),
        "plan_id": plan.plan_id,
        "manifest_plan_id": manifest.plan_id if manifest else None,
        "rows": rows,
        "phases": phases,
        "epochs": [{"cell": c, **v} for c, v in epochs.items()],
        "flagged": flagged,
        "unplanned": extra,
        "corrupt": corrupt,
        "plan_mismatch": manifest is not None and manifest.plan_id != plan.plan_id,
        "ok": not flagged and not extra and not corrupt and all(p["ok"] for p in phases)
        and (manifest is None or manifest.plan_id == plan.plan_id),
    }
