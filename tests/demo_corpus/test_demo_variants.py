"""Variants of the demo corpus: the same mix and ground truth as variant 0, but text that is distinct between
variants (no exact or near duplicate of another variant's document), so n variants hold n times the text."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

import tests.demo_corpus.test_demo_corpus_files as files_tests
import tests.demo_corpus.test_demo_ground_truth as truth_tests
from mixture.demo_corpus import jaccard, normalize, read, write_demo_corpus
from mixture.demo_corpus.variants import Rewriter, camel_parts

# every check of the ground truth and of the files that does not name variant 0's ids
CHECKS = [truth_tests.test_counts_meet_the_small_scale_minimums, truth_tests.test_malformed_records_are_malformed_at_that_line,
          truth_tests.test_exact_duplicates_normalise_to_their_original,
          truth_tests.test_near_duplicates_are_close_but_not_exact,
          truth_tests.test_contaminated_documents_hold_a_benchmark_record, files_tests.test_ids_are_unique_across_sources,
          files_tests.test_only_the_planted_document_exceeds_max_chars, files_tests.test_approx_tokens_match_a_real_count,
          files_tests.test_benchmark_file]


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_the_ground_truth_holds_in_a_variant(check, variants: dict[int, Path]) -> None:
    check(variants[1])


def _texts(corpus: Path) -> dict[tuple[str, str, int], str]:
    """(source, file, record) -> text of every well-formed record."""
    out = {}
    for s in read.manifest(corpus)["sources"]:
        for f, i, r in read.iter_records(corpus, s):
            if r is not None and isinstance(r.get(s["text_field"]), str) and r[s["text_field"]].strip():
                out[(s["name"], f, i)] = r[s["text_field"]]
    return out


def test_a_variant_has_the_same_documents_files_and_lengths(corpus: Path, variants: dict[int, Path]) -> None:
    base, v1 = read.manifest(corpus), read.manifest(variants[1])
    assert v1["variant"] == 1 and "variant" not in base
    for a, b in zip(base["sources"], v1["sources"], strict=True):
        assert (a["name"], a["files"], a["docs"], a["chars"]) == (b["name"], b["files"], b["docs"], b["chars"])
        assert 0.8 < b["approx_tokens"] / a["approx_tokens"] < 1.25, a["name"]  # words of about the same frequency
    assert (corpus / "benchmarks/demo-bench.jsonl").read_bytes() == (variants[1] / "benchmarks/demo-bench.jsonl").read_bytes()
    code = read.source_entry(variants[1], "stdlib-code")
    assert all(r["path"].startswith("v1/stdlib/") for _, _, r in read.iter_records(variants[1], code))
    gt = read.ground_truth(variants[1])
    assert all(x["id"].startswith("v1/") and x["duplicate_of"].startswith("v1/")
               for k in ("exact_duplicates", "near_duplicates") for x in gt[k])


def test_variants_share_no_duplicates(corpus: Path, variants: dict[int, Path]) -> None:
    """Across variants 0, 1 and 2 hardly a document repeats and few 5-grams do (variant 0 swapped nothing, so it
    shares more with the others than two variants do): dedup keeps every variant."""
    texts = [_texts(c) for c in (corpus, variants[1], variants[2])]
    assert texts[0].keys() == texts[1].keys() == texts[2].keys()
    for a, b, mean in ((0, 1, 0.25), (1, 2, 0.15)):
        keys = [k for k in texts[a] if len(texts[a][k]) < 200_000]
        same = [k for k in keys if normalize(texts[a][k]) == normalize(texts[b][k])]
        assert len(same) <= 0.01 * len(keys), same
        sims = [jaccard(texts[a][k], texts[b][k]) for k in keys]
        assert statistics.mean(sims) < mean and sum(s >= 0.7 for s in sims) <= 0.01 * len(keys)


def test_writing_one_variant_gives_the_same_bytes(variants: dict[int, Path], tmp_path: Path) -> None:
    write_demo_corpus(tmp_path / "v2", seed=0, scale=0.02, variant=2, progress=False)
    assert files_tests._files(tmp_path / "v2") == files_tests._files(variants[2])


def test_rewriter_keeps_code_case_and_pasted_text() -> None:
    docs = [("", "def parse_header(self, maximumPageSize):\n    return self.HTTPServer(42)\n" * 3),
            ("", "The quick brown foxes jumped over lazy dogs, repeating header parsing and buffering.")] * 5
    docs += [("", f"{w} header parse buffer server quick brown foxes") for w in ("alpha", "gamma", "delta", "omega")]
    rw = Rewriter(docs, common=2)
    assert camel_parts("maximumPageSize") == ["maximum", "Page", "Size"]
    assert camel_parts("HTTPServer") == ["HTTP", "Server"]
    words, chars = rw.tables(1, strong=True)
    code = docs[0][1]
    out, changed = Rewriter.rewrite(code, words, chars)
    assert len(out) == len(code) and changed > 0 and out != code
    assert out.count("def ") == 3 and out.count("self") == 6 and out.count("return") == 3  # keywords and builtins stay
    assert "42" not in out and "parse_header" not in out  # digits permuted; every eligible word swapped (strong)
    pasted = "The quick brown foxes"
    kept, _ = Rewriter.rewrite(docs[1][1], words, chars, keep=[pasted])
    assert kept.startswith(pasted) and kept != docs[1][1]
    # the same unit is swapped the same way everywhere, keeping its case
    for unit, new in words.items():
        assert len(new) == len(unit) and new[:1].isupper() == unit[:1].isupper()
