"""Chinese text has no spaces: decontamination reads each Han character as a word, so a Chinese benchmark item is
found where a document quotes 13 characters of it. Real text from Debian's fortunes-zh: the 313 Tang poems are the
benchmark; the Song poems and the Chinese quotations (some quote Tang couplets) are the documents."""

from __future__ import annotations

import json

import numpy as np

from mixture.decontam.tokens import hashed_text, splits_characters, token_spans, words
from mixture.text.shingles import WordHashes

from . import realtext
from .helpers import contaminated, every_ngram_matches, parse_detail, quoted_words_in
from .realtext import Doc, plant


def _is_han(c: str) -> bool:
    return "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"


def _han_windows(text: str, n: int = 13) -> set[str]:
    """Every run of n Han characters of the text, other characters left out: the rule, written independently."""
    han = "".join(c for c in text if _is_han(c))
    return {han[i:i + n] for i in range(len(han) - n + 1)}


def _poems(tmp_path) -> tuple[list[dict], list[dict]]:
    records = []
    for doc in realtext.fortunes("tang300", "fortunes-zh"):
        title, _, body = doc.text.split("\n", 2)  # 《title》, 作者：author, the poem
        records.append({"id": title.strip("《》 "), "poem": body})
    path = tmp_path / "tang300.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), encoding="utf-8")
    return records, [{"name": "tang300", "uri": str(path), "fields": ["poem"], "id_field": "id"}]


def test_a_quoted_tang_couplet_is_found_and_nothing_else(tmp_path):
    records, bench = _poems(tmp_path)
    docs = realtext.fortunes("chinese", "fortunes-zh") + realtext.fortunes("song100", "fortunes-zh")
    windows = set().union(*(_han_windows(r["poem"]) for r in records))
    quoting = {d.id for d in docs if _han_windows(d.text) & windows}
    found = contaminated(docs, bench)
    assert set(found) == quoting
    assert len(quoting) >= 20  # the quotations quote famous couplets
    text = {d.id: d.text for d in docs}
    for doc_id, detail in found.items():
        d = parse_detail(detail)
        named = records[int(d["index"])]  # titles repeat (无题): the index names the poem
        assert d["bench"] == "tang300" and d["field"] == "poem" and d["id"] == named["id"]
        assert quoted_words_in(d["passage"], text[doc_id]) and quoted_words_in(d["passage"], named["poem"])
    # read as whitespace-separated words, a line of Chinese is one word: none of them would be found
    assert every_ngram_matches(docs, records, ["poem"]) == set()


def test_every_pasted_poem_is_caught(tmp_path):
    records, bench = _poems(tmp_path)
    hosts = realtext.fortunes("song100", "fortunes-zh")
    planted = {f"planted-{i}": (i, plant(hosts[i % len(hosts)].text, records[i]["poem"]))
               for i in range(0, len(records), 7)}
    found = contaminated([Doc(k, t) for k, (_, t) in planted.items()], bench)
    assert set(found) == set(planted)
    for doc_id, (i, text) in planted.items():
        d = parse_detail(found[doc_id])
        assert int(d["index"]) == i, found[doc_id]
        assert quoted_words_in(d["passage"], text) and quoted_words_in(d["passage"], records[i]["poem"])


def test_han_and_kana_characters_are_words_and_hash_as_the_build_hashes_them():
    text = "バグを報告する場合は、GNU gettext 0.21 の説明書を参照してください。中文测试 résumé"
    assert splits_characters(text) and not splits_characters("résumé, naïve, Zahlen")
    assert words(text)[:6] == ["バ", "グ", "を", "報", "告", "す"]
    assert "gettext" in words(text) and "0" in words(text) and "résumé" in words(text)
    assert [text[a:b] for a, b in token_spans(text)] == words(text)
    # hashing the joined words gives one hash per word, equal to the hash of that word alone
    joined = WordHashes.of([hashed_text(text)])
    alone = WordHashes.of(words(text))
    assert np.array_equal(joined.hashes, alone.hashes)
