"""A drop says what was measured against which limit: the gates' drop detail, the near-duplicate measure's word
rule (digits read as 0)."""

from __future__ import annotations

from datatrove.data import Document

from mixture.pipelines.dedup.minhash_cluster import WORD_RULE
from mixture.pipelines.prepare.gates import Gates
from mixture.text.shingles import WordHashes


def _gates() -> Gates:
    return Gates(min_chars=20, max_chars=10_000, min_words=5, max_symbol_ratio=0.3, max_duplicate_line_ratio=0.3)


def test_duplicate_lines_drop_gives_the_measured_share_and_its_limit():
    doc = Document(text="\n".join(["the same line again and again"] * 8 + [f"line {i} is new" for i in range(4)]),
                   id="d")
    assert _gates().filter(doc) == (False, "duplicate_lines")
    assert doc.metadata["drop_detail"] == ("duplicate_lines: repeated lines 0.667 (8 of 12 non-blank lines), over "
                                           "the limit of 0.3")


def test_symbol_and_length_drops_give_their_values():
    doc = Document(text="#### $$$ %%% ^^^ &&& *** words here and more words", id="s")
    assert _gates().filter(doc) == (False, "symbol_ratio")
    assert doc.metadata["drop_detail"].startswith("symbol_ratio: symbol ratio 0.") and "limit of 0.3" in \
        doc.metadata["drop_detail"]
    short = Document(text="too short", id="t")
    assert _gates().filter(short) == (False, "min_chars")
    assert short.metadata["drop_detail"] == "min_chars: 9 characters, under the minimum of 20"


def test_the_word_rule_named_is_the_one_the_hashes_apply():
    """`digits read as 0`: texts that differ only in their digits have the same word hashes."""
    assert "digits read as 0" in WORD_RULE
    a, b = WordHashes.of(["order 1234 shipped on 2024"]), WordHashes.of(["order 9876 shipped on 1999"])
    assert list(a.hashes) == list(b.hashes)
