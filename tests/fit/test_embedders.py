"""The lexical embedder's frozen form round-trips; the optional sentence embedder says what it needs."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from mixture.fit.embed import LexicalEmbedder, SentenceEmbedder, embedder_of
from mixture.store.model_files import EMBEDDER

TEXTS = [f"document {i} about sockets servers and requests" if i % 2 else f"essay {i} on gardens flowers and soil"
         for i in range(60)]


def test_lexical_embedder_round_trip_is_exact():
    emb = LexicalEmbedder.fit(TEXTS, dim=8, seed=0)
    again = embedder_of(EMBEDDER.decode(EMBEDDER.encode(emb.to_file()), "embedder.npz"))
    x, y = emb.transform(TEXTS), again.transform(TEXTS)
    assert np.array_equal(x, y)
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    # the two topics separate: same-topic documents are closer than cross-topic ones
    assert float(x[1] @ x[3]) > float(x[1] @ x[2])


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is not None,
                    reason="sentence-transformers is installed: the missing-package message cannot be shown")
def test_sentence_embedder_without_package_names_the_fix(tmp_path):
    with pytest.raises(RuntimeError, match="pip install sentence-transformers"):
        SentenceEmbedder(str(tmp_path))
