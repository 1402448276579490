"""Term counts merged from the sample tasks equal the counts of the whole sample on real multilingual text
(Debian's man pages and fortunes: letter bigrams of Chinese and Japanese, Cyrillic, accented Latin)."""

from __future__ import annotations

import pytest

from mixture.demo_corpus.debian_text import read_labelled
from tests.fit.test_fit_term_counts import check_merge


@pytest.mark.parametrize("n_parts", [2, 7])
def test_counts_merged_from_parts_equal_the_whole_sample(multilingual_corpus, n_parts):
    texts = [r["text"] for r in read_labelled(multilingual_corpus)]
    assert {r["lang"] for r in read_labelled(multilingual_corpus)} >= {"zh", "ja", "ru", "de"}
    check_merge(texts, n_parts, seed=n_parts, leave_out=0.05)
