"""Vectorised word n-gram hashes and one-permutation MinHash (mixture/text/shingles.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xxhash

from mixture.text.shingles import EMPTY, WordHashes, minhash_signatures, simplified_bytes, sorted_distinct

TEXTS = [
    "Hello, World! The year 2024 was fine; snake_case_name stays one word.",
    "naïve café — «quoted» 中文，测试。 Ünïcödé words, and ‘curly’ quotes…",
    "",
    "   \n\t ",
    "one",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z " * 3,
    "x" * 5000 + " tail word " + "y" * 17,
    "def f(x):\n    return x**2  # comment\n\nclass C(object):\n    pass\n",
]


def reference_words(text: str) -> list[str]:
    """The definition: lower-cased `\\w+` runs, ASCII digits read as 0."""
    return [re.sub(r"[0-9]", "0", w) for w in re.findall(r"\w+", text.lower())]


def reference_hashes(text: str) -> list[int]:
    """Words hashed independently (xxh3 of the word), to compare equality patterns with the vectorised hashes."""
    return [xxhash.xxh3_64_intdigest(w.encode()) for w in reference_words(text)]


def test_words_are_lowercased_word_runs_with_digits_normalised():
    for t in TEXTS:
        assert simplified_bytes(t).decode().split() == reference_words(t), t


def test_word_hashes_split_per_text_and_equal_iff_the_words_are_equal():
    wh = WordHashes.of(TEXTS)
    assert len(wh.offsets) == len(TEXTS) + 1
    for i, t in enumerate(TEXTS):
        mine = wh.hashes[wh.offsets[i] : wh.offsets[i + 1]].tolist()
        ref = reference_hashes(t)
        assert len(mine) == len(ref), t
        # same equality structure: two positions share a hash exactly when they hold the same word
        assert [mine.index(h) for h in mine] == [ref.index(h) for h in ref], t


def test_hashes_do_not_depend_on_the_batch():
    alone = [WordHashes.of([t]).hashes.tolist() for t in TEXTS]
    together = WordHashes.of(TEXTS)
    assert [together.hashes[together.offsets[i] : together.offsets[i + 1]].tolist() for i in range(len(TEXTS))] == alone


def test_long_words_are_hashed_over_all_their_bytes():
    a, b = "w" * 100 + "a", "w" * 100 + "b"
    ha, hb, ha2 = WordHashes.of([a, b, a]).hashes.tolist()
    assert ha != hb and ha == ha2 == WordHashes.of([a]).hashes[0]
    assert len(set(WordHashes.of(["ab", "ba", "abc", "abcdefgh", "abcdefghi"]).hashes.tolist())) == 5


def test_ngrams_stay_inside_one_text():
    texts = ["a b c", "d e", "f g h i"]
    grams, doc = WordHashes.of(texts).ngrams(2)
    assert doc.tolist() == [0, 0, 1, 2, 2, 2]
    g3, d3 = WordHashes.of(texts).ngrams(3)
    assert d3.tolist() == [0, 2, 2]
    # the same n-gram in two texts hashes the same; word order matters
    g, _ = WordHashes.of(["x y z", "q x y z", "z y x"]).ngrams(3)
    assert g[0] == g[2] and g[0] != g[3]


def test_minhash_estimates_jaccard():
    rng = np.random.default_rng(7)
    errors = []
    for _ in range(300):
        n = int(rng.integers(50, 2000))
        a = rng.integers(0, 2**63, n, dtype=np.uint64)
        keep = rng.random(n) < rng.random()
        b = np.concatenate([a[keep], rng.integers(0, 2**63, n - int(keep.sum()), dtype=np.uint64)])
        a, b = np.unique(a), np.unique(b)
        jaccard = len(np.intersect1d(a, b)) / len(np.union1d(a, b))
        sig = minhash_signatures(np.concatenate([a, b]), np.r_[np.zeros(len(a), int), np.ones(len(b), int)], 2, 112, 1)
        errors.append((sig[0] == sig[1]).mean() - jaccard)
    errors = np.asarray(errors)
    assert abs(errors.mean()) < 0.01  # unbiased
    assert errors.std() < 0.06  # binomial sd at J=0.5 with 112 positions is 0.047


def test_minhash_densification_fills_every_bin_and_keeps_identical_sets_identical():
    shingles = np.array([11, 22, 33], dtype=np.uint64)
    sig = minhash_signatures(np.r_[shingles, shingles[::-1]], np.array([0, 0, 0, 1, 1, 1]), 3, 112, 5)
    assert (sig[:2] != EMPTY).all() and (sig[2] == EMPTY).all()  # doc 2 has no shingle
    assert (sig[0] == sig[1]).all()
    assert set(sig[0].tolist()) <= set(minhash_signatures(shingles, np.zeros(3, int), 1, 112, 5)[0].tolist())


def test_minhash_values_stay_in_datatroves_signature_range():
    # datatrove's MinhashDedupBuckets stops reading a sorted signature file at the first value >= 2**61 - 1
    rng = np.random.default_rng(3)
    shingles = rng.integers(0, 2**64 - 1, 50_000, dtype=np.uint64)
    sig = minhash_signatures(shingles, rng.integers(0, 40, 50_000), 40, 112, 9)
    assert sig.max() < 2**61 - 1 and sig.max() > 2**59  # the whole range below the prime is used


def test_minhash_depends_on_the_seed_only():
    sh = WordHashes.of(["the quick brown fox jumps over the lazy dog again and again"]).ngrams(5)
    s1 = minhash_signatures(*sh, 1, 64, 1)
    assert (s1 == minhash_signatures(*sh, 1, 64, 1)).all()
    assert (s1 != minhash_signatures(*sh, 1, 64, 2)).any()


@pytest.mark.parametrize("edit_every", [40, 8])
def test_near_duplicates_agree_more_than_unrelated_texts(edit_every):
    rng = np.random.default_rng(0)
    vocab = ["".join(chr(97 + int(c)) for c in f"{i:04d}") for i in range(3000)]  # letters: digits would read as 0
    base = [vocab[i] for i in rng.integers(0, len(vocab), 800)]
    near = [w if i % edit_every else "edited" for i, w in enumerate(base)]
    other = [vocab[i] for i in rng.integers(0, len(vocab), 800)]
    grams, doc = WordHashes.of([" ".join(base), " ".join(near), " ".join(other)]).ngrams(5)
    sig = minhash_signatures(grams, doc, 3, 112, 1)
    near_agree, other_agree = (sig[0] == sig[1]).mean(), (sig[0] == sig[2]).mean()
    assert other_agree < 0.05
    assert near_agree > (0.6 if edit_every == 40 else 0.2)


@pytest.mark.parametrize("n, high", [(0, 10), (1, 10), (7, 3), (5_000, 2**63), (5_000, 40)])
def test_sorted_distinct_is_numpys_unique(n, high):
    values = np.random.default_rng(n).integers(0, high, n).astype(np.uint64)
    out = sorted_distinct(values)
    assert out.dtype == np.uint64 and np.array_equal(out, np.unique(values))
