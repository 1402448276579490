"""Fit every model on the build's sample and freeze it in `_model/`; load it back for assignment."""

from __future__ import annotations

from dataclasses import dataclass

import fsspec
import numpy as np

from mixture.fit.calibration import fit_calibration, fit_group_calibration, raw_cutoffs
from mixture.fit.cluster_labels import EXEMPLARS, HEAD_CHARS, label_counted_clusters
from mixture.fit.clusters import ClusterModel, fit_clusters, token_estimate
from mixture.fit.embed import LexicalEmbedder, SentenceEmbedder, embedder_of, min_df_for
from mixture.fit.one_thread import one_thread
from mixture.fit.sample_files import read_sample, read_texts
from mixture.store.formats import ClusterLabel, FitInfo
from mixture.store.io import write_parquet_atomic
from mixture.store.model_files import (
    Centroids,
    GroupCalibration,
    ModelFiles,
    TypeCalibration,
    read_model_files,
    write_model_files,
)
from mixture.text.content_type import KINDS


@dataclass
class FrozenModel:
    """The fit of `_model/`: the embedder and clusters its files hold, and its calibration, labels and settings."""

    embedder: LexicalEmbedder | SentenceEmbedder
    clusters: ClusterModel
    calibration: dict[str, TypeCalibration]
    group_calibration: dict[str, GroupCalibration]  # {"prose/fr": ...}; empty: per content type only
    labels: list[ClusterLabel]
    fit: FitInfo

    @classmethod
    def of(cls, files: ModelFiles, embedder: LexicalEmbedder | SentenceEmbedder | None = None) -> FrozenModel:
        """The model `files` hold (`embedder`: the one `files.embedder` was written from)."""
        c = files.centroids
        return cls(embedder or embedder_of(files.embedder), ClusterModel(c.fine_centroids, c.lookup, c.centroids),
                   files.calibration, files.groups, files.clusters, files.fit)


def _write_sample_assignments(folder: str, sample: dict[str, list], names: list[str], assigned: tuple) -> None:
    """The sample documents' (cluster, fine cluster, distance) and, when the sample stage counted them, tokens,
    one file per sample file (the name of the prepared file, and so of the assign task, the rows come from)."""
    import pyarrow as pa

    cluster, fine, dist = assigned
    part = np.asarray(sample["part"])
    for i, name in enumerate(names):
        rows = np.flatnonzero(part == i)
        columns = {"id": pa.array([sample["id"][r] for r in rows.tolist()], pa.string()),
                   "cluster": cluster[rows], "fine_cluster": fine[rows], "cluster_distance": dist[rows]}
        if "n_tokens" in sample:
            columns["n_tokens"] = pa.array([sample["n_tokens"][r] for r in rows.tolist()], pa.int64())
        write_parquet_atomic(f"{folder.rstrip('/')}/{name}", pa.table(columns), compression=None)


def read_sample_assignments(path: str | None) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """({id: row}, cluster, fine cluster, distance, tokens (-1: not counted)) of one file
    `_write_sample_assignments` wrote; empty when there is none (or no path)."""
    import pyarrow.parquet as pq

    fs, root = fsspec.core.url_to_fs(path) if path else (None, None)
    if fs is None or not fs.exists(root):
        return {}, np.zeros(0, np.int16), np.zeros(0, np.int32), np.zeros(0, np.float32), np.zeros(0, np.int64)
    with fs.open(root, "rb") as f:
        table = pq.read_table(f)
    ids = table.column("id").to_pylist()
    tokens = (table.column("n_tokens").to_numpy() if "n_tokens" in table.column_names
              else np.full(len(ids), -1, dtype=np.int64))
    return ({doc_id: i for i, doc_id in enumerate(ids)},
            *(table.column(c).to_numpy() for c in ("cluster", "fine_cluster", "cluster_distance")), tokens)


def fit_and_save(sample_folder: str, model_dir: str, params: dict, assignments_folder: str | None = None) -> FrozenModel:
    """`_fit_and_save` on one BLAS/OpenMP thread: the model's bytes do not depend on the task's `cpus_per_task`."""
    with one_thread():
        return _fit_and_save(sample_folder, model_dir, params, assignments_folder)


def _fit_and_save(sample_folder: str, model_dir: str, params: dict, assignments_folder: str | None) -> FrozenModel:
    """params: k, fine_k, min_share, max_share (token shares; max_share 1 when absent), embedding_dim, seed,
    edges. Clusters are fitted on the sample documents weighted by their tokens: the sample's `n_tokens` (counted
    by the sample stage), or, for a sample without them, their UTF-8 bytes (`token_estimate`). With `assignments_folder`, the lexical embedder's
    sample documents' clusters are written there (`ClusterModel.assign` of the embeddings the fit computed, bit
    for bit what `assign` would compute from their text), for `assign` to reuse."""
    sentence = params.get("embedder") == "sentence"
    read = read_sample(sample_folder, text=sentence)  # the text only for a sentence model (or a hand-made sample)
    sample, names, n_docs = read.rows, read.names, len(read)
    if n_docs < params["k"]:
        raise ValueError(
            f"the fit sample has {n_docs} documents, fewer than k={params['k']} clusters; "
            "lower partition.clusters.k or add data"
        )
    seed = params["seed"]
    # the sample tasks' term counts, merged: for the embedder and the cluster labels; no text is tokenised here
    counted = read.term_counts(min_df_for(n_docs))
    if sentence:
        embedder = SentenceEmbedder(params["sentence_model"])
        x = embedder.transform(sample["text"])
    else:
        embedder, x = LexicalEmbedder.fit_counts(counted, params["embedding_dim"], seed)
    fine_k = min(params["fine_k"], max(params["k"], n_docs // 5))
    counted_tokens = "n_tokens" in sample
    tokens = np.asarray(sample["n_tokens"], dtype=np.float64) if counted_tokens else token_estimate(sample["text"])
    max_share = params.get("max_share", 1.0)
    model, _ = fit_clusters(x, params["k"], fine_k, params["min_share"], seed, tokens, max_share)
    assigned = model.assign(x)
    labels = assigned[0].astype(np.int64)  # the clusters `assign` gives the sample documents
    info = _labels(sample_folder, read, counted, labels, assigned[2], tokens, params["k"])
    if assignments_folder and isinstance(embedder, LexicalEmbedder):
        _write_sample_assignments(assignments_folder, sample, names, assigned)
    raw = np.asarray(sample["raw_score"])
    types = np.asarray(sample["content_type"])
    calibration = fit_calibration({ct: raw[types == ct] for ct in KINDS}, KINDS)
    for cal in calibration.values():
        cal["raw_cutoffs"] = raw_cutoffs(cal["knots"], params["edges"])
    groups = {}
    if params.get("per_language"):
        groups = fit_group_calibration(raw, types, np.asarray(sample["language"]), params["group_min_docs"])
        for g in groups.values():
            g["raw_cutoffs"] = raw_cutoffs(g.get("knots") or calibration[g["content_type"]]["knots"], params["edges"])
    shares = np.bincount(labels, minlength=params["k"]) / len(labels)
    token_shares = np.bincount(labels, weights=tokens, minlength=params["k"]) / max(tokens.sum(), 1)
    for c, row in enumerate(info):
        row["sample_share"] = float(shares[c])
        row["sample_token_share"] = round(float(token_shares[c]), 6)
    fit = FitInfo(
        sample_docs=n_docs,
        sample_by_source={str(s): int(n) for s, n in zip(*np.unique(sample["source"], return_counts=True), strict=True)},
        fine_k=int(len(model.fine_centroids)),
        k=params["k"],
        embedder=params.get("embedder", "lexical"),
        embedding_dim=int(x.shape[1]),
        vocabulary=len(getattr(embedder, "vocabulary", [])),
        seed=seed,
        token_estimate="tokenizer" if counted_tokens else "utf8_bytes",
        max_share=max_share,
    )
    files = ModelFiles(
        embedder=embedder.to_file(),
        centroids=Centroids(model.fine_centroids, model.lookup, model.centroids),
        calibration={ct: TypeCalibration(**cal) for ct, cal in calibration.items()},
        groups={name: GroupCalibration(**g) for name, g in groups.items()},
        clusters=[ClusterLabel(**row) for row in info],
        fit=fit,
    )
    write_model_files(model_dir, files)
    return FrozenModel.of(files, embedder)


def _labels(sample_folder: str, read, counted, labels: np.ndarray, distance: np.ndarray, tokens: np.ndarray,
            k: int) -> list[dict]:
    """The clusters' labels (mixture.fit.cluster_labels), their exemplars' text read from the sample."""
    order = np.lexsort((distance, labels))
    starts = np.searchsorted(labels[order], np.arange(k))
    ends = np.searchsorted(labels[order], np.arange(k), side="right")
    wanted = np.concatenate([order[a:min(b, a + EXEMPLARS)] for a, b in zip(starts, ends, strict=True)])
    if "text" in read.rows:
        texts = {int(r): read.rows["text"][r][:HEAD_CHARS] for r in wanted.tolist()}
    else:
        texts = read_texts(sample_folder, read, wanted, HEAD_CHARS)
    return label_counted_clusters(counted, labels, k, texts, distance, read.rows.get("language"), tokens)


def load_model(model_dir: str) -> FrozenModel:
    """The frozen model of `model_dir` (any fsspec URI), its files read and checked (`read_model_files`)."""
    return FrozenModel.of(read_model_files(model_dir))
