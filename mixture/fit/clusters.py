"""Spherical k-means with a fine K, coarsened to k clusters of at least a minimum share, labelled by c-TF-IDF."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.preprocessing import normalize

from mixture.fit.embed import TermCounts, min_df_for


class ClusteringError(ValueError):
    pass


SEED_POINTS_PER_CLUSTER = 20  # k-means++ seeds from at most this many points per cluster (MiniBatchKMeans' init_size idea)


def spherical_kmeans(x: np.ndarray, k: int, seed: int, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(unit-norm centroids, labels) of k-means on unit vectors (cosine geometry): one k-means++ seeding (sklearn's
    n_init="auto"), on a seeded subsample of SEED_POINTS_PER_CLUSTER * k points when there are more, then Lloyd
    iterations on every point. Seeding is O(points × k); on the full sample it took most of the fit's k-means time."""
    init: str | np.ndarray = "k-means++"
    if weights is None and len(x) > SEED_POINTS_PER_CLUSTER * k:
        rng = np.random.default_rng(seed)
        sub = np.sort(rng.choice(len(x), SEED_POINTS_PER_CLUSTER * k, replace=False))
        init, _ = kmeans_plusplus(x[sub], k, random_state=seed)
    km = KMeans(n_clusters=k, init=init, n_init=1, random_state=seed, max_iter=200)
    labels = km.fit_predict(x, sample_weight=weights)
    return normalize(km.cluster_centers_).astype(np.float32), labels


def coarsen(fine_centroids: np.ndarray, fine_sizes: np.ndarray, k: int, min_share: float, seed: int) -> np.ndarray:
    """Map each fine centroid to one of k groups; every group holds >= min_share of the documents."""
    total = fine_sizes.sum()
    if k == 1:
        return np.zeros(len(fine_sizes), dtype=np.int32)
    _, lookup = spherical_kmeans(fine_centroids, k, seed, weights=np.maximum(fine_sizes, 1e-9))
    lookup = lookup.astype(np.int32)
    need = min_share * total
    for _ in range(len(fine_sizes) * k + 1):
        sizes = np.bincount(lookup, weights=fine_sizes, minlength=k)
        short = np.flatnonzero(sizes < need)
        if len(short) == 0:
            return lookup
        target = short[np.argmin(sizes[short])]
        centre = fine_centroids[lookup == target].mean(axis=0) if (lookup == target).any() else None
        # donors: fine clusters whose group can give them up and stay above the minimum
        can_give = (sizes[lookup] - fine_sizes >= need) & (lookup != target) & (fine_sizes > 0)
        cands = np.flatnonzero(can_give)
        if len(cands) == 0:
            raise ClusteringError(
                f"cannot form {k} clusters of at least {min_share:.2%} of documents from {len(fine_sizes)} fine "
                f"clusters; lower partition.clusters.k or min_share, or raise fine_k / sample_docs"
            )
        if centre is None:
            pick = cands[np.argmax(fine_sizes[cands])]
        else:
            pick = cands[np.argmax(fine_centroids[cands] @ centre)]
        lookup[pick] = target
    raise ClusteringError("coarsening did not converge; lower partition.clusters.min_share")


@dataclass
class ClusterModel:
    fine_centroids: np.ndarray  # (fine_k, dim), unit norm
    lookup: np.ndarray  # (fine_k,) -> cluster id
    centroids: np.ndarray  # (k, dim), unit norm

    def assign(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cluster, fine cluster, cosine distance to the cluster centroid) for unit vectors x."""
        fine = np.argmax(x @ self.fine_centroids.T, axis=1).astype(np.int32)
        cluster = self.lookup[fine].astype(np.int16)
        dist = 1.0 - np.einsum("ij,ij->i", x, self.centroids[cluster])
        return cluster, fine, np.clip(dist, 0.0, 2.0).astype(np.float32)


def fit_clusters(x: np.ndarray, k: int, fine_k: int, min_share: float, seed: int) -> tuple[ClusterModel, np.ndarray]:
    """Fit on sample vectors; returns the model (clusters numbered by size, largest first) and sample labels."""
    fine_k = min(fine_k, len(x))
    if k > fine_k:
        raise ClusteringError(f"only {len(x)} sample documents for k={k} clusters; raise partition.clusters.sample_docs")
    fine_centroids, fine_labels = spherical_kmeans(x, fine_k, seed)
    fine_sizes = np.bincount(fine_labels, minlength=fine_k).astype(np.float64)
    try:
        lookup = coarsen(fine_centroids, fine_sizes, k, min(0.999 / k, min_share * 1.1), seed)
    except ClusteringError:
        lookup = coarsen(fine_centroids, fine_sizes, k, min_share, seed)
    sizes = np.bincount(lookup, weights=fine_sizes, minlength=k)
    order = np.argsort(-sizes, kind="stable")
    rename = np.empty(k, dtype=np.int32)
    rename[order] = np.arange(k)
    lookup = rename[lookup]
    centroids = np.stack(
        [normalize((fine_centroids[lookup == c] * fine_sizes[lookup == c, None]).sum(axis=0, keepdims=True))[0] for c in range(k)]
    ).astype(np.float32)
    model = ClusterModel(fine_centroids, lookup, centroids)
    return model, lookup[fine_labels]


def label_clusters(texts: list[str], labels: np.ndarray, k: int, top_n: int = 8) -> list[dict]:
    """c-TF-IDF top terms per cluster -> distinct human-readable labels, a summary and a label confidence."""
    return label_counted_clusters(TermCounts.of(texts), labels, k, top_n)


def _top(scores: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n highest positive scores, highest first, ties in index order (as a stable sort)."""
    positive = np.flatnonzero(scores > 0)
    return positive[np.argsort(-scores[positive], kind="stable")][:n]


def label_counted_clusters(counted: TermCounts, labels: np.ndarray, k: int, top_n: int = 8) -> list[dict]:
    """`label_clusters` of texts already counted: `counted` is TermCounts.of(texts)."""
    selected = counted.select(max_features=50_000, min_df=min_df_for(counted.n_docs))
    counts, terms = selected.counts, selected.terms
    labels = np.asarray(labels)
    docs = np.flatnonzero((labels >= 0) & (labels < k))
    member = sp.csr_matrix((np.ones(len(docs)), (labels[docs], docs)), shape=(k, counts.shape[0]))
    per_cluster = (member @ counts).toarray()  # (k, terms) float64 sums of each cluster's counts
    words = per_cluster.sum(axis=1, keepdims=True)
    tf = per_cluster / np.maximum(words, 1)
    avg_words = words.mean()
    ctfidf = tf * np.log1p(avg_words / np.maximum(per_cluster.sum(axis=0), 1))
    used: set[str] = set()
    out = []
    binary = counts > 0
    for c in range(k):
        best = _top(ctfidf[c], top_n + 6)
        ranked = [terms[i] for i in best]
        top = ranked[:top_n]
        n_label = 3
        label = ", ".join(t.title() for t in ranked[:n_label]) or f"Cluster {c}"
        while label in used and n_label < len(ranked):
            n_label += 1
            label = ", ".join(t.title() for t in ranked[:n_label])
        if label in used:
            label = f"{label} ({c})"
        used.add(label)
        rows = np.flatnonzero(labels == c)
        idx = best[:3]
        conf = float(np.asarray(binary[rows][:, idx].sum(axis=1)).ravel().astype(bool).mean()) if len(rows) and len(idx) else 0.0
        out.append(
            {
                "id": c,
                "label": label,
                "top_terms": top,
                "summary": " · ".join(top),
                "confidence": round(conf, 4),
                "confidence_tag": "high" if conf >= 0.7 else "medium" if conf >= 0.4 else "low",
            }
        )
    return out
