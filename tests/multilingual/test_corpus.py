"""The multilingual corpus's planted truths hold in the files it writes (what the other tests rely on)."""

from __future__ import annotations

import json
from collections import Counter

from mixture.demo_corpus.debian_text import BENCHMARK, TRUTH, read_labelled
from mixture.demo_corpus.textutil import jaccard, normalize


def _positions(corpus) -> dict[str, tuple[str, int]]:
    out = {}
    for path in sorted(corpus.glob("*/part-*.jsonl")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            out[json.loads(line)["id"]] = (path.name, i)
    return out


def test_planted_truths_hold(multilingual_corpus):
    truth = json.loads((multilingual_corpus / TRUTH).read_text(encoding="utf-8"))
    rows = {r["id"]: r for r in read_labelled(multilingual_corpus)}
    where = _positions(multilingual_corpus)
    assert len(rows) == sum(truth["documents"].values())
    for source, langs in truth["languages"].items():
        assert Counter(r["lang"] for r in rows.values() if r["id"].split("/")[0] in
                       (("man", "contaminated") if source == "man" else ("fortune", "numbers"))) == langs
    assert truth["exact_duplicates"] and truth["near_duplicates"]
    for d in truth["exact_duplicates"] + truth["near_duplicates"]:
        copy, original = rows[d["id"]], rows[d["duplicate_of"]]
        assert where[d["id"]][0] == where[d["duplicate_of"]][0] and where[d["id"]][1] > where[d["duplicate_of"]][1]
        if "variant" in d:
            assert normalize(copy["text"]) == normalize(original["text"])
        else:
            assert 0.85 <= d["jaccard"] == round(jaccard(normalize(copy["text"]), normalize(original["text"])), 4) < 1
    for d in truth["number_heavy"]:
        lines = rows[d["id"]]["text"].splitlines()[2:]
        assert len(lines) >= 12 and all(len(line.split()) == 16 and line.replace(" ", "").isdigit() for line in lines)
    bench = {b["id"]: b for b in map(json.loads, (multilingual_corpus / BENCHMARK).read_text().splitlines())}
    for d in truth["contaminated"]:
        item = bench[d["benchmark_id"]]
        assert f"{item['question']} {item['answer']}" in rows[d["id"]]["text"]
    held_out = {b["origin"] for b in bench.values()}
    assert not held_out & set(rows)
