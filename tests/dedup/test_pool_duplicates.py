"""The realistic corpus (two `pool`-profile variants: copies across variants and sources, template families, chains)
built as the growth benchmark builds it: every named kept document kept, every near-duplicate drop verified at the
threshold against a kept document, every planted copy and family member gone, chains kept at every other link."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml

from bench import growth_bench, growth_corpus, pool_truth
from mixture.pipelines.build import build


@pytest.mark.slow
def test_the_pool_profile_duplicates_are_found_with_their_evidence(tmp_path):
    folders = growth_corpus.ensure_variants(tmp_path / "cache", 0, 0.02, [1, 2], log=lambda _: None,
                                            duplicates="pool")
    corpus = growth_corpus.assemble(tmp_path / "n002", [folders[1], folders[2]])
    args = argparse.Namespace(k=8, fine_k=32, tasks_per_variant=2, sample_docs=100)
    spec = growth_bench.growth_spec(corpus, 2, 2, args)
    assert spec["sources"][-1]["name"] == "web-crawl"
    spec["store"]["uri"] = str(tmp_path / "store")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(tmp_path / "spec.yaml"), workers=2, progress=False)

    t = pool_truth.check(tmp_path / "store", [folders[1], folders[2]])
    assert t["named_kept"] > 50 and t["named_kept_lost"] == 0, t["lost_examples"]
    assert t["fuzzy_drops"] > 50 and t["fuzzy_drops_unverified"] == 0, t["unverified_examples"]
    assert t["exact_copies"] == {"planted": t["exact_copies"]["planted"],
                                 "exact_duplicate": t["exact_copies"]["planted"]}
    assert t["near_copies"].get("fuzzy_duplicate", 0) >= 0.95 * t["near_copies"]["planted"]
    # LSH misses a family member now and then (1,477 of 1,486 found at scale 0.25); this small corpus reads the
    # installed packages, so a new dependency changes it: with magika and onnxruntime installed 43 of 46 are found
    assert t["family_members"].get("fuzzy_duplicate", 0) >= 0.9 * t["family_members"]["planted"]
    # a chain keeps its first link and every other one: its links two apart are not near duplicates
    assert t["chain_links"].get("kept", 0) >= 0.4 * t["chain_links"]["planted"]
    assert t["chain_links"].get("fuzzy_duplicate", 0) >= 0.4 * t["chain_links"]["planted"]
    assert 0.04 < t["duplicate_share"] < 0.2
    assert t["named_near_duplicates_in_source"] == []

    # a named original that its own source's text holds a verified near duplicate of (an unplanted document kept in
    # its place) is listed apart with its evidence; one dropped any other way is lost
    _, dropped = pool_truth.store_facts(tmp_path / "store")
    near = next(r for r in dropped["fuzzy_duplicate"] if r["source"] != "web-crawl" and "crawl" not in r["detail"])
    exact = next(r for r in dropped["exact_duplicate"] if r["source"] != "web-crawl")
    named = []
    for i, folder in enumerate((folders[1], folders[2])):
        truth = json.loads((folder / "ground_truth.json").read_text())
        if i == 1:
            truth["pool_kept"] += [{"id": near["id"], "why": "named here"}, {"id": exact["id"], "why": "named here"}]
        named.append(tmp_path / f"truth-{i}")
        named[-1].mkdir()
        (named[-1] / "ground_truth.json").write_text(json.dumps(truth))
    t = pool_truth.check(tmp_path / "store", named)
    assert [e["id"] for e in t["lost_examples"]] == [exact["id"]] and t["named_kept_lost"] == 1
    [listed] = t["named_near_duplicates_in_source"]
    assert listed["id"] == near["id"] and listed["near_duplicate_of"] in near["detail"]
    assert listed["jaccard"] >= t["threshold"]
