"""A store built from real multilingual text: every row's language, store.json's language block, `report --by
language` against a recount, and quality calibrated per (content type, language) so every language reaches Q4."""

from __future__ import annotations

from collections import Counter

import pyarrow.dataset as ds
import pytest
from typer.testing import CliRunner

from mixture.accounting import StoreReader, calibration_groups, language_mix, report
from mixture.demo_corpus.debian_text import read_labelled
from mixture.fit.calibration import MIN_SHAPE_DOCS
from mixture.fit.cluster_labels import HIGH, MEDIUM
from mixture.fit.label_terms import code_keywords, stop_words
from tests.multilingual.conftest import build_multilingual

ENOUGH = 100  # kept documents of a language for its Q4 share to mean something here


def documents(store) -> list[dict]:
    files = sorted(str(p) for p in store.store.glob("cluster=*/quality=*/*.parquet"))
    return ds.dataset(files, format="parquet").to_table(
        columns=["id", "language", "language_score", "n_tokens", "content_type", "cluster", "quality"]).to_pylist()


def test_every_row_has_a_language_that_mostly_matches_its_label(multilingual_store):
    rows = documents(multilingual_store)
    labels = {r["id"]: r["lang"] for r in read_labelled(multilingual_store.corpus)}
    assert all(r["language"] and 0.0 <= r["language_score"] <= 1.0 for r in rows)
    fortunes = [r for r in rows if r["id"].startswith("fortune/")]
    assert sum(r["language"] == labels[r["id"]] for r in fortunes) / len(fortunes) >= 0.9


def test_report_by_language_equals_a_recount_and_store_json(multilingual_store):
    rows = documents(multilingual_store)
    docs, tokens = Counter(r["language"] for r in rows), Counter()
    for r in rows:
        tokens[r["language"]] += r["n_tokens"]
    reader = StoreReader(str(multilingual_store.store))
    df = report(reader, "language")
    assert dict(zip(df.language, df.docs, strict=True)) == dict(docs)
    assert dict(zip(df.language, df.tokens, strict=True)) == dict(tokens)
    block = multilingual_store.artifact.language
    assert {c.language: (c.docs, c.tokens) for c in block.languages} == {k: (docs[k], tokens[k]) for k in docs}
    by_cluster = Counter()
    for r in rows:
        by_cluster[(r["cluster"], r["language"])] += r["n_tokens"]
    assert {(c.cluster, c.language): c.tokens for c in block.by_cluster} == dict(by_cluster)
    mix = language_mix(reader, "cluster")
    assert mix.groupby("cluster").share.sum().round(9).eq(1.0).all()
    pair = report(reader, "language,quality")
    assert {(r.language, r.quality): r.docs for r in pair.itertuples()} == \
        {(c.language, c.quality): c.docs for c in block.by_quality}


def test_report_by_language_on_the_command_line(multilingual_store):
    from mixture.cli import app

    result = CliRunner().invoke(app, ["report", str(multilingual_store.store), "--by", "language", "--format", "csv"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("language,tokens")
    assert {line.split(",")[0] for line in lines[1:]} >= {"en", "de", "fr", "ja", "ru", "zh"}


def q4_share(store) -> dict[str, float]:
    """Share of each language's kept documents in the top bucket, for languages with ENOUGH documents."""
    block = store.artifact.language
    total = {c.language: c.docs for c in block.languages}
    top = store.artifact.partition.quality_levels - 1
    q4 = {c.language: c.docs for c in block.by_quality if c.quality == top}
    return {lang: q4.get(lang, 0) / n for lang, n in total.items() if n >= ENOUGH and lang != "und"}


def test_q4_is_reachable_for_every_language_with_enough_documents(multilingual_store):
    shares = q4_share(multilingual_store)
    assert len(shares) >= 8
    assert min(shares.values()) >= 0.10, shares  # each language's best text: ~20 % where its groups calibrate


def test_calibrated_per_content_type_alone_other_languages_lose_q4(tmp_path_factory, multilingual_corpus):
    """The issue this fixes: one map per content type puts the English documents on top and the others below."""
    store = build_multilingual(tmp_path_factory.mktemp("ml_by_type"), multilingual_corpus, per_language=False)
    shares = q4_share(store)
    assert store.artifact.language.calibration_groups == []
    assert shares["en"] > 0.4 and min(shares.values()) < 0.05, shares


def test_calibration_groups_fall_back_below_the_minimum(multilingual_store):
    art = multilingual_store.artifact
    block = art.language
    assert block.per_language and block.group_min_docs == 50
    groups = calibration_groups(StoreReader(str(multilingual_store.store)))
    assert len(groups) == len(block.calibration_groups) > 10
    for g in block.calibration_groups:
        assert g.group == f"{g.content_type}/{g.language}"
        assert g.fallback == (g.sample_docs < block.group_min_docs)
        assert (g.map == "own") == (not g.fallback)
        if g.map == "content_type":  # its documents are calibrated with the content type's map
            assert g.sample_docs < MIN_SHAPE_DOCS
            assert g.raw_cutoffs == pytest.approx(art.raw_score_cutoffs[g.content_type])
        if g.map == "shape":  # its own centre and spread, the shape of groups with their own map
            assert g.shape_groups and all(not groups.set_index("group").fallback[s] for s in g.shape_groups)
    own = [g for g in block.calibration_groups if not g.fallback]
    assert {g.language for g in own} >= {"en", "de", "es", "it", "pl", "ru", "zh"}
    assert sum(g.sample_docs for g in block.calibration_groups) == art.fit.sample_docs


def test_a_document_is_calibrated_by_its_group(multilingual_store):
    """quality_score is the document's position in its group's quantile map (its type's when the group fell back)."""
    import numpy as np

    from mixture.fit.calibration import calibrate, group_knots
    from mixture.fit.model_store import load_model

    model = load_model(str(multilingual_store.store / "_model"))
    files = sorted(str(p) for p in multilingual_store.store.glob("cluster=*/quality=*/*.parquet"))
    rows = ds.dataset(files, format="parquet").to_table(
        columns=["content_type", "language", "raw_score", "quality_score"]).to_pylist()
    for r in rows[::7]:
        knots = group_knots(model.calibration, model.group_calibration, r["content_type"], r["language"])
        assert r["quality_score"] == pytest.approx(float(calibrate(np.array([r["raw_score"]]), knots)[0]))


SMALL = 20  # a small group of at least this many documents must spread over the buckets


def test_no_small_group_lands_at_one_end_because_of_a_borrowed_map(multilingual_store):
    """Groups under group_min_docs (Russian and Chinese `default` text: 31-36 documents here) were calibrated with
    their content type's map, fitted on other languages: 53 % and 100 % of them landed in Q0. Each now keeps its
    own median and spread: no small group of SMALL documents or more has over 40 % in Q0 or in the top bucket."""
    rows = documents(multilingual_store)
    top = multilingual_store.artifact.partition.quality_levels - 1
    block = multilingual_store.artifact.language
    small = [g for g in block.calibration_groups if SMALL <= g.sample_docs < block.group_min_docs]
    assert small, [(g.group, g.sample_docs) for g in block.calibration_groups]
    for g in small:
        assert g.map == "shape", g
        q = [r["quality"] for r in rows if (r["content_type"], r["language"]) == (g.content_type, g.language)]
        assert len(q) >= SMALL
        assert q.count(0) / len(q) <= 0.4 and q.count(top) / len(q) <= 0.4, (g.group, Counter(q))


def label_words(label: str) -> list[str]:
    return [w.lower() for term in label.split(", ") for w in term.split()]


def test_labels_hold_no_stop_word_or_keyword_and_name_their_languages(multilingual_store):
    """On Debian's man pages and fortunes in 20 languages the labels were "Die, Der, Und", "Les, Est, Par",
    "Если, Для, Или"; now each label is a cluster's distinctive words or phrases, and store.json says which
    languages each cluster holds and warns that the clusters split by language."""
    art = multilingual_store.artifact
    banned = stop_words() | code_keywords()
    labels = [c.label for c in art.clusters]
    assert len(set(labels)) == len(labels)
    assert [w for label in labels for w in label_words(label) if w in banned] == []
    assert all(w in banned for w in ("die", "der", "und", "les", "est", "если", "для"))
    assert all(c.languages and 0 < c.language_share <= 1 for c in art.clusters)
    assert {c.languages[0] for c in art.clusters} >= {"de", "fr", "ja", "zh"}
    assert any(w.startswith("the clusters split by language") for w in art.cluster_balance.warnings)
    assert sum(c.name is not None for c in art.clusters) >= len(labels) // 2  # man pages have NAME lines
    # the tag follows the confidence (mean NPMI of the top terms, rounded to 4 places in store.json), which differs
    # from cluster to cluster
    assert all(c.confidence_tag == ("high" if c.confidence >= HIGH else "medium" if c.confidence >= MEDIUM else "low")
               for c in art.clusters if min(abs(c.confidence - HIGH), abs(c.confidence - MEDIUM)) > 1e-4)
    assert len({c.confidence for c in art.clusters}) > len(art.clusters) // 2


def test_small_groups_spread_over_the_buckets_for_any_group_size_threshold(multilingual_store):
    """The same on the store's real raw scores with a larger `group_min_docs` (150), which leaves many groups of
    20-149 documents without a map of their own: with their content type's map (the old fallback) some land over
    40 % at one end; with `map: shape` none passes 45 %."""
    import numpy as np

    from mixture.fit.calibration import bucket, calibrate, fit_calibration, fit_group_calibration

    files = sorted(str(p) for p in multilingual_store.store.glob("cluster=*/quality=*/*.parquet"))
    t = ds.dataset(files, format="parquet").to_table(columns=["content_type", "language", "raw_score"]).to_pydict()
    raw, types, langs = (np.asarray(t[c]) for c in ("raw_score", "content_type", "language"))
    edges = list(multilingual_store.artifact.partition.bucket_edges)
    groups = fit_group_calibration(raw, types, langs, 150)
    by_type = fit_calibration({ct: raw[types == ct] for ct in set(types.tolist())}, tuple(sorted(set(types.tolist()))))
    small = [g for g in groups.values() if SMALL <= g["n"] < 150 and g["language"] != "und"]
    assert len(small) >= 5, sorted((k, g["n"]) for k, g in groups.items())

    def worst_end(knots: list[float], g: dict) -> float:
        mine = raw[(types == g["content_type"]) & (langs == g["language"])]
        shares = np.bincount(bucket(calibrate(mine, knots), edges), minlength=len(edges) + 1) / len(mine)
        return max(shares[0], shares[-1])

    assert all(g["map"] == "shape" for g in small)
    assert max(worst_end(by_type[g["content_type"]]["knots"], g) for g in small) > 0.4
    # with the shape map none passes 45 % (prose/zh reached 42 % on the Debian packages of 2026-12-03)
    assert {g["content_type"] + "/" + g["language"]: round(worst_end(g["knots"], g), 2) for g in small
            if worst_end(g["knots"], g) > 0.45} == {}
