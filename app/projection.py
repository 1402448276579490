"""2-D coordinates of the clusters: PCA of `_model/centroids.npz`, else of TF-IDF centroids of sampled text."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.feature_extraction.text import TfidfVectorizer

from mixture.store.model_files import Centroids


def cluster_centroids(centroids: Centroids | None, cluster_ids: list[int]) -> np.ndarray | None:
    """The frozen centroids of the clusters, row i of `cluster_ids[i]`; None without them (or for a cluster they
    do not hold)."""
    if centroids is None or not cluster_ids or max(cluster_ids) >= len(centroids.centroids) or min(cluster_ids) < 0:
        return None
    return centroids.centroids[cluster_ids].astype(np.float64)


def _pca2(x: np.ndarray, seed: int = 0) -> np.ndarray:
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    if x.shape[0] < 3 or x.shape[1] < 2:
        return np.column_stack([np.arange(x.shape[0], dtype=float), np.zeros(x.shape[0])])
    return PCA(n_components=2, random_state=seed).fit_transform(x)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def project(cluster_ids: list[int], centroids: Centroids | None, samples: pd.DataFrame,
            seed: int = 0, doc_vectors: np.ndarray | None = None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(cluster points [id, x, y], sample document points [id, cluster, x, y], method description).

    `doc_vectors`: the sampled documents embedded by the store's frozen embedder (rows aligned with `samples`);
    they are placed through the same projection as the centroids."""
    k = len(cluster_ids)
    cen = cluster_centroids(centroids, cluster_ids)
    docs = pd.DataFrame(columns=["id", "cluster", "x", "y"])
    if cen is not None and doc_vectors is not None and len(doc_vectors) == len(samples) and k >= 3:
        pca = PCA(n_components=2, random_state=seed).fit(_unit(cen))
        xy = pca.transform(_unit(cen))
        dxy = pca.transform(_unit(np.asarray(doc_vectors, dtype=np.float64)))
        docs = pd.DataFrame({"id": samples.id.values, "cluster": samples.cluster.values, "x": dxy[:, 0], "y": dxy[:, 1]})
        method = "PCA of the frozen cluster centroids; sampled documents embedded by the frozen embedder (_model/)"
    elif cen is not None:
        xy = _pca2(cen, seed)
        method = "PCA of the frozen cluster centroids (_model/centroids.npz)"
    else:
        texts = samples.groupby("cluster").text.apply(lambda t: " ".join(t)).reindex(cluster_ids, fill_value="")
        vec = TfidfVectorizer(max_features=4096, sublinear_tf=True)
        try:
            mat = vec.fit_transform(list(texts) + list(samples.text))
        except ValueError:  # empty vocabulary
            mat = None
        if mat is None:
            xy = np.column_stack([np.arange(k, dtype=float), np.zeros(k)])
        else:
            dense = mat.toarray()
            pca = PCA(n_components=2, random_state=seed) if min(dense.shape) >= 2 else None
            if pca is None:
                xy = np.column_stack([np.arange(k, dtype=float), np.zeros(k)])
            else:
                norm = dense / np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-12)
                allxy = pca.fit_transform(norm)
                xy = allxy[:k]
                docs = pd.DataFrame({"id": samples.id.values, "cluster": samples.cluster.values,
                                     "x": allxy[k:, 0], "y": allxy[k:, 1]})
        method = "PCA of TF-IDF centroids of the sampled documents (no _model/centroids.npz)"
    points = pd.DataFrame({"id": cluster_ids, "x": xy[:, 0], "y": xy[:, 1]})
    return points, docs, method
