"""Spherical k-means with a fine K on a sample weighted by tokens, coarsened to k clusters that each hold between a
minimum and a maximum share of the tokens."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.preprocessing import normalize

from mixture.fit.embed import TermCounts


class ClusteringError(ValueError):
    pass


SEED_POINTS_PER_CLUSTER = 20  # k-means++ seeds from at most this many points per cluster (MiniBatchKMeans' init_size idea)
NEAREST_ROWS = 8192  # nearest-centroid search in blocks of this many rows: bounds the (rows, centroids) matrix
MIN_MARGIN, MAX_MARGIN = 1.25, 0.9  # the coarsening aims this far inside the shares when it can (a sample is not the store)


def token_estimate(texts: list[str]) -> np.ndarray:
    """Tokens of each text estimated by its UTF-8 bytes, for a sample whose tokens were not counted (the sample
    stage counts them). Byte-level BPE spends about as many tokens per byte in many scripts (cl100k_base on
    Debian's man pages and fortunes in ten languages: 0.25 to 0.34 tokens per byte, against 0.25 to 0.65 per
    character), but not in all (0.58 for the demo's stop-word lists of Georgian, Korean, Marathi)."""
    return np.array([len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass")) for t in texts], dtype=np.float64)


def nearest(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of each row's most similar centroid (the largest dot product, the first on ties): the rule of
    `ClusterModel.assign`."""
    out = np.empty(len(x), dtype=np.int32)
    for i in range(0, len(x), NEAREST_ROWS):
        out[i : i + NEAREST_ROWS] = np.argmax(x[i : i + NEAREST_ROWS] @ centroids.T, axis=1)
    return out


def _seed_rows(n: int, m: int, seed: int, weights: np.ndarray | None) -> np.ndarray:
    """m of n rows, sorted: uniform, or with weights a weighted draw without replacement (Efraimidis-Spirakis keys
    log(u) / w, the m largest), so the k-means++ seeding sees the points in proportion to their weight."""
    rng = np.random.default_rng(seed)
    if weights is None:
        return np.sort(rng.choice(n, m, replace=False))
    with np.errstate(divide="ignore"):
        keys = np.log(rng.random(n)) / weights
    return np.sort(np.argsort(-keys, kind="stable")[:m])


def spherical_kmeans(x: np.ndarray, k: int, seed: int, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(unit-norm centroids, labels) of k-means on unit vectors (cosine geometry), each point counted with its
    weight: one k-means++ seeding (sklearn's n_init="auto"), on a seeded subsample of SEED_POINTS_PER_CLUSTER * k
    points when there are more (drawn in proportion to the weights), then Lloyd iterations on every point. Seeding
    is O(points × k); on the full sample it took most of the fit's k-means time. Labels are the nearest normalised
    centroid, the rule `ClusterModel.assign` applies later (k-means' own labels minimise the Euclidean distance to
    centroids that are not unit vectors, and differ for some points)."""
    init: str | np.ndarray = "k-means++"
    if len(x) > SEED_POINTS_PER_CLUSTER * k:
        sub = _seed_rows(len(x), SEED_POINTS_PER_CLUSTER * k, seed, weights)
        init, _ = kmeans_plusplus(x[sub], k, random_state=seed)
    km = KMeans(n_clusters=k, init=init, n_init=1, random_state=seed, max_iter=200)
    km.fit(x, sample_weight=weights)
    centroids = normalize(km.cluster_centers_).astype(np.float32)
    return centroids, nearest(x, centroids)


def split_heavy(x: np.ndarray, weights: np.ndarray, centroids: np.ndarray, labels: np.ndarray, limit: float,
                seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Fine clusters heavier than `limit` (in weight), split in two by spherical 2-means of their points until none
    is, or what is left cannot be split (one document, or identical vectors): a coarse cluster can then stay under
    its maximum share. Returns the new centroids (a split one's place taken by one half, the other half appended)
    and labels (nearest centroid)."""
    stuck: set[int] = set()
    for _ in range(len(x)):
        mass = np.bincount(labels, weights=weights, minlength=len(centroids))
        heavy = [c for c in np.argsort(-mass, kind="stable") if mass[c] > limit and c not in stuck]
        if not heavy:
            break
        c = int(heavy[0])
        rows = np.flatnonzero(labels == c)
        two = None
        if len(np.unique(x[rows], axis=0)) >= 2:
            two, _ = spherical_kmeans(x[rows], 2, seed + c, weights[rows])
        if two is None or np.allclose(two[0], two[1]):
            stuck.add(c)
            continue
        trial = np.concatenate([centroids[:c], two[:1], centroids[c + 1 :], two[1:]])
        new_labels = nearest(x, trial)
        if np.bincount(new_labels, weights=weights, minlength=len(trial))[[c, -1]].min() <= 0:
            stuck.add(c)  # one side took nothing: the cluster's points sit on one direction
            continue
        centroids, labels = trial, new_labels
    return centroids, labels


def _group_centres(fine_centroids: np.ndarray, mass: np.ndarray, lookup: np.ndarray, k: int) -> np.ndarray:
    """Unit-norm centre of each group: its fine centroids averaged by mass (unweighted when it has none)."""
    w = np.where(mass > 0, mass, 0.0)
    member = sp.csr_matrix((np.ones(len(lookup)), (lookup, np.arange(len(lookup)))), shape=(k, len(lookup)))
    centres = member @ (fine_centroids * w[:, None])
    empty = np.asarray(member @ w).ravel() <= 0
    if empty.any():
        centres[empty] = (member @ fine_centroids)[empty]
    return normalize(centres)


def _fill_short(fine_centroids: np.ndarray, mass: np.ndarray, lookup: np.ndarray, k: int, low: float, high: float,
                what: str) -> np.ndarray:
    """Moves fine clusters into every group below `low` from groups that stay at or above it, the nearest to the
    short group's centre first, keeping the receiver at or under `high` when any move can."""
    for _ in range(len(mass) * k + 1):
        sizes = np.bincount(lookup, weights=mass, minlength=k)
        short = np.flatnonzero(sizes < low)
        if len(short) == 0:
            return lookup
        target = short[np.argmin(sizes[short])]
        centre = fine_centroids[lookup == target].mean(axis=0) if (lookup == target).any() else None
        # donors: fine clusters whose group can give them up and stay above the minimum
        cands = np.flatnonzero((sizes[lookup] - mass >= low) & (lookup != target) & (mass > 0))
        if len(cands) == 0:
            raise ClusteringError(what)
        fits = cands[sizes[target] + mass[cands] <= high]
        cands = fits if len(fits) else cands
        if centre is None:
            pick = cands[np.argmax(mass[cands])]
        else:
            pick = cands[np.argmax(fine_centroids[cands] @ centre)]
        lookup[pick] = target
    raise ClusteringError("coarsening did not converge; lower partition.clusters.min_share")


def _drain_over(fine_centroids: np.ndarray, mass: np.ndarray, lookup: np.ndarray, k: int, low: float,
                high: float) -> np.ndarray:
    """Moves fine clusters out of every group above `high` while one can go: to the group whose centre is nearest
    relative to its own, never taking its group below `low` nor the receiver above `high`. Each move lowers the
    total excess over `high`, so this ends; a group it cannot bring under `high` stays above (the build warns)."""
    for _ in range(len(mass) + 1):
        sizes = np.bincount(lookup, weights=mass, minlength=k)
        over = np.flatnonzero(sizes > high)
        if len(over) == 0:
            break
        centres = _group_centres(fine_centroids, mass, lookup, k)
        moved = False
        for g in over[np.argsort(-sizes[over], kind="stable")]:
            members = np.flatnonzero((lookup == g) & (mass > 0) & (sizes[g] - mass >= low))
            if len(members) == 0:
                continue
            sim = fine_centroids[members] @ centres.T
            gain = sim - sim[:, [g]]
            gain[:, g] = -np.inf
            gain[sizes[None, :] + mass[members, None] > high] = -np.inf
            if not np.isfinite(gain).any():
                continue
            i, j = np.unravel_index(np.argmax(gain), gain.shape)
            lookup[members[i]] = j
            moved = True
            break
        if not moved:
            break
    return lookup


def coarsen(fine_centroids: np.ndarray, fine_sizes: np.ndarray, k: int, min_share: float, seed: int,
            max_share: float = 1.0) -> np.ndarray:
    """Map each fine centroid to one of k groups: weighted spherical k-means of the fine centroids (weight: the
    fine cluster's size), then repaired so that every group holds at least `min_share` of the total size (fine
    clusters move into short groups from groups that can spare them) and, as far as moves can, at most
    `max_share` (fine clusters move out of heavy groups to the nearest group with room)."""
    total = fine_sizes.sum()
    if k == 1:
        return np.zeros(len(fine_sizes), dtype=np.int32)
    _, lookup = spherical_kmeans(fine_centroids, k, seed, weights=np.maximum(fine_sizes, 1e-9))
    lookup = lookup.astype(np.int32)
    low, high = min_share * total, max(max_share, min_share) * total
    what = (f"cannot form {k} clusters of at least {min_share:.2%} of the tokens from {len(fine_sizes)} fine "
            f"clusters; lower partition.clusters.k or min_share, or raise fine_k / sample_docs")
    lookup = _fill_short(fine_centroids, fine_sizes, lookup, k, low, high, what)
    return _drain_over(fine_centroids, fine_sizes, lookup, k, low, high)


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


def fit_clusters(x: np.ndarray, k: int, fine_k: int, min_share: float, seed: int, weights: np.ndarray | None = None,
                 max_share: float = 1.0) -> tuple[ClusterModel, np.ndarray]:
    """Fit on sample vectors, each counted with its weight (its tokens; 1 each when None): fine k-means, fine
    clusters heavier than half of `max_share` split, coarsened to k clusters of `min_share`..`max_share` of the
    weight. Returns the model (clusters numbered by weight, largest first) and the sample's labels (what `assign`
    gives them)."""
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=np.float64)
    fine_k = min(fine_k, len(x))
    if k > fine_k:
        raise ClusteringError(f"only {len(x)} sample documents for k={k} clusters; raise partition.clusters.sample_docs")
    fine_centroids, fine_labels = spherical_kmeans(x, fine_k, seed, w)
    if max_share < 1:
        fine_centroids, fine_labels = split_heavy(x, w, fine_centroids, fine_labels, max_share * w.sum() / 2, seed)
    fine_sizes = np.bincount(fine_labels, weights=w, minlength=len(fine_centroids))
    aim_max = max_share * MAX_MARGIN if max_share < 1 and max_share * MAX_MARGIN * k > 1.05 else max_share
    try:
        lookup = coarsen(fine_centroids, fine_sizes, k, min(0.999 / k, min_share * MIN_MARGIN), seed, aim_max)
    except ClusteringError:
        lookup = coarsen(fine_centroids, fine_sizes, k, min_share, seed, max_share)
    if aim_max < max_share and np.bincount(lookup, weights=fine_sizes, minlength=k).max() > max_share * w.sum():
        lookup = _drain_over(fine_centroids, fine_sizes, lookup, k, min_share * w.sum(), max_share * w.sum())
    sizes = np.bincount(lookup, weights=fine_sizes, minlength=k)
    order = np.argsort(-sizes, kind="stable")
    rename = np.empty(k, dtype=np.int32)
    rename[order] = np.arange(k)
    lookup = rename[lookup]
    centroids = _group_centres(fine_centroids, fine_sizes, lookup, k).astype(np.float32)
    model = ClusterModel(fine_centroids, lookup, centroids)
    return model, lookup[fine_labels]


def label_clusters(texts: list[str], labels: np.ndarray, k: int) -> list[dict]:
    """The clusters' labels (mixture.fit.cluster_labels) from their documents' texts."""
    from mixture.fit.cluster_labels import label_counted_clusters

    return label_counted_clusters(TermCounts.of(texts), labels, k, dict(enumerate(texts)))
