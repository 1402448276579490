"""The explorer reads a store only through the accounting layer: the reads it uses, checked on the synthetic
stores against an independent pyarrow/json reading of the files, and a pin that app/ opens no store file."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from mixture import accounting
from mixture.accounting import StoreReader
from mixture.store.schema import DROP_COUNTER

APP_DIR = Path(__file__).resolve().parents[2] / "app"


def _docs(store: Path) -> pd.DataFrame:
    """Every ledger-listed document, read with pyarrow in ledger order, with the index of its shard (`_shard`)."""
    frames = []
    for ledger_path in sorted(store.glob("cluster=*/quality=*/_ledger.json")):
        for shard in json.loads(ledger_path.read_text())["shards"]:
            frames.append(pq.read_table(ledger_path.parent / shard["path"]).to_pandas().assign(_shard=len(frames)))
    return pd.concat(frames, ignore_index=True)


def test_app_reads_no_store_file_itself() -> None:
    """No module of app/ opens Parquet, npz or store paths: every read goes through mixture.accounting."""
    forbidden = re.compile(r"pyarrow\.parquet|import pyarrow|\.glob\(|np\.load|fs\.open|\.fs\.|read_parquet|"
                           r"cat_file|import duckdb|\.connect\(|read_json")
    sources = sorted(APP_DIR.rglob("*.py"))
    assert len(sources) > 10
    found = [f"{p.relative_to(APP_DIR)}:{i}: {line.strip()}" for p in sources
             for i, line in enumerate(p.read_text().splitlines(), 1) if forbidden.search(line)]
    assert found == []


def test_samples_equal_the_files(store: Path) -> None:
    reader = StoreReader(str(store))
    for kind in ("uniform", "exemplars"):
        got = accounting.samples(reader, kind)
        raw = pq.read_table(store / f"_samples/{kind}.parquet").to_pandas()
        assert len(got) == len(raw) and set(got.id) == set(raw.id)
        assert list(zip(got.cluster, got.quality, got["rank"], strict=True)) == sorted(
            zip(raw.cluster.astype(int), raw.quality.astype(int), raw["rank"], strict=True))
        assert (got.cluster.dtype, got.quality.dtype) == (np.int64, np.int64)


def test_samples_of_a_store_without_them(tmp_path: Path, store: Path) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    shutil.rmtree(copy / "_samples")
    reader = StoreReader(str(copy))
    assert accounting.samples(reader).empty and "rank" in accounting.samples(reader).columns
    assert accounting.sample_vectors(reader) is None


def test_side_files_equal_the_files_and_counters(store: Path, artifact: dict) -> None:
    reader = StoreReader(str(store))
    dropped = accounting.dropped(reader)
    expected = pd.concat([pq.read_table(p).to_pandas() for p in sorted(store.glob("_dropped/*/*.parquet"))],
                         ignore_index=True)
    pd.testing.assert_frame_equal(dropped.drop(columns="file"), expected)
    assert set(dropped.file) == {"part-00000.parquet"}
    assert dropped.reason.value_counts().to_dict() == {
        reason: artifact["counters"][counter] for reason, counter in DROP_COUNTER.items()}
    quarantine = accounting.quarantine(reader)
    pd.testing.assert_frame_equal(quarantine, pq.read_table(store / "_quarantine/part-00000.parquet").to_pandas())
    assert len(quarantine) == artifact["counters"]["bad_input"]


def test_side_files_skip_a_file_still_being_written(tmp_path: Path, store: Path) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    (copy / "_dropped/filtered/part-00001.parquet").write_bytes(b"PAR1 half written")
    (copy / "_quarantine/part-00001.parquet").write_bytes(b"")
    reader = StoreReader(str(copy))
    assert len(accounting.dropped(reader)) == 14 and len(accounting.quarantine(reader)) == 2
    assert accounting.side_counts(reader)["filtered"] == 4


def test_side_files_of_a_store_without_them(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    reader = StoreReader(str(tmp_path / "store"))
    assert list(accounting.dropped(reader).columns) == ["id", "source", "origin", "reason", "detail", "n_chars",
                                                        "text_head", "file"]
    assert accounting.quarantine(reader).empty


def test_model_artifacts(store: Path, store_b: Path) -> None:
    centroids = accounting.centroids(StoreReader(str(store)))
    with np.load(store / "_model/centroids.npz") as raw:
        assert np.array_equal(centroids.centroids, raw["centroids"]) and np.array_equal(centroids.lookup, raw["lookup"])
    assert accounting.centroids(StoreReader(str(store_b))) is None
    assert accounting.sample_vectors(StoreReader(str(store))) is None  # centroids but no embedder


def test_published_cell_table_equals_cell_table(store: Path, artifact: dict) -> None:
    reader = StoreReader(str(store))
    published = accounting.published_cell_table(reader)
    pd.testing.assert_frame_equal(published, accounting.cell_table(reader))
    assert published.tokens.sum() == artifact["counters"]["tokens_out"]


def test_search_documents_equals_a_pyarrow_filter(store: Path) -> None:
    reader = StoreReader(str(store))
    docs = _docs(store)
    calls: list[tuple[int, int]] = []
    hits = accounting.search_documents(reader, text="VOTE Minutes", progress=lambda i, n: calls.append((i, n)),
                                       files_per_query=3)
    expected = docs[docs.text.str.lower().str.contains("vote minutes", regex=False)].reset_index(drop=True)
    assert list(hits.id) == list(expected.id) and len(hits) > 0
    assert calls[-1] == (25, 25) and [i for i, _ in calls] == [3, 6, 9, 12, 15, 18, 21, 24, 25]

    faceted = accounting.search_documents(reader, text="the", sources=["web-crawl"], content_types=["code", "math"],
                                          cells=[(1, 2), (3, 0)])
    mask = (docs.text.str.contains("the", regex=False) & (docs.source == "web-crawl")
            & docs.content_type.isin(["code", "math"]) & docs.set_index(["cluster", "quality"]).index.isin(
                [(1, 2), (3, 0)]))
    assert list(faceted.id) == list(docs[mask].id)
    # this store was written without `code_language` (added in 0.2.0): it reads as null
    assert [c for c in faceted.columns if c != "code_language"] == [c for c in docs.columns if c != "_shard"]
    assert "code_language" not in docs and faceted.code_language.isna().all()


def test_search_documents_stops_at_the_limit(store: Path) -> None:
    reader = StoreReader(str(store))
    docs = _docs(store)
    calls: list[tuple[int, int]] = []
    hits = accounting.search_documents(reader, text="the", limit=5, progress=lambda i, n: calls.append((i, n)),
                                       files_per_query=1)
    matching = docs[docs.text.str.contains("the", regex=False)]
    assert list(hits.id) == list(matching.id[:5])
    shards_read = int(matching._shard.iloc[4]) + 1  # the shard of the fifth hit is the last one read
    assert calls == [(i, 25) for i in range(1, shards_read + 1)] and shards_read < 25
    one = accounting.search_documents(reader, doc_id=docs.id.iloc[-1], limit=1)
    assert list(one.id) == [docs.id.iloc[-1]]
    assert accounting.search_documents(reader, text="no such words anywhere").empty


def test_search_documents_on_a_building_store(building_store: Path) -> None:
    hits = accounting.search_documents(StoreReader(str(building_store)), text="the", limit=10_000)
    assert len(hits) == len(_docs(building_store)[lambda d: d.text.str.contains("the", regex=False)]) > 0


def test_build_progress_of_a_building_store(building_store: Path) -> None:
    reader = StoreReader(str(building_store))
    assert accounting.store_status(reader) == ("building", "")
    stages = accounting.stages(reader).set_index("stage")
    assert stages.loc["read", "completed"] == 2 and stages.loc["write", "completed"] == 0
    assert accounting.lock_info(reader) is None
    ledgers = [json.loads(p.read_text()) for p in building_store.glob("cluster=*/quality=*/_ledger.json")]
    cells = accounting.cell_progress(reader)
    assert len(cells) == len(ledgers) and cells.files.sum() == cells.listed.sum()
    assert cells.rows.sum() == sum(led["total_num_rows"] for led in ledgers)
    assert cells.tokens.sum() == sum(led["total_tokens"] for led in ledgers)
    assert accounting.side_counts(reader) == {"filtered": 4, "exact_duplicate": 6, "fuzzy_duplicate": 3,
                                              "contaminated": 1, "bad_input": 2}


def test_build_progress_counts_an_unlisted_file_from_its_column(tmp_path: Path, building_store: Path) -> None:
    copy = tmp_path / "store"
    shutil.copytree(building_store, copy)
    part = copy / "cluster=00/quality=0/part-00000.parquet"
    table = pq.read_table(part)
    pq.write_table(table, part.with_name("part-00009.parquet"))  # written, not yet in the ledger
    (part.with_name("part-00010.parquet")).write_bytes(b"PAR1")  # still being written
    (copy / "_build/LOCK").write_text(json.dumps({"host": "here", "pid": 1}))
    reader = StoreReader(str(copy))
    row = accounting.cell_progress(reader).set_index(["cluster", "quality"]).loc[(0, 0)]
    assert (row.files, row.listed, row.unreadable) == (3, 1, 1)
    assert row.rows == 2 * table.num_rows and row.tokens == 2 * sum(table["n_tokens"].to_pylist())
    assert accounting.lock_info(reader) == {"host": "here", "pid": 1}
    assert accounting.stages(reader).set_index("stage").loc["write", "status"] == "running"


def test_store_status(store: Path, tmp_path: Path) -> None:
    state, stamp = accounting.store_status(StoreReader(str(store)))
    assert state == "complete" and stamp.startswith(f"{(store / 'store.json').stat().st_size}:")
    assert accounting.store_status(StoreReader(str(tmp_path / "nothing"))) == ("missing", "")
