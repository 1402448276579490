"""The compiled text kernel (mixture/text/_signals.c) counts exactly what the Python definitions count: every
function of the kernel against its Python reference, on tricky generated texts and on a demo corpus."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixture.fit import embed
from mixture.text import code_language, shingles
from mixture.text.content_type import content_type_counts_py
from mixture.text.gates import gate_counts_py
from mixture.text.kernel import kernel
from mixture.text.normalize import rewrite_flags_py
from mixture.text.quality import quality_counts_py, word_counts_py
from mixture.text.shingles import WordHashes

needs_kernel = pytest.mark.skipif(kernel is None, reason="the compiled kernel is not built here")

# pieces the regular expressions, str methods and the kernel could read differently: keywords with and without
# their word boundary or colon, every kind of whitespace, non-ASCII letters, digits and spaces, the math and
# structure markers, stopwords in any case, surrogates, astral characters
FRAGMENTS = [
    "def ", "class ", "import os", "from a.b import c", "from  x import y", "from x\timport y", "return", "returns",
    "return;", "function(", "functional", "except:", "excepted", "if x:", "if x: y", "if :", "for i in x:  ",
    "while 1:\t", "with a as b:", "#include <x>", "var ", "let ", "const ", "public ", "private ", "}", "{", "try:",
    "elif ", "else:", "#!", "self.x", "@dec", "@ ", "@_", "x = 1", "x=", "x =", "a.b == c", "f(x)", "f (x)",
    "f(x) ;", "_a(b)", "ä(b)", "9a = 1", "[", "]", ",", '"k": 1', '"k" :', '"k"', "key: value", "key-name = v",
    "a,b,c,d", "a,b", "|a|b|", "| x", "$x$", "$$", "$" + "y" * 85 + "$", "$" + "z" * 80 + "$", "\\frac", "\\sum",
    "\\int", "\\in", "\\geq", "^{", "_{", "∑", "≤", "≥", "±", "√", "∫", "User:", "User :", "User\n:", "Users:",
    "Assistant", "AI:", "Action:", "Tool :", "Thought", "Observation:", " ", "  ", "\t", "\n", "\n\n", "\n\n\n\n",
    "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2003", "\u3000", "\u2028", ".", ". ", ".\n",
    "? ", "! ", "!", "?", ";", ")", "'", "`", '"', ":", "the", "The", "THE", "and", "of", "because", "word",
    "A longer sentence with several words in it.", "é", "ß", "İ", "K", "ǅ", "Σ", "ς", "ﬁ", "中文", "日本語",
    "Привет", "１２", "学而时习之", "x中", "ภาษา", "١٢٣", "²", "½", "Ⅻ", "_", "-", "0", "123", "x1", "a_b", "ab1cd", "abc", "ab", "\ud800", "😀", "𝔘𝔫𝔦",
    "x" * 40, "a line that is certainly longer than thirty characters",
]
TEXTS = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=80).map("".join),
    st.text(max_size=300),
    st.text(st.characters(codec="latin-1"), max_size=300),
)
LIMITS = st.sampled_from([1, 7, 50, 20_000])
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@needs_kernel
@SETTINGS
@given(TEXTS)
def test_normalize_flags(text: str) -> None:
    assert kernel.normalize_flags(text) == rewrite_flags_py(text)


@needs_kernel
@SETTINGS
@given(TEXTS, st.integers(0, 30), LIMITS)
def test_gate_counts(text: str, min_words: int, head: int) -> None:
    assert kernel.gate_counts(text, min_words, head) == gate_counts_py(text, min_words, head)


@needs_kernel
@SETTINGS
@given(TEXTS, LIMITS)
def test_content_type_counts(text: str, sample: int) -> None:
    assert kernel.content_type_counts(text, sample) == content_type_counts_py(text, sample)


@needs_kernel
@SETTINGS
@given(TEXTS, LIMITS)
def test_quality_counts(text: str, head: int) -> None:
    assert kernel.quality_counts(text, head) == quality_counts_py(text, head)
    assert kernel.word_counts(text.lower()) == word_counts_py(text)


# what the code-language scorer's line patterns and tokens read: line starts with their blanks, YAML and JSON keys
# with every kind of value, Go groups, the markers that count only at a line's start, tags, Perl's `my`, operators
CODE_FRAGMENTS = [
    "\n", "\n  ", "\n\t", " ", "\xa0", "\u2028", "\r", "key:", "key: v", "key: a sentence. ", "say: hi, you",
    "- ", "-  item: x", "-x: 1", "a.b-c_d:", "é:", "_k:", '"k": ', '"k" :', '"k":"v"', '"k": "a\\"b"', '"k": "open',
    '"": 1', '"' + "k" * 81 + '": 1', '"k": -1.5e3', '"k": -x', '"k": 12ab,', '"k": true', '"k": truex', '"k": null ,',
    '"k": false', '"k": "v" x', "\\", "\\\n", "var (", "const  (", "import(", "type (x", "#", "# x", "#!", "#include",
    "#includes", "#define", "#ifdef", "#if", "#endif", "#[", "//", "/*", "*/", "=head1", "=head", "=head٣", "=cut",
    "=item", "=pod", "--", "-- x", "---", "}", "} ", "end", "ends", "fi", "done", "esac", "then", "else", "do", "dox",
    '"""', '""', "<div", "</div>", "<a-b:c.d", "</", "<1", "<?php", "<?xml", "<?py", "<!DOCTYPE", "<!x", "?>",
    "<<'EOF'", "<<EOF", "<<~", "<<x", "my $x", "my  @a", "my (", "my\t%h", "my x", "myx", "army $x", "$x", "$(", "${",
    "@a", "%h", "_x1", "x$y", "xé", "éx", "::", ":=", ":", "->", "=>", "===", "!==", "====", "!===", "=~", "==", "!",
    "=", "||", "&&", "|", "&", ");", ")", "{", "};", "}", ";", "; ", "a", "Z9", "中文", "١٢", "😀", "\ud800",
    # comment lines and docstrings, which the scorer cuts before it reads the tokens
    "#elif", "#pragma", "#undef", "#else", "#!x", "#[x]", "# a word", "///", "/**", "/*x", "*", "**", "***/", "*/",
    "**/", " * x", "-- x", "--\n", "--", '"""doc"""', '""""',
]
CODE_TEXTS = st.one_of(st.lists(st.sampled_from(CODE_FRAGMENTS), max_size=60).map("".join), TEXTS)


def _passes_equal(head: str) -> None:
    """Both ways give the same head to read (and its lines) and the same tokens with the same counts, in the same
    order of first occurrence."""
    assert kernel.code_head(head) == code_language.head_py(head)
    starts, words = kernel.code_tokens(head)
    reference = code_language.passes_py(head)
    assert list(starts.items()) == list(reference[0].items()) and list(words.items()) == list(reference[1].items())


@needs_kernel
@SETTINGS
@given(CODE_TEXTS)
def test_code_tokens(text: str) -> None:
    _passes_equal(text)


@needs_kernel
def test_code_tokens_on_real_code() -> None:
    """Source files of Debian packages in every language the scorer names give the same tokens both ways."""
    from mixture.demo_corpus.debian_code import PACKAGES, labelled_code

    rows = labelled_code(60)
    if len({r["lang"] for r in rows}) < 5:
        pytest.skip(f"real code comes from Debian's {PACKAGES} (.ci/run installs them)")
    for row in rows:
        _passes_equal(row["text"][: code_language.HEAD])


@needs_kernel
@SETTINGS
@given(st.lists(TEXTS, max_size=6))
def test_word_hashes(texts: list[str]) -> None:
    ours, reference = WordHashes.of(texts), WordHashes.of_py(texts)
    assert np.array_equal(ours.hashes, reference.hashes) and np.array_equal(ours.offsets, reference.offsets)


@needs_kernel
@SETTINGS
@given(st.lists(TEXTS, max_size=6), st.sampled_from([1, 2, 5, 13, 70]), st.sampled_from([1, 7, 112, 300]),
       st.integers(0, 2**32))
def test_ngrams_and_minhash_bins(texts: list[str], n: int, k: int, seed: int) -> None:
    words = WordHashes.of(texts)
    grams, doc = words.ngrams(n)
    ref_grams, ref_doc = words.ngrams_py(n)
    assert np.array_equal(grams, ref_grams) and np.array_equal(doc, ref_doc)
    seed_mix = shingles.mix64(np.array([seed], dtype=np.uint64) + shingles._GOLDEN)[0]
    bins = shingles.minhash_bins(grams, doc, len(texts), k, seed)
    assert np.array_equal(bins, shingles.minhash_bins_py(grams, doc, len(texts), k, seed_mix))


@needs_kernel
@SETTINGS
@given(st.lists(TEXTS, min_size=1, max_size=6))
def test_term_counts(texts: list[str]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        ours = embed.TermCounts.of(texts)
        mp.setattr(embed, "kernel", None)
        reference = embed.TermCounts.of(texts)
    assert ours.terms == reference.terms
    assert (ours.counts != reference.counts).nnz == 0


@needs_kernel
@SETTINGS
@given(st.lists(TEXTS, min_size=1, max_size=6), st.lists(TEXTS, min_size=1, max_size=6))
def test_vocabulary_counts(fit_texts: list[str], texts: list[str]) -> None:
    terms = sorted({t for text in fit_texts for t in embed.terms_of(text.lower())} | {"the"})
    with pytest.MonkeyPatch.context() as mp:
        ours = embed.Vocabulary(terms).count(texts)
        mp.setattr(embed, "kernel", None)
        reference = embed.Vocabulary(terms).count(texts)
    assert (ours != reference).nnz == 0


@needs_kernel
def test_equal_on_the_demo_corpus(demo_texts: list[str]) -> None:
    """Real documents (code, prose, data files, dialogues, many scripts) give the same counts both ways."""
    for text in demo_texts:
        assert kernel.content_type_counts(text, 20_000) == content_type_counts_py(text)
        assert kernel.quality_counts(text, 50_000) == quality_counts_py(text)
        assert kernel.word_counts(text[:50_000].lower()) == word_counts_py(text[:50_000])
        assert kernel.gate_counts(text, 5, 100_000) == gate_counts_py(text, 5)
        assert kernel.normalize_flags(text) == rewrite_flags_py(text)
        _passes_equal(text[: code_language.HEAD])
    for i in range(0, len(demo_texts), 64):
        batch = demo_texts[i : i + 64]
        ours, reference = WordHashes.of(batch), WordHashes.of_py(batch)
        assert np.array_equal(ours.hashes, reference.hashes) and np.array_equal(ours.offsets, reference.offsets)
        for n in (5, 13):
            assert all(np.array_equal(a, b) for a, b in zip(ours.ngrams(n), ours.ngrams_py(n), strict=True))
        grams, doc = ours.ngrams(5)
        seed_mix = shingles.mix64(np.array([3], dtype=np.uint64) + shingles._GOLDEN)[0]
        assert np.array_equal(shingles.minhash_bins(grams, doc, len(batch), 112, 3),
                              shingles.minhash_bins_py(grams, doc, len(batch), 112, seed_mix))
    terms = embed.TermCounts.of(demo_texts[::2]).terms  # half the texts' terms: the rest hold unseen ones
    assert any(len(t) > embed.EMBED_CHARS for t in demo_texts)  # heads are cut
    with pytest.MonkeyPatch.context() as mp:
        ours = embed.Vocabulary(terms).count(demo_texts)
        mp.setattr(embed, "kernel", None)
        reference = embed.Vocabulary(terms).count(demo_texts)
    assert ours.nnz > 10_000 and (ours != reference).nnz == 0


@pytest.fixture(scope="module")
def demo_texts(tmp_path_factory) -> list[str]:
    import pyarrow.parquet as pq

    from mixture.demo_corpus import write_demo_corpus

    root = tmp_path_factory.mktemp("kernel-corpus")
    write_demo_corpus(root, seed=0, scale=0.05)
    texts = []
    for path in sorted(root.rglob("*.parquet")):
        table = pq.read_table(path)
        column = "content" if "content" in table.column_names else "text"
        texts += [t for t in table.column(column).to_pylist() if isinstance(t, str)]
    assert len(texts) > 100 and any(not t.isascii() for t in texts)
    return texts


def test_the_kernel_is_built_where_a_compiler_is() -> None:
    """`pip install -e .` compiles the kernel; the pure-Python fallback is for machines without a C compiler."""
    if os.environ.get("MIXTURE_PURE_PYTHON"):
        pytest.skip("MIXTURE_PURE_PYTHON is set")
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler on this machine")
    assert kernel is not None, "reinstall with `pip install -e .` to build mixture/text/_signals.c"


@needs_kernel
def test_wrong_types_are_errors_not_crashes() -> None:
    for call in (lambda: kernel.normalize_flags(b"x"), lambda: kernel.gate_counts(1, 5, 10),
                 lambda: kernel.content_type_counts(None, 10), lambda: kernel.code_tokens(b"def"),
                 lambda: kernel.code_head(None), lambda: kernel.word_hashes(["a", 1]),
                 lambda: kernel.term_counts(("a",), 3), lambda: kernel.set_stopwords("Not lower"),
                 lambda: kernel.vocabulary(b"a\0\0\0", np.array([0, 8]).tobytes(), np.array([0]).tobytes()),
                 lambda: kernel.ngram_hashes(b"\0" * 12, np.array([0, 1]).tobytes(), 2),
                 lambda: kernel.ngram_hashes(b"\0" * 16, np.array([0, 1]).tobytes(), 2),
                 lambda: kernel.ngram_hashes(b"\0" * 16, np.array([0, 2, 1, 2]).tobytes(), 1),
                 lambda: kernel.minhash_bins(b"\0" * 8, np.array([5]).tobytes(), 2, 4, 0),
                 lambda: kernel.minhash_bins(b"\0" * 8, b"", 1, 4, 0),
                 lambda: kernel.vocab_counts(object(), ["a"], 10, 3),
                 lambda: kernel.vocab_counts(embed.Vocabulary(["abc"])._lookup[0], ("abc",), 10, 3),
                 lambda: kernel.vocab_counts(embed.Vocabulary(["abc"])._lookup[0], ["abc", 1], 10, 3)):
        with pytest.raises((TypeError, ValueError)):
            call()
