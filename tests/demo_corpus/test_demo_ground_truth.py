"""The planted ground truth agrees with the bytes on disk."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from mixture.demo_corpus import jaccard, normalize, read
from mixture.demo_corpus.read import raw_lines
from mixture.demo_corpus.textutil import words


def _positions(corpus: Path, source: str) -> dict[str, tuple[str, int]]:
    """id -> (file, line) in reading order."""
    e = read.source_entry(corpus, source)
    return {r["id"]: (f, i) for f, i, r in read.iter_records(corpus, e) if r is not None and "id" in r}


def _texts(corpus: Path, source: str) -> dict[str, str]:
    return read.texts_by_id(corpus, read.source_entry(corpus, source))


def test_counts_meet_the_small_scale_minimums(corpus: Path) -> None:
    gt = read.ground_truth(corpus)
    assert len([x for x in gt["exact_duplicates"] if x["source"] == "web-like"]) >= 8
    assert len(gt["near_duplicates"]) >= 6
    assert len(gt["exempt_near_duplicates"]) >= 4
    assert len(gt["contaminated"]) >= 5
    assert Counter(x["reason"] for x in gt["malformed"]) == Counter(
        {r: 1 for r in ("invalid_json", "invalid_utf8", "missing_text", "empty_text", "wrong_type")})
    planted = {x["id"] for k in ("exact_duplicates", "near_duplicates", "contaminated") for x in gt[k]
               if x["source"] == "web-like"}
    pos = _positions(corpus, "web-like")
    files = {pos[i][0] for i in planted} | {x["file"] for x in gt["malformed"]}
    assert len(files) >= 2  # spread over several files, not all at the end


def test_malformed_records_are_malformed_at_that_line(corpus: Path) -> None:
    gt = read.ground_truth(corpus)
    bad = {(x["file"], x["record"]): x["reason"] for x in gt["malformed"]}
    for path in read.shard_paths(corpus, read.source_entry(corpus, "web-like")):
        relpath = path.relative_to(corpus).as_posix()
        for i, line in enumerate(raw_lines(path)):
            reason = bad.pop((relpath, i), None)
            try:
                rec = json.loads(line.decode("utf-8"))
                got = ("missing_text" if "text" not in rec else "wrong_type" if not isinstance(rec["text"], str)
                       else "empty_text" if rec["text"] == "" else None)
            except UnicodeDecodeError:
                got = "invalid_utf8"
            except json.JSONDecodeError:
                got = "invalid_json"
            assert got == reason, (relpath, i, got, reason)
    assert bad == {}


def test_exact_duplicates_normalise_to_their_original(corpus: Path) -> None:
    gt = read.ground_truth(corpus)
    variants = Counter()
    for source in ("web-like", "synthetic-dialogues"):
        texts, pos = _texts(corpus, source), _positions(corpus, source)
        for x in (x for x in gt["exact_duplicates"] if x["source"] == source):
            copy, orig = texts[x["id"]], texts[x["duplicate_of"]]
            assert x["id"] != x["duplicate_of"]
            assert normalize(copy) == normalize(orig) == orig
            assert pos[x["duplicate_of"]] < pos[x["id"]]
            variants[copy == orig] += 1
    assert variants[True] >= 2 and variants[False] >= 2  # byte-identical copies and whitespace/CRLF variants


def test_near_duplicates_are_close_but_not_exact(corpus: Path) -> None:
    gt = read.ground_truth(corpus)
    for key, source in (("near_duplicates", "web-like"), ("exempt_near_duplicates", "synthetic-dialogues")):
        texts, pos = _texts(corpus, source), _positions(corpus, source)
        for x in gt[key]:
            assert x["source"] == source
            copy, orig = texts[x["id"]], texts[x["duplicate_of"]]
            j = jaccard(copy, orig)
            assert 0.9 <= j < 1.0 and abs(j - x["jaccard"]) < 1e-4, x
            assert normalize(copy) != normalize(orig)
            assert 300 <= len(orig.split()) <= 1000 or source == "synthetic-dialogues"
            assert pos[x["duplicate_of"]] < pos[x["id"]]


def test_contaminated_documents_hold_a_benchmark_record(corpus: Path) -> None:
    gt = read.ground_truth(corpus)
    bench = {r["id"]: r for r in map(json.loads, (corpus / "benchmarks/demo-bench.jsonl").read_text().splitlines())}
    texts = _texts(corpus, "web-like")
    planted_ids = set()
    for x in gt["contaminated"]:
        b, t = bench[x["benchmark_id"]], texts[x["id"]]
        assert b["answer"] in t and b["question"] in t and len(b["answer"].split()) >= 20
        planted_ids.add(x["id"])
    assert len({x["benchmark_id"] for x in gt["contaminated"]}) == len(gt["contaminated"])
    # no other document in the corpus shares a 13-word n-gram with the benchmark
    grams = set()
    for b in bench.values():
        w = words(f"{b['question']} {b['answer']}")
        grams |= {tuple(w[i : i + 13]) for i in range(len(w) - 12)}
    for s in read.manifest(corpus)["sources"]:
        for f, i, r in read.iter_records(corpus, s):
            text = r.get(s["text_field"]) if r else None
            doc_id = r.get(s["id_field"]) if r and s["id_field"] else f"{f}:{i}"
            if not isinstance(text, str) or doc_id in planted_ids:
                continue
            w = words(text)
            assert not any(tuple(w[k : k + 13]) in grams for k in range(len(w) - 12)), (s["name"], doc_id)
