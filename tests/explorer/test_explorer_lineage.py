"""Lineage on the Search page, on a store built by the real pipeline: the checks a kept document passed with the
store's evidence, a dropped duplicate's kept twin as a link to its lineage, its detail in full, no pointless scan."""

from __future__ import annotations

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
    assert f"{info.dedup.fuzzy_threshold:.3f}" in evidence["near dedup"] or checks.result["near dedup"] == "exempt"
    assert info.decontamination.benchmarks[0].name in evidence["decontamination"]
    label = "exact" if row["reason"] == "exact_duplicate" else "near"
    dups = next(e for e in at.expander if e.label.endswith(f"{label} duplicates of it dropped"))
    assert any(row["id"] in p.proto.label for p in dups.get("page_link"))
