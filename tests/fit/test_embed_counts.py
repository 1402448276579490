"""The vectorised token counter equals sklearn's CountVectorizer (the oracle, with the reference tokenizer
`terms_of`) in vocabulary, counts and embeddings."""

from __future__ import annotations

import random
import re
import warnings

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer

from mixture.fit import embed
from mixture.fit.cluster_labels import label_counted_clusters
from mixture.fit.clusters import label_clusters
from mixture.fit.embed import (
    EMBED_CHARS,
    TOKEN_PATTERN,
    LexicalEmbedder,
    TermCounts,
    Vocabulary,
    min_df_for,
    terms_of,
)

PIECES = [
    "hello", "World", "HELLO", "déjà", "e\u0301te\u0301", "naïve", "straße", "İstanbul", "ΣΟΦΙΑΣ", "中文分词",
    "日本語テキスト", "abc1", "x2y", "_foo", "foo_bar", "snake_case_name", "x²y", "½half", "Ⅻtwelve", "٣abc",
    "ab", "a", "the", "and", "which", "yourselves", "😀emoji", "zero\u200bwidth", "def", "return", "self",
    "0x1F", "3.14", "αβγ", "ǅungla", "ﬁnance", "\x00nul", "\ud800lone", "ǈ", "ŉapostrophe", "ΐota", "ⓐⓑⓒ",
    "ｆｕｌｌｗｉｄｔｈ", "Ⓐbc", "١٢٣", "mañana", "sockets", "servers", "requests", "gardens", "soil",
    "中", "unix编程艺术", "abc中def", "x中y", "学而时习之", "ภาษาไทย", "ｶﾀｶﾅ", "〆切", "𠀀𠀁", "中1", "_中",
]  # fmt: skip
SEPARATORS = [" ", " ", " ", "", ".", "-", "\n", "\t", "(", "_", "1", "'", "\u00a0", "\u3000"]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = rng.choices(PIECES, k=rng.randint(0, 40))
        out.append("".join(w + rng.choice(SEPARATORS) for w in words))
    return out


def _long_text() -> str:
    # a token crosses EMBED_CHARS, so only its head counts; "İ" lowercases to two characters, so the head must be
    # cut before it is lowercased for the cut to fall where CountVectorizer's does
    start = "İİİİİİ "
    filler = ("lorem ipsum dolor " * (EMBED_CHARS // 18))[: EMBED_CHARS - 5 - len(start)]
    return start + filler + "crossing words after the cut"


TEXTS = _texts(120, 0) + [
    "",
    "the and of which yourselves",  # stop words only
    "def parse(self, data_1):\n    return self._cache.get(data_1) or fetch_url(data_1)  # TODO",
    "Die Straße ist naß; ÉCOLE, École, école — ÇA VA? Ça va.",
    "東京都の天気は晴れです。Пример текста на русском языке.",
    "alpha beta gamma delta epsilon",  # five terms of one occurrence each: ties for max_features
    "zeta eta theta iota kappa",
    _long_text(),
]


def test_terms_are_token_pattern_matches_and_bigrams_of_scripts_without_spaces():
    spaced = "Die Straße ist naß; déjà vu — x2y foo_bar abc ab Привет мир"
    assert terms_of(spaced.lower()) == re.findall(TOKEN_PATTERN, spaced.lower())
    assert terms_of("学而时习之，不亦说乎") == ["学而", "而时", "时习", "习之", "不亦", "亦说", "说乎"]
    assert terms_of("unix编程艺术 中 abc中def x中y 12中文") == ["unix", "编程", "程艺", "艺术", "中", "abc", "中", "def",
                                                          "中", "中文"]
    assert terms_of("東京都のテキスト") == ["東京", "京都", "都の", "のテ", "テキ", "キス", "スト"]


def test_a_short_chinese_text_has_vocabulary_terms():
    """A phrase of Han characters is one run of letters: as one token it is seen once and never in a vocabulary."""
    texts = ["子曰：学而时习之，不亦说乎？有朋自远方来，不亦乐乎？"] * 2 + ["有朋自远方来"] * 2
    emb = LexicalEmbedder.fit(texts, dim=2, seed=0)
    assert {"学而", "不亦", "有朋", "远方"} <= set(emb.vocabulary)
    assert np.allclose(np.linalg.norm(emb.transform(texts), axis=1), 1)


def _oracle(max_features: int | None = None, min_df: int = 1, vocabulary: list[str] | None = None):
    return CountVectorizer(
        lowercase=True,
        tokenizer=terms_of,
        token_pattern=None,
        stop_words="english",
        vocabulary=vocabulary,
        max_features=max_features,
        min_df=min_df,
        dtype=np.float32,
    )


def _heads(texts: list[str]) -> list[str]:
    return [t[:EMBED_CHARS] for t in texts]


def _assert_same_counts(counts, expected) -> None:
    assert counts.shape == expected.shape
    assert counts.dtype == np.float32
    assert (counts != expected).nnz == 0


@pytest.fixture(params=[500_000, 300], ids=["one-chunk", "many-chunks"])
def chunk_chars(request, monkeypatch):
    monkeypatch.setattr(embed, "CHUNK_CHARS", request.param)
    return request.param


@pytest.mark.parametrize(("max_features", "min_df"), [(None, 1), (None, 2), (30_000, 2), (40, 1), (7, 2), (3, 1)])
def test_vocabulary_and_counts_equal_count_vectorizer(chunk_chars, max_features, min_df):
    cv = _oracle(max_features, min_df)
    expected = cv.fit_transform(_heads(TEXTS))
    selected = TermCounts.of(TEXTS).select(max_features, min_df)
    assert selected.terms == list(cv.get_feature_names_out())
    _assert_same_counts(selected.counts, expected)


def _random_code_points(n: int, seed: int) -> list[str]:
    """Texts of ASCII letters, spaces and code points from the whole range: marks, digits, astral, surrogates."""
    rng = random.Random(seed)

    def char() -> str:
        r = rng.random()
        return rng.choice("abcdefgh") if r < 0.5 else " " if r < 0.6 else chr(rng.randint(0x80, 0x2FFFF))

    return ["".join(char() for _ in range(rng.randint(0, 300))) for _ in range(n)]


@pytest.mark.parametrize("seed", [0, 1])
def test_any_code_point_counts_as_count_vectorizer(seed):
    texts = _random_code_points(150, seed)
    counted = TermCounts.of(texts)
    for max_features, min_df in [(None, 1), (None, 2), (25, 1)]:
        cv = _oracle(max_features, min_df)
        expected = cv.fit_transform(texts)
        selected = counted.select(max_features, min_df)
        assert selected.terms == list(cv.get_feature_names_out())
        _assert_same_counts(selected.counts, expected)


def test_max_features_breaks_ties_as_count_vectorizer():
    texts = ["alpha beta gamma delta epsilon zeta eta theta", "iota kappa lambda alpha", "omicron sigma tau upsilon"]
    for max_features in range(1, 12):
        cv = _oracle(max_features)
        expected = cv.fit_transform(texts)
        selected = TermCounts.of(texts).select(max_features, 1)
        assert selected.terms == list(cv.get_feature_names_out()), max_features
        _assert_same_counts(selected.counts, expected)


def test_fixed_vocabulary_counts_equal_count_vectorizer(chunk_chars):
    # a vocabulary out of order, with a stop word and an upper-case term, neither of which is ever counted
    vocabulary = ["world", "hello", "the", "Hello", "straße", "中文分词", "naïve", "never", "crossing", "cross", "ipsum"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = _oracle(vocabulary=vocabulary).transform(_heads(TEXTS))
    _assert_same_counts(Vocabulary(vocabulary).count(TEXTS), expected)


def test_empty_texts_and_empty_vocabulary_fail_as_count_vectorizer():
    for texts in ([], ["", "the and of", "12 34 __"]):
        counted = TermCounts.of(texts)
        assert counted.terms == [] and counted.counts.shape == (len(texts), 0)
        with pytest.raises(ValueError, match="empty vocabulary"):
            counted.select(None, 1)
    with pytest.raises(ValueError, match="no terms remain"):
        TermCounts.of(["alpha beta", "gamma delta"]).select(None, 2)


def _old_embedding(embedder: LexicalEmbedder, texts: list[str]) -> np.ndarray:
    """The embedding as the CountVectorizer-based embedder computed it."""
    from sklearn.preprocessing import normalize

    counts = _oracle(vocabulary=embedder.vocabulary).transform(_heads(texts))
    counts.data = np.log1p(counts.data)
    x = normalize(counts.multiply(embedder.idf).tocsr()) @ embedder.components.T
    return normalize(np.asarray(x, dtype=np.float32))


def test_fit_and_transform_equal_the_count_vectorizer_embedder(chunk_chars):
    texts = TEXTS[:100]
    emb = LexicalEmbedder.fit(texts, dim=8, seed=0, max_features=60)
    cv = _oracle(60, min_df_for(len(texts)))
    counts = cv.fit_transform(_heads(texts))
    assert emb.vocabulary == list(cv.get_feature_names_out())
    df = np.asarray((counts > 0).sum(axis=0)).ravel()
    assert np.array_equal(emb.idf, (np.log((1 + len(texts)) / (1 + df)) + 1).astype(np.float32))
    assert np.allclose(emb.transform(TEXTS), _old_embedding(emb, TEXTS), atol=1e-5)
    # the fit's own embedding of its texts is what transform gives them
    again, x = LexicalEmbedder.fit_counts(TermCounts.of(texts), dim=8, seed=0, max_features=60)
    assert again.vocabulary == emb.vocabulary
    assert np.array_equal(again.components, emb.components)
    assert np.allclose(x, emb.transform(texts), atol=1e-6)


def test_label_clusters_same_from_counts_as_from_texts():
    texts = [f"sockets servers requests number {i}" for i in range(40)] + [f"gardens soil flowers {i}" for i in range(40)]
    # cluster 3 has thirty terms of its own, each seen 1 to 3 times: many ties in its c-TF-IDF ranking
    rng = random.Random(1)
    own = [f"tie{a}{b}" for a in "abcdef" for b in "vwxyz"]
    texts += [" ".join(w for w in own for _ in range(rng.randint(1, 3)))] * 3
    texts += TEXTS
    labels = np.array([0] * 40 + [1] * 40 + [3] * 3 + [i % 4 for i in range(len(TEXTS))])
    from_texts = label_clusters(texts, labels, 4)
    assert from_texts == label_counted_clusters(TermCounts.of(texts), labels, 4, dict(enumerate(texts)))
    words = [{w for t in row["top_terms"][:4] for w in t.split()} for row in from_texts]
    assert {"sockets", "servers", "requests"} <= words[0]
    assert {"gardens", "soil", "flowers"} <= words[1]
    assert len({row["label"] for row in from_texts}) == 4
