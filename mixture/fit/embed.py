"""Lexical document embedder: TF-IDF over a fitted vocabulary, projected by SVD, L2-normalised; frozen as npz."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.preprocessing import normalize

TOKEN_PATTERN = r"(?u)\b[^\W\d_][^\W\d_]{2,}\b"
EMBED_CHARS = 20_000  # documents are embedded from their head; bounds the cost of very long files


def _counter(vocabulary: list[str] | None = None, max_features: int | None = None, min_df: int = 1) -> CountVectorizer:
    return CountVectorizer(
        lowercase=True,
        token_pattern=TOKEN_PATTERN,
        stop_words="english",
        vocabulary=vocabulary,
        max_features=max_features,
        min_df=min_df,
        dtype=np.float32,
    )


@dataclass
class LexicalEmbedder:
    vocabulary: list[str]
    idf: np.ndarray  # (V,)
    components: np.ndarray  # (dim, V)

    @classmethod
    def fit(cls, texts: list[str], dim: int, seed: int, max_features: int = 30_000) -> LexicalEmbedder:
        heads = [t[:EMBED_CHARS] for t in texts]
        min_df = 2 if len(heads) >= 50 else 1
        cv = _counter(max_features=max_features, min_df=min_df)
        counts = cv.fit_transform(heads)
        vocab = list(cv.get_feature_names_out())
        df = np.asarray((counts > 0).sum(axis=0)).ravel()
        idf = (np.log((1 + len(heads)) / (1 + df)) + 1).astype(np.float32)
        x = cls._weigh(counts, idf)
        dim = max(2, min(dim, x.shape[1] - 1, x.shape[0] - 1))
        svd = TruncatedSVD(n_components=dim, random_state=seed, algorithm="randomized", n_iter=5)
        svd.fit(x)
        return cls(vocab, idf, svd.components_.astype(np.float32))

    @staticmethod
    def _weigh(counts, idf: np.ndarray):
        counts = counts.tocsr(copy=True)
        counts.data = np.log1p(counts.data)
        return normalize(counts.multiply(idf).tocsr())

    def transform(self, texts: list[str]) -> np.ndarray:
        counts = _counter(vocabulary=self.vocabulary).transform([t[:EMBED_CHARS] for t in texts])
        x = self._weigh(counts, self.idf) @ self.components.T
        return normalize(np.asarray(x, dtype=np.float32))

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez_compressed(buf, vocabulary=np.array(self.vocabulary), idf=self.idf, components=self.components)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> LexicalEmbedder:
        z = np.load(io.BytesIO(data), allow_pickle=False)
        return cls(z["vocabulary"].tolist(), z["idf"], z["components"])


@dataclass
class SentenceEmbedder:
    """A sentence-transformers model loaded from a local path (`partition.clusters.embedder: sentence`).

    Needs the `sentence-transformers` package (and torch), which the default install leaves out."""

    model_path: str

    def __post_init__(self) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ModuleNotFoundError as exc:
            raise RuntimeError(
                "partition.clusters.embedder: sentence needs the sentence-transformers package: "
                "pip install sentence-transformers (or use the default lexical embedder)"
            ) from exc
        self._model = SentenceTransformer(self.model_path, device="cpu")

    def transform(self, texts: list[str]) -> np.ndarray:
        x = self._model.encode([t[:EMBED_CHARS] for t in texts], batch_size=32, normalize_embeddings=True)
        return np.asarray(x, dtype=np.float32)

    def to_bytes(self) -> bytes:
        return json.dumps({"kind": "sentence", "model_path": self.model_path}).encode()


def embedder_from_bytes(data: bytes) -> LexicalEmbedder | SentenceEmbedder:
    """The frozen embedder of `_model/embedder.npz` (lexical) or its sentence-model reference (JSON)."""
    if data[:1] == b"{":
        return SentenceEmbedder(json.loads(data)["model_path"])
    return LexicalEmbedder.from_bytes(data)
