"""The frozen model of a store (`_model/`, read through mixture.store.model_files): its centroids, and the samples
its embedder embeds."""

from __future__ import annotations

import numpy as np

from mixture.accounting.reader import StoreReader
from mixture.accounting.sample_files import SampleKind, samples
from mixture.store import layout
from mixture.store.model_files import CENTROIDS, EMBEDDER, Centroids, read_model_file


def centroids(reader: StoreReader) -> Centroids | None:
    """`_model/centroids.npz`, checked; None when the store has none."""
    if not reader.exists(f"{layout.MODEL_DIR}/{CENTROIDS.name}"):
        return None
    return read_model_file(reader.path(layout.MODEL_DIR), CENTROIDS, fs=reader.fs)


def sample_vectors(reader: StoreReader, kind: SampleKind = "uniform") -> np.ndarray | None:
    """The documents of a sample (rows as `samples(reader, kind)`) embedded by the store's frozen embedder; None
    when the store has no embedder or the sample is empty."""
    if not reader.exists(f"{layout.MODEL_DIR}/{EMBEDDER.name}"):
        return None
    texts = samples(reader, kind)["text"].tolist()
    if not texts:
        return None
    from mixture.fit.model_store import load_model  # the fit stack is heavy: only when a model is there

    return load_model(f"{reader.uri.rstrip('/')}/{layout.MODEL_DIR}").embedder.transform(texts)
