"""Store, Mixture, Diff, Search, Map and Live build pages in AppTest, on the synthetic stores and plan."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

from mixture.composition import numbers
from mixture.planner.formats import Plan, plan_content_id, read_plan
from mixture.store import drops
from mixture.store.formats import StoreVersionError, dump
from tests.explorer.apptest_util import chart_frames, run, shown, unescape
from tests.explorer.synthstore import SCRIPT_DOC, build_plan


def test_page_query_param_selects_page(app_env):
    for page, header in (("store", "Store"), ("mixture", "Mixture"), ("map", "Map"), ("live", "Live build")):
        at = run(page)
        assert at.header[0].value == header
        assert at.query_params["page"] in (page, [page])


def test_store_page_heatmap_funnel_sources(app_env, artifact):
    at = run("store")
    frames = chart_frames(at)
    heat = frames[0][0]
    assert heat.tokens.sum() == artifact["counters"]["tokens_out"]
    assert heat.docs.sum() == artifact["counters"]["records_out"]
    funnel = frames[1][0]
    c = artifact["counters"]
    assert funnel.records.iloc[0] == c["records_in"]
    assert funnel.records.iloc[-1] == c["records_out"] == funnel.records.iloc[-2]
    assert not at.error  # the counters reconcile
    sources = shown(at.dataframe[0])
    assert set(sources.name) == {s["name"] for s in artifact["sources"]}
    assert sorted(sources.tokens_kept) == sorted(numbers.tokens(s["tokens_kept"]) for s in artifact["sources"])
    # the drops per source in a table of their own (one table with every column did not fit the page), a column
    # per drop reason of the registry, labelled by it
    dropped = shown(at.dataframe[1])
    assert list(dropped.name) == list(sources.name)
    assert [col for col in dropped.columns if col in drops.BY_COUNTER] == list(drops.COUNTERS)
    labels = {k: v["label"] for k, v in json.loads(at.dataframe[1].proto.columns).items() if "label" in v}
    assert labels == {r.counter: r.label for r in drops.REASONS}
    assert [s for s in funnel.stage if s.startswith("after ")] == [
        f"after {r.label}" for r in drops.REASONS]
    by_reason = at.dataframe[2].value  # every by-reason breakdown store.json holds
    assert {(r.counter, r.reason): r.records for r in by_reason.itertuples()} == {
        (r.counter, k): v for r in drops.REASONS if r.breakdown for k, v in artifact[r.breakdown[1]].items()}
    mix = chart_frames(at)[-1][0]  # estimated content-type mix spreads every cell's tokens
    assert mix.tokens.sum() == pytest.approx(c["tokens_out"])


def test_a_store_json_that_does_not_match_its_format_is_named_not_shown(app_env, monkeypatch, store, tmp_path):
    bad = tmp_path / "store"
    shutil.copytree(store, bad)
    art = json.loads((bad / "store.json").read_text())  # a file no model can write: edited as raw JSON
    art["counters"]["tokens_out"] = "many"
    (bad / "store.json").write_text(json.dumps(art))
    monkeypatch.setenv("MIXTURE_STORE", str(bad))
    for page in ("overview", "store", "map", "search"):
        at = run(page)
        assert "does not match its format" in at.error[0].value, page
        assert "store.json: counters.tokens_out: Input should be a valid integer, found 'many'" in at.code[0].value
        assert not at.metric and not at.dataframe  # nothing of the store is drawn
    at = run("mixture")  # the plan is still shown, without the comparison with the store
    assert at.header[0].value == "Mixture" and "counters.tokens_out:" in unescape(at.warning[0].value)


def test_a_store_of_another_format_version_is_refused_with_how_to_rebuild_it(app_env, monkeypatch, store, tmp_path):
    old = tmp_path / "store"
    shutil.copytree(store, old)
    art = json.loads((old / "store.json").read_text())
    art["format_version"] = 1
    (old / "store.json").write_text(json.dumps(art))
    monkeypatch.setenv("MIXTURE_STORE", str(old))
    for page in ("overview", "store", "map", "search"):
        at = run(page)
        assert StoreVersionError("", 1).refusal in at.error[0].value, page
        assert not at.metric and not at.dataframe  # nothing of the store is drawn


def test_store_page_exact_content_types(app_env, store):
    at = run("store")
    at.toggle(key="ct_exact").set_value(True).run()
    mix = shown(at.dataframe[-1])
    import pandas as pd

    docs = pd.concat(pq.read_table(p).to_pandas() for p in store.glob("cluster=*/quality=*/*.parquet"))
    expected = docs.groupby("content_type").n_tokens.sum().to_dict()
    assert dict(zip(mix.content_type, mix.tokens, strict=True)) == {t: numbers.count(n) for t, n in expected.items()}


def _over_cap_tables(at):
    """The over-cap lists of the page (columns cell, exposure): the plan's, then the repaired plan's."""
    return [shown(d) for d in at.dataframe if list(d.value.columns) == ["cell", "exposure"]]


def over_cap_cells(plan: Plan) -> set[str]:
    return {c.cell for c in plan.cells if c.exposure is None or c.exposure > plan.settings.max_epochs}


def test_mixture_page_lists_exactly_the_over_cap_cells(app_env, plan_file):
    plan = read_plan(str(plan_file))
    over = over_cap_cells(plan)
    assert over and over == set(plan.exposure.over_cap)  # the fixture plan has some
    at = run("mixture")
    listed = _over_cap_tables(at)[0]
    assert set(listed.cell) == over and len(listed) == len(over)
    msg = at.error[0].value
    assert msg.startswith(f"{len(over)} cells over the cap")
    assert {c.cell for c in plan.cells if c.cell in msg} == over
    assert {m.label: m.value for m in at.metric}["cells over the cap"] == str(len(over))
    warnings = [unescape(w.value) for w in at.warning]
    assert plan.warnings
    for w in plan.warnings:
        assert f"[{w.code}] {w.message}" in warnings
    cut = [w for w in plan.warnings if "(+" in w.message]  # '… (+2)': the rest of the cells one click away
    assert cut
    for w in cut:
        listed = next(e for e in at.expander if e.label == f"All {len(w.cells)} cells of this warning")
        assert listed.markdown[0].value == ", ".join(f"`{c}`" for c in w.cells)
    bars = chart_frames(at)[0]
    data = bars[0]
    assert set(data[data.over_cap].cell) == over
    assert bars[1].cap.iloc[0] == plan.settings.max_epochs
    ladder = shown(at.dataframe[-1])
    assert list(ladder.name) == ["tiny", "small"]
    cut = []
    rungs = {r.name: r.tokens for r in plan.ladder}
    assert list(ladder.tokens) == [numbers.tokens(rungs[n]) for n in ladder.name]  # 1.00M, not 1000000
    for row in ladder.to_dict("records"):  # ⌊N_c·X/T⌋ = 0 for a cell with weight
        zero = [c.cell for c in plan.cells if c.available_tokens * rungs[row["name"]] // plan.budget == 0
                and any(p.weights[c.cell] > 0 for p in plan.phases)]
        assert row["cells cut to zero"] == numbers.count(len(zero))
        cut.append(len(zero))
    assert cut[0] > 0 and cut[1] == 0


def test_mixture_page_shows_repaired_plan(app_env, monkeypatch, store, tmp_path):
    path = tmp_path / "plan.json"
    plan = build_plan(path, store, repaired=True)  # plan.json and plan.repaired.json, as `mixture plan --out` writes
    monkeypatch.setenv("MIXTURE_PLAN", str(path))
    at = run("mixture")
    assert any(s.value == "Repaired plan beside the original" for s in at.subheader)
    [original] = _over_cap_tables(at)  # the repaired plan has no cell over the cap: a message, no empty table
    assert len(original) == len(over_cap_cells(plan))
    assert any("No cell is over the cap" in s.value for s in at.success)
    assert all(len(d.value) for d in at.dataframe)


def test_mixture_page_without_plan(monkeypatch, store):
    monkeypatch.setenv("MIXTURE_STORE", str(store))
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    at = run("mixture")
    assert "No plan loaded" in at.info[0].value


def test_diff_page_two_stores(app_env, store_b, artifact):
    at = run("diff")
    at.text_input(key="diff_b").input(str(store_b)).run()
    b = json.loads((store_b / "store.json").read_text())
    a_cells = {c["cell"]: c["tokens"] for c in artifact["cells"]}
    b_cells = {c["cell"]: c["tokens"] for c in b["cells"]}
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["cells added"] == str(len(set(b_cells) - set(a_cells)))
    assert metrics["cells removed"] == str(len(set(a_cells) - set(b_cells)))
    assert metrics["cells changed"] == str(sum(1 for c in a_cells if c in b_cells and a_cells[c] != b_cells[c]))
    table = at.dataframe[0].value.set_index("cell")  # numbers: the table sorts by value
    text = shown(at.dataframe[0]).set_index("cell")  # written as every page writes tokens (no 334476)
    assert table["tokens A"].dtype.kind in "iuf" and table["delta"].dtype.kind in "iuf"
    for c in b_cells:
        assert table.loc[c, "delta"] == b_cells[c] - a_cells.get(c, 0)
        assert text.loc[c, "tokens B"] == numbers.tokens(b_cells[c])
        assert text.loc[c, "delta"] == numbers.tokens(b_cells[c] - a_cells.get(c, 0))
    heat = chart_frames(at)[0][0]
    assert heat.delta.sum() == sum(b_cells.values()) - sum(a_cells.values())


def test_diff_page_two_plans(app_env, plan_file, tmp_path):
    plan = read_plan(str(plan_file))
    other = plan.model_copy(deep=True)  # another valid plan: c04q4's weight and tokens moved to c00q0
    gone = other.cell_map()["c04q4"]
    other.cells = [c for c in other.cells if c.cell != "c04q4"]
    keep = other.cell_map()["c00q0"]
    for ph in other.phases:
        ph.weights["c00q0"] += ph.weights.pop("c04q4")
        keep.phases[ph.name].weight = ph.weights["c00q0"]
        keep.phases[ph.name].tokens += gone.phases[ph.name].tokens
    keep.exposure = 3.0
    other.plan_id = plan_content_id(other)
    p2 = tmp_path / "p2.json"
    p2.write_text(dump(other))
    at = run("diff")
    at.segmented_control(key="diff_mode").set_value("two plans").run()
    at.text_input(key="diff_plan_b").input(str(p2)).run()
    table = at.dataframe[0].value.set_index("cell")
    delta = 3.0 - plan.cell_map()["c00q0"].exposure
    assert table.loc["c00q0", "delta"] == pytest.approx(delta)
    assert shown(at.dataframe[0]).set_index("cell").loc["c00q0", "delta"] == numbers.epochs(delta)
    assert table.loc["c04q4", "status"] == "removed"
    assert {m.label: m.value for m in at.metric}["cells changed"] == "1"


def test_search_page_filters_samples_and_shows_lineage(app_env, store, artifact, plan_file):
    at = run("search", q="alert(1)")
    hits = shown(at.dataframe(key="search_hits"))
    assert len(hits) == 1 and hits.cell.iloc[0] == "c01q2"
    at.multiselect[0].set_value(["stdlib-code"]).run()  # source facet
    sampled = pq.read_table(store / "_samples/uniform.parquet").to_pandas()
    script_source = sampled[sampled.text == SCRIPT_DOC].source.iloc[0]
    assert len(shown(at.dataframe(key="search_hits"))) == (1 if script_source == "stdlib-code" else 0)

    kept_and_dropped = sampled.sort_values(["cluster", "quality", "rank"]).id.iloc[0]
    at = run("search", doc=kept_and_dropped)
    assert [unescape(e.value) for e in at.success] == [f"**Kept** in cell `{cell_of(sampled, kept_and_dropped)}`"]
    assert [unescape(e.value).split(" · ")[1] for e in at.error] == ["exact duplicate"]  # its registry label
    assert any(m.value == "exact\\_duplicate detail 0" for m in at.markdown)  # the detail in full
    tables = [d.value for d in at.dataframe]
    fields = next(t for t in tables if "field" in t).set_index("field").value
    row = sampled[sampled.id == kept_and_dropped].iloc[0]
    assert fields["origin"] == row.origin and fields["cell"] == f"c{row.cluster:02d}q{row.quality}"
    assert list(fields.index[:3]) == ["cell", "domain", "quality bucket"]  # first: never below the table's fold
    phases = next(t for t in tables if "phase" in t)
    plan = read_plan(str(plan_file))
    cell = fields["cell"]
    assert list(phases.phase) == [p.name for p in plan.phases if p.weights.get(cell, 0) > 0]

    at = run("search", doc="web-crawl/dropped-contaminated.jsonl/0")
    assert [unescape(e.value).split(" · ")[:2] for e in at.error] == [["**Dropped**", "contaminated"]]
    assert not at.success and not any(b.label.startswith("Look the id up") for b in at.button)  # no pointless scan


def cell_of(sampled, doc_id: str) -> str:
    row = sampled[sampled.id == doc_id].iloc[0]
    return f"c{row.cluster:02d}q{row.quality}"


def test_search_page_full_scan(app_env):
    at = run("search", q="TAILMARKER")
    assert len(shown(at.dataframe(key="search_hits"))) == 1  # the long document is sampled
    at = run("search", q="vote minutes")
    n_sampled = len(shown(at.dataframe(key="search_hits")))
    next(b for b in at.button if b.label == "Scan the whole store").click().run()
    scanned = shown(at.dataframe(key="search_hits"))
    assert len(scanned) > n_sampled and set(scanned["sample"]) == {"scan"}
    assert "documents in the store (scan)" in at.caption[0].value


def test_map_page_projects_centroids_and_falls_back(app_env, artifact, monkeypatch, store_b):
    at = run("map")
    assert "centroids.npz" in at.caption[0].value
    points = chart_frames(at)[0][0]
    assert sorted(points.id) == [c["id"] for c in artifact["clusters"]]
    assert points.tokens.sum() == artifact["counters"]["tokens_out"]
    assert points.mean_quality.between(0, 4).all()
    monkeypatch.setenv("MIXTURE_STORE", str(store_b))  # no _model/: TF-IDF of the sampled text
    at = run("map")
    assert "TF-IDF" in at.caption[0].value
    assert len(chart_frames(at)[0][0]) == 6


def test_live_build_page_on_a_building_store(monkeypatch, building_store):
    monkeypatch.setenv("MIXTURE_STORE", str(building_store))
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    at = run()  # the overview of a building store switches to Live build
    assert at.header[0].value == "Live build"
    texts = [p.proto.text for p in at.get("progress")]
    assert "read: 2/2 tasks · stopped" in texts or "read: 2/2 tasks · done" in texts
    assert any(t.startswith("write: 0/3 tasks") for t in texts)
    ledgers = [json.loads(p.read_text()) for p in building_store.glob("cluster=*/quality=*/_ledger.json")]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["rows so far"] == f"{sum(led['total_num_rows'] for led in ledgers):,}"
    table = at.dataframe[0].value  # numbers, shown as counts and token amounts (no 1179671)
    assert list(shown(at.dataframe[0]).tokens) == [numbers.tokens(t) for t in table.tokens]
    assert table.rows.sum() == sum(led["total_num_rows"] for led in ledgers)
    assert table.tokens.sum() == sum(led["total_tokens"] for led in ledgers)
    assert metrics["exact duplicate"] == "6" and metrics["bad input"] == "2"


def test_search_page_names_a_shard_changed_after_the_build(app_env, monkeypatch, store, tmp_path):
    """A document opened by id and the whole-store scan check the shards they read against their ledger: a flipped
    bit stops the page with the shard's name and `mixture audit`, and no text of it is shown."""
    damaged = tmp_path / "store"
    shutil.copytree(store, damaged)
    sampled = {i for kind in ("uniform", "exemplars") if (damaged / f"_samples/{kind}.parquet").exists()
               for i in pq.read_table(damaged / f"_samples/{kind}.parquet", columns=["id"]).column("id").to_pylist()}
    shard, doc_id = next((f, i) for f in sorted(damaged.glob("cluster=*/quality=*/*.parquet"))
                         for i in pq.read_table(f, columns=["id"]).column("id").to_pylist() if i not in sampled)
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x10
    shard.write_bytes(bytes(data))
    monkeypatch.setenv("MIXTURE_STORE", str(damaged))
    rel = shard.relative_to(damaged).as_posix()
    at = run("search", doc=doc_id)
    assert any(rel in e.value and "mixture audit" in e.value for e in at.error), [e.value for e in at.error]
    at = run("search", q="the")
    next(b for b in at.button if b.label == "Scan the whole store").click().run()
    assert any(rel in e.value and "mixture audit" in e.value for e in at.error), [e.value for e in at.error]
