"""`mixture.datasets`: a store and a materialized mixture as `datasets` datasets, with exactly the ledger-listed
(manifest-listed) shards, counted against store.json and the manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mixture.accounting import StoreNotReady, StoreReader
from mixture.datasets import load_mixture, load_store


@pytest.fixture(scope="module")
def hf_cache(tmp_path_factory):
    """The Hugging Face cache of these tests (not the user's)."""
    return str(tmp_path_factory.mktemp("hf_cache"))


@pytest.fixture
def store_copy(built_store, tmp_path) -> Path:
    """A copy of the session's store that a test may change."""
    return Path(shutil.copytree(built_store.store, tmp_path / "store"))


@pytest.mark.slow
def test_store_rows_and_tokens_are_the_store_counts(built_store, hf_cache):
    art = built_store.artifact.model_dump(mode="json")
    ds = load_store(str(built_store.store), cache_dir=hf_cache)
    assert ds.num_rows == art["counters"]["records_out"]
    assert sum(ds["n_tokens"]) == art["counters"]["tokens_out"]
    assert set(ds.column_names) >= {"id", "text", "n_tokens", "cluster", "quality", "source"}
    # the rows are the listed shards' rows, in shard_files order
    reader = StoreReader(str(built_store.store))
    want = [i for rel in reader.shard_files() for i in pq.read_table(reader.path(rel), columns=["id"]).column("id").to_pylist()]
    assert ds["id"] == want
    streamed = load_store(str(built_store.store), columns=["id", "n_tokens"], streaming=True)
    rows = list(streamed)
    assert [r["id"] for r in rows] == want and set(rows[0]) == {"id", "n_tokens"}


@pytest.mark.slow
def test_cells_by_name_or_pair_match_their_ledgers(built_store, hf_cache):
    reader = StoreReader(str(built_store.store))
    ledgers = {(lg.cluster, lg.quality): lg for lg in reader.ledger_models().values()}
    (a, la), (b, lb) = sorted(ledgers.items(), key=lambda kv: -kv[1].total_num_rows)[:2]
    name = la.cell
    one = load_store(str(built_store.store), cells=name, columns=["n_tokens", "cluster", "quality"], cache_dir=hf_cache)
    assert one.num_rows == la.total_num_rows and sum(one["n_tokens"]) == la.total_tokens
    assert set(zip(one["cluster"], one["quality"], strict=True)) == {a}
    two = load_store(str(built_store.store), cells=[name, b], columns=["n_tokens"], cache_dir=hf_cache)
    assert two.num_rows == la.total_num_rows + lb.total_num_rows
    assert sum(two["n_tokens"]) == la.total_tokens + lb.total_tokens
    k = built_store.artifact.partition.k
    for bad in ("c99q9", (k, 0), (0, 9), "cell-3"):
        with pytest.raises(ValueError, match="cell"):
            load_store(str(built_store.store), cells=bad)
    with pytest.raises(ValueError, match="no column 'tokens'"):
        load_store(str(built_store.store), columns=["id", "tokens"])
    empty = [c for c in built_store.artifact.empty_cells]
    if empty:  # a cell the store could have but holds nothing: no rows, the same columns
        e = load_store(str(built_store.store), cells=empty[0], columns=["id", "n_tokens"])
        assert e.num_rows == 0 and e.column_names == ["id", "n_tokens"]


@pytest.mark.slow
def test_unlisted_parquet_is_not_loaded(store_copy, built_store, hf_cache):
    art = built_store.artifact.model_dump(mode="json")
    cell_dir = next(store_copy.glob("cluster=*/quality=*"))
    shard = next(cell_dir.glob("*.parquet"))
    table = pq.read_table(shard)
    pq.write_table(table, cell_dir / "999_part-99999.parquet")  # a failed task's partial output: no ledger lists it
    pq.write_table(table, store_copy / "_samples" / "extra.parquet")
    ds = load_store(str(store_copy), columns=["id", "n_tokens"], cache_dir=hf_cache)
    assert ds.num_rows == art["counters"]["records_out"]
    assert sum(ds["n_tokens"]) == art["counters"]["tokens_out"]


def test_a_store_still_building_is_refused(store_copy):
    (store_copy / "store.json").unlink()
    with pytest.raises(StoreNotReady, match="still building"):
        load_store(str(store_copy))


@pytest.mark.slow
def test_store_at_an_fsspec_uri(built_store):
    import fsspec

    fsspec.filesystem("memory").put(str(built_store.store), "/hf-out-test/store", recursive=True)
    ds = load_store("memory://hf-out-test/store", columns=["id", "n_tokens"], streaming=True)
    assert sum(r["n_tokens"] for r in ds) == built_store.artifact.counters.tokens_out


@pytest.fixture(scope="module")
def mixture_folder(built_store, tmp_path_factory) -> Path:
    """The session store planned with the demo spec (at the test scale) and materialized."""
    from mixture.pipelines.materialize.run import materialize
    from mixture.planner.run import plan_from_spec
    from tests.conftest import TEST_SCALE

    _, plan = plan_from_spec(str(built_store.spec_path), scale=TEST_SCALE)
    out = tmp_path_factory.mktemp("mix") / "mixture"
    materialize(plan, out, shard_bytes=64 * 1024)
    return out


@pytest.mark.slow
def test_mixture_rows_and_tokens_are_the_manifests_in_training_order(mixture_folder, hf_cache):
    manifest = json.loads((mixture_folder / "manifest.json").read_text())
    ds = load_mixture(str(mixture_folder), cache_dir=hf_cache)
    phases = manifest["phases"]
    assert len(phases) == 2 and all(len(p["shards"]) > 1 for p in phases)
    assert ds.num_rows == sum(p["docs"] for p in phases)
    assert sum(ds["n_tokens"]) == sum(p["tokens"] for p in phases)
    order = pa.concat_tables([pq.read_table(mixture_folder / f"phase={p['name']}" / s["path"], columns=["id", "pass"])
                              for p in phases for s in p["shards"]])
    assert ds["id"] == order.column("id").to_pylist() and ds["pass"] == order.column("pass").to_pylist()
    last = phases[-1]
    one = load_mixture(str(mixture_folder), phase=last["name"], columns=["n_tokens", "cell"], streaming=True)
    rows = list(one)
    assert len(rows) == last["docs"] and sum(r["n_tokens"] for r in rows) == last["tokens"]
    with pytest.raises(ValueError, match="no phase 'nope'"):
        load_mixture(str(mixture_folder), phase="nope")


def test_mixture_without_manifest_or_shard_is_refused(mixture_folder, tmp_path):
    copy = Path(shutil.copytree(mixture_folder, tmp_path / "mix"))
    next(copy.glob("phase=*/part-*.parquet")).unlink()
    with pytest.raises(FileNotFoundError, match="missing"):
        load_mixture(str(copy))
    (copy / "manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        load_mixture(str(copy))


@pytest.mark.slow
def test_mixture_at_an_fsspec_uri(mixture_folder):
    import fsspec

    fsspec.filesystem("memory").put(str(mixture_folder), "/hf-out-test/mixture", recursive=True)
    manifest = json.loads((mixture_folder / "manifest.json").read_text())
    ds = load_mixture("memory://hf-out-test/mixture", columns=["n_tokens"], streaming=True)
    assert sum(r["n_tokens"] for r in ds) == sum(p["tokens"] for p in manifest["phases"])
