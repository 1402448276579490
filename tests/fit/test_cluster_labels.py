"""Cluster labels on their own: no stop word of any language and no programming keyword, distinctive terms and
phrases, katakana words whole, titles from headings and man pages (not from code), a coherence confidence."""

from __future__ import annotations

import numpy as np

from mixture.fit.cluster_labels import label_counted_clusters, title_of
from mixture.fit.embed import TermCounts
from mixture.fit.label_terms import allowed, code_keywords, stop_words


def _label(texts: list[str], labels: list[int], k: int, languages: list[str] | None = None) -> list[dict]:
    return label_counted_clusters(TermCounts.of(texts), np.array(labels), k, dict(enumerate(texts)),
                                  languages=languages)


def test_stop_words_of_every_language_and_keywords_are_not_allowed():
    assert {"die", "der", "und", "les", "que", "det", "att", "если", "する"} <= stop_words()
    assert {"return", "func", "byte", "def", "lambda", "elif"} <= code_keywords()
    assert not any(allowed(w) for w in ("die", "est", "Que", "som", "return", "self", "the kernel", "され"))
    assert all(allowed(w) for w in ("kernel", "garden", "linux kernel", "ファイル", "手册"))


def test_labels_are_distinctive_phrases_not_frequent_words():
    german = [f"Die Katze und der Hund schlafen im Garten. Der Gartenzaun ist neu {i}." for i in range(30)]
    code = [f"def run(self):\n    return self.socket.send(buffer)\n# network socket buffer {i}\n" for i in range(30)]
    french = [f"Les recettes de cuisine pour le pain complet est une tradition {i}." for i in range(30)]
    rows = _label(german + code + french, [0] * 30 + [1] * 30 + [2] * 30, 3, ["de"] * 30 + ["en"] * 30 + ["fr"] * 30)
    for row in rows:
        assert all(allowed(t) for t in row["top_terms"]), row
        assert all(allowed(t) for t in row["label"].split(", ")), row
    assert len({r["label"] for r in rows}) == 3
    words = [{w for t in r["top_terms"][:3] for w in t.split()} for r in rows]
    assert {"katze", "hund"} & words[0] and {"socket", "buffer"} & words[1] and {"recettes", "cuisine"} & words[2]
    assert "pain complet" in rows[2]["top_terms"] or "recettes" in words[2]
    assert [r["languages"] for r in rows] == [["de"], ["en"], ["fr"]] and rows[0]["language_share"] == 1.0


def test_katakana_pairs_become_whole_words():
    texts = [f"設定ファイルを読み込みます。ファイルの形式 {i}" for i in range(20)] + \
            [f"庭の花がきれいに咲いた 春の日 {i}" for i in range(20)]
    rows = _label(texts, [0] * 20 + [1] * 20, 2)
    assert "ファイル" in rows[0]["top_terms"]
    assert not any(t in ("ァイ", "イル") for t in rows[0]["top_terms"])


def test_confidence_is_coherence_and_not_high_for_unrelated_terms():
    """Terms that always occur together: high. A cluster of documents that share no words: low."""
    rng = np.random.default_rng(0)
    vocab = [f"{a}{b}{c}" for a in "bcdfgklmnp" for b in "aeiou" for c in "rstvz"]
    together = [f"astronomy telescope galaxy nebula {w}" for w in rng.choice(vocab, 40, replace=False)]
    scattered = [" ".join(rng.choice(vocab, 6)) for _ in range(40)]
    rows = _label(together + scattered, [0] * 40 + [1] * 40, 2)
    assert rows[0]["confidence_tag"] == "high" and rows[0]["confidence"] > 0.5
    assert rows[1]["confidence_tag"] == "low", rows[1]


def test_titles_from_headings_and_man_pages_never_from_code():
    assert title_of("FAILLOG\n\nNAME\n\nfaillog - display faillog records\n\nSYNOPSIS\n") == \
        "faillog - display faillog records"
    assert title_of("# Getting started with ray\n\nInstall it.") == "Getting started with ray"
    assert title_of('"""Module browser.\n\nMore text."""') == "Module browser."
    for code in ("import pytest\n\nx = 1", "#!/usr/bin/env python3\n\nprint()", "User: what does it do?\n\nIt runs.",
                 "Copyright (c) 2020 Someone\n\nMIT", "x = compute(a)\n\ny", "only one line"):
        assert title_of(code) is None, code


def test_phrases_are_every_adjacent_pair_of_whole_letter_words():
    from mixture.fit.cluster_labels import _phrases

    got = _phrases("Kernel module loader\tconfiguration file_name x86 build system, unused words")
    assert {"kernel module", "module loader", "loader configuration"} <= got  # overlapping pairs
    assert not any("file" in p or "name" in p or "x86" in p or "system unused" in p for p in got)
