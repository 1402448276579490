"""The explorer's reads (samples, side files, model, search, build progress) on a store built by the real
pipeline (`built_store` from tests/conftest.py), against the files and store.json."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from mixture import accounting
from mixture.accounting import StoreReader
from mixture.store.schema import DROP_COUNTER

pytestmark = pytest.mark.slow


def test_samples_and_side_files_on_built_store(built_store) -> None:
    reader = StoreReader(str(built_store.store))
    art = built_store.artifact.model_dump(mode="json")
    for kind in ("uniform", "exemplars"):
        got = accounting.samples(reader, kind)
        raw = pq.read_table(built_store.store / art["samples"][kind]).to_pandas()
        assert len(got) == len(raw) > 0 and sorted(got.id) == sorted(raw.id)
        assert got[["cluster", "quality", "rank"]].equals(
            got[["cluster", "quality", "rank"]].sort_values(["cluster", "quality", "rank"]))
    counters = art["counters"]
    dropped = accounting.dropped(reader)
    assert dropped.reason.value_counts().to_dict() == {
        reason: counters[c] for reason, c in DROP_COUNTER.items() if counters[c]}
    assert len(accounting.quarantine(reader)) == counters["bad_input"]


def test_model_artifacts_on_built_store(built_store) -> None:
    reader = StoreReader(str(built_store.store))
    centroids = accounting.centroids(reader)
    k = built_store.artifact.partition.k
    assert centroids.centroids.shape[0] == k and len(centroids.lookup) == len(centroids.fine_centroids)
    vectors = accounting.sample_vectors(reader)
    uniform = accounting.samples(reader)
    assert vectors is not None and vectors.shape == (len(uniform), centroids.dim)
    # the frozen embedder places each sampled document in the cluster the build assigned it to
    fine = np.argmax(vectors @ centroids.fine_centroids.T, axis=1)
    assert np.array_equal(centroids.lookup[fine], uniform.cluster.to_numpy())


def test_search_documents_on_built_store(built_store) -> None:
    reader = StoreReader(str(built_store.store))
    doc = accounting.samples(reader).iloc[-1]
    found = accounting.search_documents(reader, doc_id=doc.id, limit=1)
    assert list(found.id) == [doc.id] and (found.cluster.iloc[0], found.quality.iloc[0]) == (doc.cluster, doc.quality)
    word = doc.text.split()[0]
    hits = accounting.search_documents(reader, text=word.upper(), sources=[doc.source], limit=10_000)
    con = accounting.connect(reader)
    expected = con.execute("SELECT count(*) FROM documents WHERE contains(lower(text), lower(?)) AND source = ?",
                           [word, doc.source]).fetchall()[0][0]
    assert len(hits) == expected > 0


def test_build_progress_of_built_store(built_store) -> None:
    reader = StoreReader(str(built_store.store))
    art = built_store.artifact.model_dump(mode="json")
    assert accounting.store_status(reader)[0] == "complete"
    assert accounting.lock_info(reader) is None
    stages = accounting.stages(reader)
    assert len(stages) > 0 and set(stages.status) == {"done"}
    cells = accounting.cell_progress(reader)
    assert int(cells.rows.sum()) == art["counters"]["records_out"]
    assert int(cells.tokens.sum()) == art["counters"]["tokens_out"]
    assert int(cells.unreadable.sum()) == 0 and (cells.files == cells.listed).all()
    counts = accounting.side_counts(reader)
    assert counts == {**{r: art["counters"][c] for r, c in DROP_COUNTER.items()},
                      "bad_input": art["counters"]["bad_input"]}
    pd.testing.assert_frame_equal(accounting.published_cell_table(reader), accounting.cell_table(reader))
