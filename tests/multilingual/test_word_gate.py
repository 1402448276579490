"""The word gate counts words right for every script: each letter of a script written without spaces (Han, kana,
Thai, Lao, Myanmar, Khmer) is a word; the compiled kernel and the Python reference agree."""

from __future__ import annotations

import random

import pytest

from mixture.demo_corpus.debian_text import read_labelled
from mixture.text import gates
from mixture.text.kernel import kernel

ANALECTS = "子曰：學而時習之，不亦說乎？有朋自遠方來，不亦樂乎？人不知而不慍，不亦君子乎？"  # 39 characters, one "word" by spaces


def counters():
    yield "python", lambda text, n: gates.gate_counts_py(text, n)
    if kernel:
        yield "kernel", lambda text, n: kernel.gate_counts(text, n, gates.HEAD)


@pytest.mark.parametrize(("text", "words"), [
    (ANALECTS, 32),                          # 32 Han letters; the fullwidth punctuation separates, counts nothing
    ("Debian 这种规模的项目中 hello", 10),     # 1 + 8 + 1
    ("ひらがな カタカナ 漢字", 10),
    ("สวัสดีครับ ผมชื่อ", 11),                 # Thai letters; its vowel marks and tone marks are not words
    ("안녕하세요 저는 학생입니다", 3),          # Hangul is written with spaces
    ("plain English, five words", 4),
    ("naïve café   crème\u3000brûlée", 4),  # the ideographic space is whitespace
])
def test_words_per_script(text, words):
    assert gates.gate_words(text) == words
    for _, count in counters():
        assert count(text, words)[0] is False and count(text, words + 1)[0] is True


def test_unspaced_ranges_are_sorted_and_disjoint():
    r = gates.UNSPACED_RANGES
    assert all(a <= b < c for (a, b), (c, _) in zip(r, r[1:], strict=False))


def test_kernel_and_python_agree_on_every_script_boundary():
    """Random strings over every range edge, its neighbours, marks, punctuation and whitespace of all kinds."""
    if not kernel:
        pytest.skip("the compiled kernel is not built")
    edges = {c for a, b in gates.UNSPACED_RANGES for c in (a - 1, a, a + 1, b - 1, b, b + 1)}
    pool = [chr(c) for c in sorted(edges) if c < 0x110000] + list("ab1 \t\n\u3000\xa0\u2028。，、ー々ัี่")
    pool += [chr(c) for c in range(0x0E00, 0x0E60)] + [chr(c) for c in range(0x3040, 0x3100, 3)]
    rng = random.Random(7)
    for _ in range(4000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 50)))
        for n in (1, 3, 10, 60):
            assert kernel.gate_counts(text, n, gates.HEAD) == gates.gate_counts_py(text, n), (text, n)


def test_short_chinese_fortunes_pass_the_gate(multilingual_corpus):
    """Every Chinese fortune of 50+ characters (the min_chars gate) has at least 5 words (min_words): most have
    1 to 4 whitespace-separated ones, which the gate once counted."""
    zh = [r["text"] for r in read_labelled(multilingual_corpus) if r["lang"] == "zh" and r["kind"] == "fortune"
          and len(r["text"]) >= 50]
    assert len(zh) > 100
    assert sum(len(t.split()) < 5 for t in zh) > len(zh) // 10  # the old count dropped these
    for name, count in counters():
        assert [t for t in zh if count(t, 5)[0]] == [], name


def test_no_chinese_or_japanese_document_is_dropped_by_min_words(multilingual_store):
    import pyarrow.dataset as ds

    filtered = ds.dataset(str(multilingual_store.store / "_dropped/filtered"), format="parquet").to_table(
        columns=["id", "detail"]).to_pylist()
    by_words = [r["id"] for r in filtered if r["detail"].split(": ")[0] == "min_words"]  # `min_words: fewer than 5 words`
    assert not [i for i in by_words if i.startswith(("fortune/zh/", "man/zh/", "man/ja/"))]
    assert multilingual_store.artifact.filtered_by_reason.get("min_words", 0) == len(by_words)
