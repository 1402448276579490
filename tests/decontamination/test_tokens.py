"""The words decontamination reads are the words the build's hasher reads (so a quote can be cut out of a document
at a matching n-gram), in every script of the real text on this machine; and which words carry content."""

from __future__ import annotations

import numpy as np
import pytest

from mixture.decontam.tokens import hashed_text, is_content_word, ngram_content, words
from mixture.text.kernel import kernel
from mixture.text.shingles import WordHashes

from . import realtext

SOURCES = {
    "Python sources": lambda: realtext.package_sources(("json", "email", "encodings")),
    "man pages in every language": lambda: realtext.man_pages(("man1/bzip2.1", "man1/xz.1", "man1/ls.1", "man1/tar.1",
                                                               "man5/passwd.5", "man7/locale.7")),
    "German fortunes": lambda: realtext.fortunes("de/anekdoten", "fortunes-de"),
    "Chinese fortunes": lambda: realtext.fortunes("chinese", "fortunes-zh")[:500],
}


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("hasher", ["kernel", "python"])
def test_words_are_the_words_the_hasher_reads(source, hasher):
    if hasher == "kernel" and kernel is None:
        pytest.skip("the compiled text kernel is not built (pip install -e . with a C compiler)")
    of = WordHashes.of if hasher == "kernel" else WordHashes.of_py
    docs = SOURCES[source]()
    texts = [hashed_text(d.text) for d in docs]
    whole = of(texts)
    one_by_one = of([w for d in docs for w in words(d.text)])
    assert np.array_equal(np.diff(whole.offsets), [len(words(d.text)) for d in docs])
    assert np.array_equal(whole.hashes, one_by_one.hashes)


@pytest.mark.parametrize(("word", "content"), [
    ("numbers", True), ("Zahlen", True), ("числа", True), ("has_close_elements", True), ("中", True), ("カ", True),
    ("x", False), ("B", False), ("0x1f", False), ("utf8", False), ("1998", False), ("１２", False), ("〇", False),
])
def test_content_words(word, content):
    assert is_content_word(word) is content


def test_dotted_capital_i_ends_a_word_as_lower_casing_makes_it():
    text = "İstanbul'da DİKKAT: aİb"  # lower-cased: i + combining dot above (not a word character)
    assert words(text) == ["İ", "stanbul", "da", "Dİ", "KKAT", "aİ", "b"]
    assert np.array_equal(WordHashes.of([text]).hashes, WordHashes.of(words(text)).hashes)


def test_ngram_content_counts_distinct_content_words_and_numbers():
    ws = words("for i in range(len(numbers)): for j in range(i + 1, len(numbers)): 1 2 3")
    content, numbers = ngram_content(ws, 13)
    assert list(content) == [5, 5, 5, 5, 5]  # for, in, range, len, numbers (i, j: single letters)
    assert list(numbers) == [1, 1, 2, 3, 4]
    content, numbers = ngram_content(words("Zahlen " * 13 + "und 1, 2"), 13)
    assert list(content) == [1, 2, 2, 2] and list(numbers) == [0, 0, 1, 2]  # distinct, case-folded
