"""The `_model/` files (mixture/store/model_files.py): written and read back byte for byte, and a file with a missing
key, a wrong shape or a disagreement refused with the file and the key named."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from mixture.store.formats import ClusterLabel, FitInfo, FormatError
from mixture.store.model_files import (
    CENTROIDS,
    CLUSTERS,
    EMBEDDER,
    FILES,
    Centroids,
    GroupCalibration,
    LexicalEmbedderFile,
    ModelFiles,
    SentenceEmbedderFile,
    TypeCalibration,
    read_model_file,
    read_model_files,
    write_model_files,
)

K, FINE_K, DIM, TERMS = 3, 6, 4, 5


def model_files() -> ModelFiles:
    rng = np.random.default_rng(0)
    fine = rng.normal(size=(FINE_K, DIM)).astype(np.float32)
    return ModelFiles(
        embedder=LexicalEmbedderFile(["alpha", "beta", "gamma", "delta", "zeta"], np.ones(TERMS, np.float32),
                                     rng.normal(size=(DIM, TERMS)).astype(np.float32)),
        centroids=Centroids(fine, np.array([0, 0, 1, 1, 2, 2], np.int32), fine[::2].copy()),
        calibration={"prose": TypeCalibration(knots=[0.1, 0.5, 0.9], n=40, pooled=False, raw_cutoffs=[0.3, 0.6])},
        groups={"prose/en": GroupCalibration(content_type="prose", language="en", n=30, fallback=False,
                                             knots=[0.1, 0.9], raw_cutoffs=[0.3, 0.6]),
                "prose/fr": GroupCalibration(content_type="prose", language="fr", n=3, fallback=True,
                                             raw_cutoffs=[0.3, 0.6])},
        clusters=[ClusterLabel(id=c, label=f"Term{c}", top_terms=[f"term{c}"], summary=f"term{c}", confidence=0.5,
                               confidence_tag="medium", sample_share=1 / K, sample_token_share=0.333333)
                  for c in range(K)],
        fit=FitInfo(sample_docs=40, sample_by_source={"web": 40}, fine_k=FINE_K, k=K, embedder="lexical",
                    embedding_dim=DIM, vocabulary=TERMS, seed=0, token_estimate="tokenizer", max_share=0.5),
    )


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    write_model_files(str(tmp_path / "_model"), model_files())
    return tmp_path / "_model"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_read_then_write_gives_the_same_bytes(model_dir: Path, tmp_path: Path) -> None:
    files = read_model_files(str(model_dir))
    assert files.embedder.vocabulary == model_files().embedder.vocabulary
    assert files.groups["prose/fr"].knots is None and files.fit.k == K
    write_model_files(str(tmp_path / "again"), files)
    assert _files(tmp_path / "again") == _files(model_dir)
    assert set(_files(model_dir)) == {f.name for f in FILES.values()}
    assert "knots" not in json.loads((model_dir / "calibration_groups.json").read_text())["prose/fr"]


def test_a_sentence_embedder_is_its_model_path(tmp_path: Path) -> None:
    files = model_files()
    write_model_files(str(tmp_path), ModelFiles(**{**files.__dict__, "embedder": SentenceEmbedderFile(
        kind="sentence", model_path="/models/minilm")}))
    assert (tmp_path / EMBEDDER.name).read_bytes() == b'{"kind": "sentence", "model_path": "/models/minilm"}'
    assert read_model_files(str(tmp_path)).embedder.model_path == "/models/minilm"


def _npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_a_missing_array_is_named_with_its_file(model_dir: Path) -> None:
    c = model_files().centroids
    (model_dir / CENTROIDS.name).write_bytes(_npz(centroids=c.centroids, lookup=c.lookup))
    with pytest.raises(FormatError) as err:
        read_model_file(str(model_dir), CENTROIDS)
    assert err.value.file == f"{model_dir}/centroids.npz" and err.value.fields == ["fine_centroids"]
    assert "required array is missing" in str(err.value)


def test_a_wrong_shape_or_dtype_is_named(model_dir: Path) -> None:
    c = model_files().centroids
    (model_dir / CENTROIDS.name).write_bytes(_npz(fine_centroids=c.fine_centroids, lookup=c.lookup.astype(np.float32),
                                                  centroids=c.centroids[:, :2]))
    with pytest.raises(FormatError) as err:
        read_model_file(str(model_dir), CENTROIDS)
    assert err.value.fields == ["lookup", "centroids"]
    assert "expected 1-D signed integer (fine_k), found 1-D float32" in str(err.value)
    assert "dimension dim is 2, 4 in an array before it" in str(err.value)


def test_a_missing_json_key_and_a_missing_file_are_named(model_dir: Path) -> None:
    rows = json.loads((model_dir / CLUSTERS.name).read_text())
    del rows[1]["top_terms"]
    (model_dir / CLUSTERS.name).write_text(json.dumps(rows))
    with pytest.raises(FormatError) as err:
        read_model_files(str(model_dir))
    assert err.value.file.endswith("/clusters.json") and err.value.fields == ["[1].top_terms"]
    (model_dir / CLUSTERS.name).unlink()
    with pytest.raises(FormatError, match="clusters.json: no such file"):
        read_model_files(str(model_dir))


def test_files_that_disagree_are_refused(model_dir: Path) -> None:
    rows = json.loads((model_dir / CLUSTERS.name).read_text())
    (model_dir / CLUSTERS.name).write_text(json.dumps(rows[:2]))
    with pytest.raises(FormatError) as err:
        read_model_files(str(model_dir))
    assert err.value.fields == ["clusters.json"] and "expected clusters 0..2" in str(err.value)
