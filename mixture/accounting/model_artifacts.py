"""The frozen model of a store (`_model/`): centroid arrays, its JSON files, and the samples it embeds."""

from __future__ import annotations

import io

import numpy as np

from mixture.accounting.reader import StoreReader
from mixture.accounting.sample_files import SampleKind, samples
from mixture.store import layout
from mixture.store.formats import load_json

CENTROIDS = f"{layout.MODEL_DIR}/centroids.npz"
EMBEDDER = f"{layout.MODEL_DIR}/embedder.npz"


def centroids(reader: StoreReader) -> dict[str, np.ndarray]:
    """The arrays of `_model/centroids.npz` by name (empty when the store has none)."""
    if not reader.exists(CENTROIDS):
        return {}
    with reader.fs.open(reader.path(CENTROIDS), "rb") as f:
        data = np.load(io.BytesIO(f.read()), allow_pickle=False)
        return {k: np.asarray(data[k]) for k in data.files}


def model_json(reader: StoreReader, name: str) -> dict | None:
    """A parsed `_model/<name>` JSON file (fit.json, clusters.json, calibration.json), None when absent."""
    rel = f"{layout.MODEL_DIR}/{name}"
    if not reader.exists(rel):
        return None
    return load_json(reader.fs.cat_file(reader.path(rel)), f"{reader.uri.rstrip('/')}/{rel}")


def has_embedder(reader: StoreReader) -> bool:
    return reader.exists(EMBEDDER)


def sample_vectors(reader: StoreReader, kind: SampleKind = "uniform") -> np.ndarray | None:
    """The documents of a sample (rows as `samples(reader, kind)`) embedded by the store's frozen embedder; None
    when the store has no embedder or the sample is empty."""
    if not has_embedder(reader):
        return None
    texts = samples(reader, kind)["text"].tolist()
    if not texts:
        return None
    from mixture.fit.model_store import load_model  # the fit stack is heavy: only when a model is there

    return load_model(f"{reader.uri.rstrip('/')}/{layout.MODEL_DIR}").embedder.transform(texts)
