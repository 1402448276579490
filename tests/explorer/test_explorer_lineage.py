"""Lineage on the Search page, on a store built by the real pipeline: the checks a kept document passed with the
store's evidence, a dropped duplicate's kept twin as a link to its lineage, its detail in full, no pointless scan."""

from __future__ import annotations

import json
import shutil

import pytest

from mixture import accounting
from mixture.accounting import StoreReader
from mixture.explorer.lineage import twin
from tests.explorer.apptest_util import run, unescape

pytestmark = pytest.mark.slow


@pytest.fixture
def built_env(monkeypatch, built_store):
    monkeypatch.setenv("MIXTURE_STORE", str(built_store.store))
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    monkeypatch.setenv("MIXTURE_SHARE", "0")
    return built_store


def _duplicate(built_store):
    """(dropped row, kept twin id) of a dropped duplicate whose kept document is sampled (its lineage has fields)."""
    reader = StoreReader(str(built_store.store))
    sampled = set(accounting.samples(reader, "uniform").id)
    rows = accounting.dropped(reader)
    for r in rows.to_dict("records"):
        kept = twin(r["reason"], r["detail"])
        if kept in sampled:
            return r, kept
    pytest.fail("the built store has no dropped duplicate of a sampled document")


def _links(at) -> list[tuple[str, str]]:
    return [(unescape(p.proto.label), p.proto.page) for p in at.get("page_link")]


def test_a_dropped_duplicate_links_to_its_kept_twin(built_env):
    row, kept = _duplicate(built_env)
    at = run("search", doc=row["id"])
    assert len(at.error) == 1 and "**Dropped**" in at.error[0].value
    assert unescape(next(m.value for m in at.markdown if "'" in m.value)) == row["detail"]  # in full, never cut
    links = [p for p in at.get("page_link") if kept in p.proto.label]
    assert len(links) == 1 and f"doc={kept}".replace("/", "%2F") in links[0].proto.query_string.replace("/", "%2F")
    assert not any(b.label.startswith("Look the id up") for b in at.button)  # it was dropped: a scan finds nothing


def test_a_kept_document_lists_the_checks_it_passed(built_env):
    row, kept = _duplicate(built_env)
    info = built_env.artifact
    at = run("search", doc=kept)
    assert [unescape(s.value) for s in at.success][0].startswith("**Kept** in cell")
    checks = next(t.value for t in at.table if t.value.index.name == "check")
    assert list(checks.index) == ["quality gates", "exact dedup", "near dedup", "decontamination"]
    assert set(checks.result) <= {"passed", "exempt"}
    evidence = {k: unescape(v) for k, v in checks.evidence.items()}
    for gate in info.filtered_by_reason:  # the gates of this build, from store.json
        assert gate in evidence["quality gates"]
    assert f"{info.near_duplicates.threshold:.3f}" in evidence["near dedup"] or checks.result["near dedup"] == "exempt"
    assert info.decontamination.benchmarks[0].name in evidence["decontamination"]
    label = "exact" if row["reason"] == "exact_duplicate" else "near"
    dups = next(e for e in at.expander if e.label.endswith(f"{label} duplicates of it dropped"))
    assert any(row["id"] in p.proto.label for p in dups.get("page_link"))


NEAR_DUPLICATES = {"measure": "word 5-gram Jaccard", "threshold": 0.5, "anchors": 8, "signature_margin": 0.2673,
                   "band_pairs": 9, "buckets": 3, "documents": 6, "pairs_considered": 4, "pairs_ruled_out": 0,
                   "pairs_compared": 4, "pairs_verified": 3, "pairs_rejected": 1, "drops": 3, "kept_similar": 0}


@pytest.mark.parametrize("report", [True, False])
def test_near_dedup_cites_the_threshold_the_pairs_were_verified_against(tmp_path, monkeypatch, store, report):
    """The spec sets processing.dedup.fuzzy.threshold 0.5: the verification compared the pairs against 0.5, not
    against the LSH threshold (0.719 for 14 bands of 8 rows), and the page says so (store.json's near-duplicate
    report, else the spec's threshold it records)."""
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    info = json.loads((copy / "store.json").read_text())
    info["dedup"] = {"exact": True, "fuzzy": {"enabled": True, "permutations": 112, "bands": 14, "ngram": 5, "seed": 1,
                                              "threshold": 0.5}, "fuzzy_threshold": 0.719}
    if report:
        info["near_duplicates"] = NEAR_DUPLICATES
    (copy / "store.json").write_text(json.dumps(info))
    monkeypatch.setenv("MIXTURE_STORE", str(copy))
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    monkeypatch.setenv("MIXTURE_SHARE", "0")
    kept = accounting.samples(StoreReader(str(copy)), "uniform").id.iloc[-1]
    at = run("search", doc=kept)
    checks = next(t.value for t in at.table if t.value.index.name == "check")
    near = unescape(checks.evidence["near dedup"])
    assert checks.result["near dedup"] == "passed"
    assert "5-gram Jaccard ≥ 0.500" in near and "0.719" not in near


def test_a_dropped_duplicates_twin_opens_directly_with_the_dropped_documents_own_fields(built_env):
    """The kept twin opens by id (the shards' footer id ranges, no scan) even when it is not sampled; the dropped
    document shows what `_dropped/` keeps of it: source, origin, characters, the head of its text."""
    reader = StoreReader(str(built_env.store))
    sampled = set(accounting.samples(reader, "uniform").id) | set(accounting.samples(reader, "exemplars").id)
    rows = accounting.dropped(reader)
    pairs = [(r, twin(r["reason"], r["detail"])) for r in rows.to_dict("records")]
    # an exact duplicate's twin can itself go later as a near duplicate (a chain through `_dropped/`): take a kept one
    gone = set(rows.id)
    row, kept = next(((r, k) for r, k in pairs if k and k not in sampled and k not in gone), (None, None))
    if row is None:
        pytest.skip("every kept twin of the built store is sampled")
    at = run("search", doc=row["id"])
    fields = next(d.value for d in at.dataframe if "field" in d.value).set_index("field").value
    assert fields["source"] == row["source"] and fields["origin"] == row["origin"]
    assert fields["n_chars"] == f"{row['n_chars']:,}" and fields["reason"] == row["reason"]
    assert any(c.value == row["text_head"] for c in at.code)
    at = run("search", doc=kept)  # the link's target: found through the footers, no scan button, no warning
    where = accounting.find_document(reader, kept)
    assert len(where) == 1
    assert [unescape(s.value) for s in at.success] == [
        f"**Kept** in cell `c{int(where.cluster[0]):02d}q{int(where.quality[0])}`"]
    assert not at.warning and not any(b.label.startswith("Look the id up") for b in at.button)
    assert any(c.value.startswith(str(where.text[0])[:200].rsplit(" ", 1)[0]) for c in at.code)


def test_find_document_reads_only_the_row_groups_that_may_hold_it(built_store):
    reader = StoreReader(str(built_store.store))
    ranges = accounting.id_ranges(reader)
    every = accounting.scan_documents(reader, limit=10**9).hits
    assert len(every) > 50
    for r in every.iloc[::max(1, len(every) // 40)].itertuples():
        assert len(ranges.holding(r.id)) < len(ranges.groups)  # not every row group
        found = accounting.find_document(reader, r.id, ranges)
        assert list(found.id) == [r.id] and (found.cluster[0], found.quality[0]) == (r.cluster, r.quality)
        assert found.text[0] == r.text
    assert accounting.find_document(reader, "no-such-id", ranges).empty
