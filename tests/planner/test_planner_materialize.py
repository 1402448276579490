"""Materialize a plan from a synthetic store (docs/store.md format); re-run identical; the realised ledger."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import xxhash
import yaml
from typer.testing import CliRunner

from mixture.cli import app
from mixture.pipelines.materialize.run import draw_cell, interleave, materialize
from mixture.planner.formats import Manifest, PhaseManifest, read_plan
from mixture.planner.realised import realised_ledger
from mixture.planner.run import plan_from_spec
from mixture.store.formats import read_model, read_store_artifact

SOURCE = {"name": "synthetic", "uri": "corpus/*.jsonl", "format": "jsonl"}  # a spec names its sources
WEIGHTS = {
    "a": {"c00q1": 0.4, "c00q3": 0.3, "c01q2": 0.2, "c02q4": 0.1},
    "b": {"c00q1": 0.1, "c00q3": 0.25, "c01q2": 0.4, "c02q4": 0.25},
}


def write_plan_spec(tmp_path: Path, store: Path) -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "synthetic",
        "sources": [SOURCE],
        "store": {"uri": str(store)},
        "mixture": {"budget": 12_000, "seed": 3, "phases": [
            {"name": "a", "tokens": 9_000, "weights": WEIGHTS["a"]},
            {"name": "b", "tokens": 3_000, "weights": WEIGHTS["b"]},
        ]},
    }))
    return spec


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): xxhash.xxh64_hexdigest(p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()}


def read_phase(out: Path, phase: str):
    files = sorted((out / f"phase={phase}").glob("part-*.parquet"))
    return [pq.read_table(f) for f in files]


def test_draw_cell_whole_passes_then_a_fresh_prefix():
    n_tok = np.array([10, 20, 30, 40])  # 100 tokens
    d = draw_cell(n_tok, [150, 130], seed=1, cell="c00q0")
    assert d.cuts[-1] == len(d.stream)
    counts = collections.Counter(d.stream.tolist())
    assert set(counts.values()) <= {2, 3}  # two whole passes, then part of a third permutation
    assert sorted(d.stream[:4].tolist()) == [0, 1, 2, 3] and sorted(d.stream[4:8].tolist()) == [0, 1, 2, 3]
    assert abs(int(d.tokens[: d.cuts[0]].sum()) - 150) <= 20  # within half of the largest document
    assert abs(int(d.tokens[d.cuts[0]:].sum()) - 130) <= 20
    assert abs(int(d.tokens.sum()) - 280) <= 40
    again = draw_cell(n_tok, [150, 130], seed=1, cell="c00q0")
    assert (again.stream == d.stream).all()
    assert not (draw_cell(n_tok, [150, 130], seed=2, cell="c00q0").stream[:8] == d.stream[:8]).all()


def test_interleave_keeps_token_proportions_in_every_prefix():
    a, b = np.full(30, 10), np.full(10, 10)  # 300 and 100 tokens: 3:1 everywhere
    order = interleave([a, b])
    cells = np.concatenate([np.zeros(30, int), np.ones(10, int)])[order]
    for cut in (4, 8, 20, 40):
        assert abs((cells[:cut] == 1).sum() - cut / 4) <= 1


def test_materialize_totals_rerun_and_realised(tmp_path: Path, synthetic_store: Path):
    spec = write_plan_spec(tmp_path, synthetic_store)
    runner = CliRunner()
    plan_path = tmp_path / "plan.json"
    res = runner.invoke(app, ["plan", str(spec), "--out", str(plan_path)])
    assert res.exit_code == 0, res.output
    plan = read_plan(str(plan_path))
    out = tmp_path / "mix"
    res = runner.invoke(app, ["materialize", str(plan_path), "--out", str(out), "--shard-bytes", "8KB"])
    assert res.exit_code == 0, res.output
    manifest = read_model(Manifest, str(out / "manifest.json"))
    store_docs = {}
    import duckdb
    for cell, cl, q in (("c00q1", 0, 1), ("c00q3", 0, 3), ("c01q2", 1, 2), ("c02q4", 2, 4)):
        store_docs[cell] = duckdb.sql(
            f"SELECT id, n_tokens FROM read_parquet('{synthetic_store}/cluster={cl:02d}/quality={q}/*.parquet')"
        ).fetchall()
    max_doc = {c: max(n for _, n in rows) for c, rows in store_docs.items()}
    for ph in plan.phases:
        tables = read_phase(out, ph.name)
        assert len(tables) >= 2  # 8KB shards
        tokens = sum(int(t.column("n_tokens").to_numpy().sum()) for t in tables)
        assert abs(tokens - ph.tokens) <= sum(max_doc.values())  # within one document per cell
        assert abs(tokens - ph.tokens) <= max(max_doc.values())  # the error carried across cells keeps it tighter
        per_cell = collections.Counter()
        for t in tables:
            for c, n in zip(t.column("cell").to_pylist(), t.column("n_tokens").to_pylist(), strict=True):
                per_cell[c] += n
        for row in plan.cells:
            planned = row.phases[ph.name].tokens
            assert abs(per_cell[row.cell] - planned) <= max_doc[row.cell]
        assert manifest.phases[plan.phase_names().index(ph.name)].tokens == tokens
        phase_manifest = read_model(PhaseManifest, str(out / f"phase={ph.name}" / "_manifest.json"))
        assert phase_manifest == manifest.phases[plan.phase_names().index(ph.name)]
    # the small cell is drawn for several passes: every document the same number of times, up to the last pass
    ids = collections.Counter()
    for ph in plan.phases:
        for t in read_phase(out, ph.name):
            for c, i in zip(t.column("cell").to_pylist(), t.column("id").to_pylist(), strict=True):
                if c == "c02q4":
                    ids[i] += 1
    small_exposure = plan.cell_map()["c02q4"].exposure
    assert small_exposure > 4
    assert max(ids.values()) - min(ids.values()) <= 1 and len(ids) == len(store_docs["c02q4"])
    assert manifest.phases[1].cells["c02q4"].passes[-1] >= 4
    # re-running gives identical shards and manifests, in place and elsewhere
    before = tree_hashes(out)
    res = runner.invoke(app, ["materialize", str(plan_path), "--out", str(out), "--shard-bytes", "8KB"])
    assert res.exit_code == 0
    assert tree_hashes(out) == before
    other = tmp_path / "mix2"
    materialize(plan, other, shard_bytes=8 * 1024)
    assert tree_hashes(other) == before
    # the realised ledger matches the plan ...
    res = runner.invoke(app, ["realised", str(out), str(plan_path)])
    assert res.exit_code == 0, res.output
    assert "realised matches the plan" in res.output
    said = " ".join(res.output.split())  # what is exact and why the tolerance is what it is
    assert "Checked exactly" in said and "xxh64" in said and "up to its largest document" in said
    ledger = realised_ledger(out, plan)
    assert ledger["ok"] and {p["phase"]: p["realised_tokens"] for p in ledger["phases"]} == {
        p.name: p.tokens for p in manifest.phases
    }
    # ... and flags drift when a shard goes missing
    next(iter(sorted((out / "phase=a").glob("part-*.parquet")))).unlink()
    res = runner.invoke(app, ["realised", str(out), str(plan_path)])
    assert res.exit_code == 1
    assert not realised_ledger(out, plan)["ok"]


def test_scaled_plan_materializes_at_store_scale(tmp_path: Path, synthetic_store: Path):
    spec = write_plan_spec(tmp_path, synthetic_store)
    _, plan = plan_from_spec(str(spec), scale=0.5)
    assert [p.tokens for p in plan.phases] == [4_500, 1_500] and plan.source.scale == 0.5
    manifest = materialize(plan, tmp_path / "half")
    assert [abs(p.tokens - p.planned_tokens) <= p.tolerance for p in manifest.phases] == [True, True]


@pytest.mark.slow
def test_with_a_real_built_store(request, tmp_path: Path):
    """Plan proportionally over the project's small built store and materialize it (when the fixture exists)."""
    try:
        store = request.getfixturevalue("built_store")
    except pytest.FixtureLookupError:
        pytest.skip("tests/conftest.py has no built_store fixture yet")
    store = Path(store.store)
    spec = tmp_path / "spec.yaml"
    total = sum(c.tokens for c in read_store_artifact(str(store / "store.json")).cells)
    spec.write_text(yaml.safe_dump({"name": "built", "sources": [SOURCE], "store": {"uri": str(store)}, "mixture": {
        "budget": total // 2, "phases": [{"name": "main", "fraction": 0.8}, {"name": "anneal", "fraction": 0.2}]}}))
    _, plan = plan_from_spec(str(spec))
    assert plan.exposure.max == pytest.approx(0.5, rel=1e-6)
    materialize(plan, tmp_path / "mix")
    assert realised_ledger(tmp_path / "mix", plan)["ok"]
