"""Clusters share tokens, not documents: the fit weighs its sample by tokens, keeps every cluster between
min_share and max_share of them, and store.json reports (and the summary prints) a cluster outside those shares;
on real multilingual text (Debian's man pages and fortunes) and on the demo corpus."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml
from pydantic import ValidationError
from typer.testing import CliRunner

from mixture.demo_corpus import debian_text
from mixture.fit.balance import cluster_balance
from mixture.fit.clusters import fit_clusters, spherical_kmeans, split_heavy, token_estimate
from mixture.fit.model_store import fit_and_save, load_model, read_sample_assignments
from mixture.fit.sample_files import FILL
from mixture.spec.models import Clusters
from mixture.store.formats import ClusterEntry, read_store_artifact

ML_K, ML_MAX_SHARE = 12, 0.15


def _directions(rng: np.random.Generator, sizes: list[int], dim: int = 8, spread: float = 0.15) -> np.ndarray:
    """Unit vectors around one random direction per group (groups of the given sizes)."""
    centres = rng.normal(size=(len(sizes), dim))
    x = np.concatenate([c + spread * rng.normal(size=(n, dim)) for c, n in zip(centres, sizes, strict=True)])
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _shares(labels: np.ndarray, weights: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(labels, weights=weights, minlength=k) / weights.sum()


def test_token_estimate_is_utf8_bytes():
    texts = ["plain ascii", "déjà vu", "学而时习之", "Привет", "😀", ""]
    assert token_estimate(texts).tolist() == [len(t.encode("utf-8")) for t in texts]


def test_fit_balances_tokens_not_documents():
    """Many short documents on a few topics, and few long ones on one topic: by documents the long ones would
    share one cluster; by tokens they hold 60 % and must be spread so that no cluster holds more than max_share."""
    rng = np.random.default_rng(0)
    x = _directions(rng, [300, 300, 300, 60])
    weights = np.concatenate([np.full(900, 1.0), np.full(60, 22.5)])  # the long documents: 60 % of the weight
    k, max_share, min_share = 6, 0.3, 0.02
    model, labels = fit_clusters(x, k, 40, min_share, seed=1, weights=weights, max_share=max_share)
    shares = _shares(labels, weights, k)
    assert shares.max() <= max_share
    assert shares.min() >= min_share
    assert np.all(np.diff(shares) <= 0)  # numbered by tokens, the largest first
    assert np.array_equal(labels, model.assign(x)[0])  # the sample's labels are what assign gives
    by_docs, _ = fit_clusters(x, k, 40, min_share, seed=1)
    assert _shares(by_docs.assign(x)[0], weights, k).max() > max_share  # unweighted, the long ones stay together
    again, labels_again = fit_clusters(x, k, 40, min_share, seed=1, weights=weights, max_share=max_share)
    assert np.array_equal(labels, labels_again) and np.array_equal(model.fine_centroids, again.fine_centroids)


def test_a_cluster_heavier_than_max_share_is_split():
    rng = np.random.default_rng(2)
    x = _directions(rng, [200, 200], spread=0.4)
    weights = np.ones(len(x))
    centroids, labels = spherical_kmeans(x, 2, seed=0, weights=weights)
    split, new_labels = split_heavy(x, weights, centroids, labels, limit=0.3 * len(x), seed=0)
    assert len(split) > 2
    assert np.bincount(new_labels, weights=weights).max() <= 0.3 * len(x)
    assert np.array_equal(new_labels, np.argmax(x @ split.T, axis=1))


def test_one_document_heavier_than_max_share_stays_above_it():
    """A share the fit cannot reach (one document holds half the tokens) leaves the cluster above max_share; the
    fit does not fail (the build warns)."""
    rng = np.random.default_rng(3)
    x = _directions(rng, [100, 100, 100])
    weights = np.ones(len(x))
    weights[0] = 300.0  # half of the 600
    model, labels = fit_clusters(x, 4, 30, 0.02, seed=0, weights=weights, max_share=0.3)
    shares = _shares(labels, weights, 4)
    assert shares[0] >= 0.5 and shares[1:].max() <= 0.3


def test_cluster_balance_warns_above_max_and_below_min():
    def entry(i: int, tokens: int, docs: int) -> ClusterEntry:
        return ClusterEntry(id=i, label=f"Label {i}", top_terms=[], summary="", confidence=1.0,
                            confidence_tag="high", sample_share=0.0, sample_token_share=0.0, docs=docs, tokens=tokens)

    ok = cluster_balance([entry(0, 40, 10), entry(1, 35, 30), entry(2, 25, 60)], 0.1, 0.45)
    assert ok.warnings == [] and ok.largest_cluster == 0 and ok.largest_token_share == 0.4
    assert ok.largest_doc_share == 0.1 and ok.smallest_cluster == 2 and ok.smallest_token_share == 0.25
    bad = cluster_balance([entry(0, 60, 10), entry(1, 35, 30), entry(2, 5, 60)], 0.1, 0.45)
    assert len(bad.warnings) == 2
    assert "cluster 0 (Label 0) holds 60.0% of the tokens, above partition.clusters.max_share (45.0%)" in bad.warnings[0]
    assert "cluster 2 (Label 2) holds 5.00% of the tokens, below partition.clusters.min_share (10.00%)" in bad.warnings[1]


def test_max_share_in_the_spec():
    assert Clusters(k=40).max_token_share == pytest.approx(0.075)
    assert Clusters(k=2, fine_k=4).max_token_share == 1.0
    assert Clusters(k=12, max_share=0.15).max_token_share == 0.15
    with pytest.raises(ValidationError, match="cannot hold 100%"):
        Clusters(k=12, max_share=0.05)


# -- the fit on a real sample --------------------------------------------------------------------------------------
PARAMS = {"k": 4, "fine_k": 24, "min_share": 0.02, "max_share": 0.35, "embedding_dim": 16, "seed": 3,
          "edges": [0.2, 0.4, 0.6, 0.8]}


def _write_sample(built_store, folder: Path, parts: int, tokens: bool) -> None:
    """A sample folder of `parts` files, as the sample stage writes it (with `n_tokens` when `tokens`)."""
    files = sorted(str(p) for p in built_store.store.glob("cluster=*/quality=*/*.parquet"))
    columns = ["id", "text", "source", "content_type", "raw_score", *(["n_tokens"] if tokens else [])]
    table = ds.dataset(files).to_table(columns=columns).slice(0, 400)
    u = np.array([(i * 7919) % 1000 / 1000 for i in range(table.num_rows)])
    table = table.append_column("u", pa.array(u)).append_column(FILL, pa.array([False] * table.num_rows))
    folder.mkdir()
    bounds = [i * table.num_rows // parts for i in range(parts + 1)]
    for i in range(parts):
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]), folder / f"{i:05d}.parquet")


@pytest.mark.parametrize("tokens", [True, False], ids=["counted-tokens", "bytes"])
def test_fit_is_the_same_for_any_task_count_and_reports_what_assign_gives(built_store, tmp_path, tokens):
    models = []
    for parts in (1, 3):
        _write_sample(built_store, tmp_path / f"sample{parts}", parts, tokens)
        fit_and_save(str(tmp_path / f"sample{parts}"), str(tmp_path / f"model{parts}"), PARAMS,
                     str(tmp_path / f"assigned{parts}"))
        models.append(load_model(str(tmp_path / f"model{parts}")))
    one, three = models
    assert np.array_equal(one.clusters.fine_centroids, three.clusters.fine_centroids)
    assert np.array_equal(one.clusters.lookup, three.clusters.lookup)
    assert one.labels == three.labels
    assert one.fit.token_estimate == ("tokenizer" if tokens else "utf8_bytes")
    assert one.fit.max_share == PARAMS["max_share"]
    # the shares clusters.json gives are those of the clusters written for assign, with the sample's tokens
    assigned = [read_sample_assignments(str(p)) for p in sorted((tmp_path / "assigned3").glob("*.parquet"))]
    cluster = np.concatenate([a[1] for a in assigned])
    shares = np.bincount(cluster, minlength=PARAMS["k"]) / len(cluster)
    assert [row.sample_share for row in one.labels] == pytest.approx(shares.tolist())
    ids = [i for a in assigned for i in sorted(a[0], key=a[0].get)]
    if tokens:
        store = ds.dataset(sorted(str(p) for p in built_store.store.glob("cluster=*/quality=*/*.parquet")))
        n = dict(zip(*store.to_table(columns=["id", "n_tokens"]).to_pydict().values(), strict=True))
        weights = np.array([n[i] for i in ids], dtype=float)
        assert np.concatenate([a[4] for a in assigned]).tolist() == weights.tolist()
    else:
        assert all((a[4] == -1).all() for a in assigned)
        texts = dict(zip(*ds.dataset(sorted(str(p) for p in (tmp_path / "sample3").glob("*.parquet")))
                         .to_table(columns=["id", "text"]).to_pydict().values(), strict=True))
        weights = token_estimate([texts[i] for i in ids])
    token_shares = np.bincount(cluster, weights=weights, minlength=PARAMS["k"]) / weights.sum()
    assert [row.sample_token_share for row in one.labels] == pytest.approx(token_shares.tolist(), abs=1e-6)
    assert token_shares.max() <= PARAMS["max_share"] and np.all(np.diff(token_shares) <= 0)


def test_the_store_counts_every_document_with_the_tokenizer(built_store):
    """The sample stage counts the sample documents' tokens and assign reuses them: the counts stay exact."""
    from mixture.tokenizer import load_tokenizer

    t = _store_table(built_store.store, ["text", "n_tokens"])
    assert t["n_tokens"].tolist() == load_tokenizer(built_store.artifact.tokenizer_ref).count_batch(t["text"].tolist())
    assert built_store.artifact.fit.token_estimate == "tokenizer"


# -- builds ------------------------------------------------------------------------------------------------------
def test_demo_build_reports_its_balance(built_store):
    art = built_store.artifact
    bal = art.cluster_balance
    tokens = {c.id: c.tokens for c in art.clusters}
    total = sum(tokens.values())
    assert bal.largest_cluster == max(tokens, key=tokens.get)
    assert bal.largest_token_share == pytest.approx(tokens[bal.largest_cluster] / total, abs=1e-6)
    assert bal.largest_token_share <= art.partition.max_share == bal.max_share == pytest.approx(3 / art.partition.k)
    assert bal.smallest_token_share >= art.partition.min_share
    assert bal.warnings == []


def test_a_share_the_fit_cannot_reach_warns_in_store_json_and_the_summary(demo_corpus, store_builder, tmp_path):
    """max_share = 1/k asks for exactly equal clusters: some cluster ends above it."""
    built = store_builder(tmp_path / "tight", demo_corpus, max_share=0.125)
    bal = built.artifact.cluster_balance
    assert bal.largest_token_share > 0.125 and bal.warnings
    assert all("above partition.clusters.max_share (12.5%)" in w for w in bal.warnings if "above" in w)
    from mixture.cli import app

    res = CliRunner().invoke(app, ["summary", str(built.store)])
    assert res.exit_code == 0, res.output
    assert "warning" in res.output and "above partition.clusters.max_share" in " ".join(res.output.split())


@pytest.fixture(scope="module")
def multilingual_store(tmp_path_factory) -> Path:
    reason = debian_text.missing_reason()
    if reason:
        pytest.skip(reason)
    from mixture.pipelines.build import build

    root = tmp_path_factory.mktemp("multilingual")
    debian_text.write_multilingual_corpus(root / "corpus", seed=0, scale=1.0)
    spec = debian_text.multilingual_spec(str(root / "corpus"), "store", k=ML_K, max_share=ML_MAX_SHARE)
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(root / "spec.yaml"), progress=False)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _store_table(store: Path, columns: list[str]):
    files = sorted(str(p) for p in store.glob("cluster=*/quality=*/*.parquet"))
    return ds.dataset(files, format="parquet").to_table(columns=columns).to_pandas()


def test_multilingual_clusters_share_tokens(multilingual_store):
    art = read_store_artifact(str(multilingual_store / "store" / "store.json"))
    t = _store_table(multilingual_store / "store", ["id", "cluster", "n_tokens"])
    shares = t.groupby("cluster")["n_tokens"].sum() / t["n_tokens"].sum()
    assert len(shares) == ML_K
    assert shares.max() <= ML_MAX_SHARE  # it was 34 % (French, Japanese and English man pages) before
    assert art.cluster_balance.largest_token_share == pytest.approx(shares.max(), abs=1e-6)
    # Debian's man pages split by language (the lexical embedder puts translations apart): the build says so
    assert [w[:31] for w in art.cluster_balance.warnings] == ["the clusters split by language:"]
    assert shares.min() >= art.partition.min_share


def test_multilingual_labels_are_readable(multilingual_store):
    labels = json.loads((multilingual_store / "store" / "_model" / "clusters.json").read_text())
    names = [row["label"] for row in labels]
    assert len(set(names)) == ML_K and not any(n.startswith("Cluster ") for n in names)
    for row in labels:
        # terms are words, or pairs of Han/kana letters: no phrase-long "word" of a script written without spaces
        assert all(len(word) <= 20 for term in row["top_terms"] for word in term.split()), row
        assert all(len(term) <= 2 for term in row["top_terms"]
                   if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", term) and not re.fullmatch(r"[\u30a0-\u30ff]+", term)), row
        # a katakana pair is shown as the katakana word of the cluster's text it is part of (ファイル, not ァイ)
        assert all(len(term) <= 12 for term in row["top_terms"] if re.fullmatch(r"[\u30a0-\u30ff]+", term)), row
    assert any(re.search(r"[\u4e00-\u9fff]", n) for n in names)  # the Chinese text has a cluster of its own


def test_chinese_fortunes_are_embedded(multilingual_store):
    """The kept Chinese fortunes hold vocabulary terms (letter bigrams); as whole phrases, most held none."""
    model = load_model(str(multilingual_store / "store" / "_model"))
    t = _store_table(multilingual_store / "store", ["id", "text"])
    texts = t[t["id"].str.startswith("fortune/zh/")]["text"].tolist()
    assert len(texts) >= 50
    x = model.embedder.transform(texts)
    assert (np.linalg.norm(x, axis=1) > 0.5).mean() > 0.95
