"""Explorer helpers without Streamlit: plan shapes, cuts and escapes, the explore command's checks."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mixture.cli import app as cli_app
from mixture.explore_cli import streamlit_command
from mixture.explorer.fmt import cut_text, md
from mixture.explorer.plan_view import PlanError, from_dict, load_plan, view_of
from mixture.store.formats import dump


def _small_plan(ladder: bool = False):
    from mixture.planner.counts import CellCount, Counts
    from mixture.planner.plan import PhaseInput, PlanInputs

    sizes = {"c00q0": 10**6, "c00q1": 10**4, "c01q0": 2 * 10**6}
    cells = {n: CellCount(n, int(n[1:3]), int(n[4]), t) for n, t in sizes.items()}
    weights = {"c00q0": 0.3, "c00q1": 0.4, "c01q0": 0.3}
    return sizes, PlanInputs(Counts(cells, "<test>", "csv", k=2), [PhaseInput("p0", 10**6, weights)],
                             block_sequences=10, ladder=[{"name": "tiny", "tokens": 10**3}] if ladder else [])


def test_a_marin_mix_is_planned_by_the_planner():
    plan = from_dict({"available_tokens": {"c00q0": 100, "c00q1": 1000},
                      "phase0_weights": {"c00q0": 0.5, "c00q1": 0.5},
                      "phase1_weights": {"c00q0": 0.1, "c00q1": 0.9}, "phase_budgets": [1000, 500]})
    assert [p.tokens for p in plan.phases] == [1000, 500]
    assert plan.exposure["c00q0"] == pytest.approx((1000 * 0.5 + 500 * 0.1) / 100)
    assert plan.exposure["c00q1"] == pytest.approx((1000 * 0.5 + 500 * 0.9) / 1000)
    assert plan.max_epochs == 8 and plan.over_cap() == []
    assert plan.plan.kind == "mixture-plan" and plan.plan.marin is not None  # the planner's own conversion


def test_plan_errors_name_file_and_field(tmp_path):
    from mixture.planner.plan import compute_plan

    bad = tmp_path / "p.json"
    data = compute_plan(_small_plan()[1]).model_dump(mode="json")
    data["phases"][0]["tokens"] = "lots"
    del data["settings"]["max_epochs"]
    bad.write_text(json.dumps(data))
    with pytest.raises(PlanError) as exc:
        load_plan(bad)
    assert f"{bad}: phases[0].tokens: Input should be a valid integer, found 'lots'" in str(exc.value)
    assert f"{bad}: settings.max_epochs: required field is missing" in str(exc.value)
    bad.write_text("{nope")
    with pytest.raises(PlanError, match="not valid JSON"):
        load_plan(bad)
    with pytest.raises(PlanError, match="no such plan file"):
        load_plan(tmp_path / "missing.json")


def test_a_hand_written_alias_plan_is_refused_with_how_to_write_one(tmp_path):
    alias = tmp_path / "mine.json"
    alias.write_text(json.dumps({"plan": {"phases": [{"name": "a", "budget": "1K", "weights": {"c00q0": 1.0}}]},
                                 "cells": {"c00q0": {"available": 10, "epochs": 3.0}}, "epoch_cap": 4}))
    with pytest.raises(PlanError) as exc:
        load_plan(alias)
    msg = str(exc.value)
    assert f"{alias}: kind: expected a plan written by `mixture plan` (kind: mixture-plan)" in msg
    assert "mixture plan SPEC --out plan.json" in msg


def test_warnings_keep_their_codes():
    from mixture.planner.plan import compute_plan

    plan = compute_plan(_small_plan()[1])
    view = view_of(plan)
    assert view.warnings == [f"[{w.code}] {w.message}" for w in plan.warnings]
    assert any(w.startswith("[over_cap] ") and "c00q1" in w for w in view.warnings)


def test_cut_and_escape():
    text = "word " * 400
    shown, cut = cut_text(text)
    assert cut and len(shown) <= 902 and shown.endswith(" …")
    assert cut_text("short") == ("short", False)
    assert md("<b>*x*</b> $1") == r"\<b\>\*x\*\<\/b\> \$1".replace(r"\/", "/")


def test_explore_command_checks_inputs(tmp_path, store, plan_file):
    runner = CliRunner()
    result = runner.invoke(cli_app, ["explore", "--help"])
    assert result.exit_code == 0 and "--plan" in result.output
    result = runner.invoke(cli_app, ["explore", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "does not exist" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = runner.invoke(cli_app, ["explore", str(store), "--plan", str(bad)])
    assert result.exit_code == 2 and "expected a plan written by `mixture plan`" in result.output
    cmd = streamlit_command(str(store), plan_file, 8599, "127.0.0.1")
    assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[4].endswith("app/serve.py")
    assert cmd[cmd.index("--server.port") + 1] == "8599"
    assert cmd[cmd.index("--client.toolbarMode") + 1] == "minimal"  # no "Deploy" button
    assert cmd[cmd.index("--store") + 1] == str(store) and cmd[cmd.index("--plan") + 1] == str(plan_file)


def test_reads_the_real_planner_output(tmp_path):
    from mixture.planner.formats import plan_content_id
    from mixture.planner.plan import compute_plan
    from mixture.planner.run import repair_plan

    sizes, inputs = _small_plan(ladder=True)
    plan = compute_plan(inputs)
    path = tmp_path / "plan.json"
    path.write_text(dump(plan))
    _, repaired = repair_plan(inputs, plan)
    (tmp_path / "plan.repaired.json").write_text(dump(repaired))
    view = load_plan(path)
    assert [p.name for p in view.phases] == ["p0"] and view.phases[0].tokens == 10**6
    assert view.cell_tokens == sizes
    assert view.max_epochs == plan.settings.max_epochs == plan.exposure.cap
    assert set(view.over_cap()) == set(plan.exposure.over_cap) == {"c00q1"}
    assert view.exposure == {c.cell: c.exposure for c in plan.cells}  # as the planner wrote it
    ladder = view.ladder_frame()
    assert list(ladder["name"]) == ["tiny"] and list(ladder["cells cut to zero"]) == [len(plan.ladder[0].vanished)]
    frame = view.frame().set_index("cell")
    assert frame.loc["c00q1", "tokens p0"] == plan.cell_map()["c00q1"].phases["p0"].tokens
    assert view.repaired is not None and view.repaired.over_cap() == []
    # a repaired plan of another plan beside it is not shown as this plan's repair
    other = compute_plan(_small_plan()[1])
    other.settings.seed += 1  # another plan (its id is its content's)
    other.plan_id = plan_content_id(other)
    (tmp_path / "other.json").write_text(dump(other))
    (tmp_path / "other.repaired.json").write_text(dump(repaired))
    assert load_plan(tmp_path / "other.json").repaired is None


def test_page_icon_is_drawn_locally():
    """An emoji favicon becomes a data: URL in the browser; a :material/…: one is fetched from fonts.gstatic.com."""
    from streamlit.commands.page_config import _get_favicon_string

    from mixture.explorer import MAIN, config

    assert _get_favicon_string(config.PAGE_ICON).startswith("emoji:")
    assert "page_icon=config.PAGE_ICON" in MAIN.read_text()


def test_diff_heatmap_draws_cells_empty_in_both_grey_with_a_legend_entry():
    """Issue 16: the Diff heatmap drew cells empty in both stores as unexplained black bars (nothing drawn)."""
    import pandas as pd

    from mixture.explorer import charts

    df = pd.DataFrame({"cell": ["c00q0", "c01q1"], "cluster": [0, 1], "quality": [0, 1], "delta": [5.0, -3.0]})
    spec = charts.diverging_heatmap(df, "delta").to_dict()
    data = {name: rows for name, rows in spec["datasets"].items()}
    empty_layer = spec["layer"][1]
    rows = data[empty_layer["data"]["name"]]
    assert sorted(r["cell"] for r in rows) == ["c00q1", "c01q0"] and {r["what"] for r in rows} == {"empty in both"}
    assert empty_layer["encoding"]["color"]["scale"] == {"domain": ["empty in both"], "range": [charts.EMPTY_COLOR]}
    assert spec["resolve"]["scale"]["color"] == "independent"  # its own legend entry beside the delta scale


def test_chart_text_colour_follows_the_theme():
    from mixture.explorer import charts

    assert charts.text_color("dark") == "#fafafa" and charts.text_color("light") == charts.text_color(None)
    funnel = charts.funnel([("records in", 10), ("records out", 8)], charts.text_color("dark")).to_dict()
    assert funnel["layer"][1]["mark"]["color"] == "#fafafa"


def test_token_heatmap_legend_labels_each_tick_as_the_pages_write_tokens():
    """Vega's SI format gave every legend label the largest value's prefix ('0M 0M 0.1M 1M')."""
    import pandas as pd

    from mixture.composition import numbers
    from mixture.explorer import charts

    cells = pd.DataFrame({"cell": ["c00q0", "c00q1", "c01q0", "c01q1"], "cluster": [0, 0, 1, 1],
                          "quality": [0, 1, 0, 1], "tokens": [2_500, 40_000, 900_000, 3_100_000],
                          "docs": [1, 2, 3, 4], "share_of_corpus": [0.1, 0.2, 0.3, 0.4], "label": ["a", "a", "b", "b"]})
    spec = charts.cell_heatmap(cells, ["junk", "low"]).to_dict()
    legend = spec["encoding"]["color"]["legend"]  # every cell holds tokens: one layer
    assert legend["values"] == [10_000.0, 100_000.0, 1_000_000.0]
    expr = legend["labelExpr"]
    for v in legend["values"]:
        assert f"datum.value == {v!r} ? {json.dumps(numbers.tokens(v))}" in expr
    assert [numbers.tokens(v) for v in legend["values"]] == ["10.0K", "100K", "1.00M"]


@pytest.mark.parametrize(("path", "query", "prefix", "target"), [
    ("/store", "", "", "/?page=store"),
    ("/search", "doc=a%20b&q=x+y", "", "/?page=search&doc=a%20b&q=x+y"),  # the query kept byte for byte
    ("/diff/", "", "", "/?page=diff"),
    ("/store", "page=mixture", "", "/?page=mixture"),  # a page the query names wins, as in main.py
    ("/mixture/live", "", "/mixture", "/mixture?page=live"),  # under a base URL path
    ("/mixture", "", "/mixture", None),  # the root under a base URL path, not the Mixture page
    ("/", "", "", None), ("/_stcore/health", "", "", None), ("/store/_stcore/health", "", "", None),
    ("/static/js/x.js", "", "", None), ("/overview", "", "", None), ("/Store", "", "", None)])
def test_a_page_path_leads_to_the_apps_root(path, query, prefix, target):
    from mixture.explorer.page_paths import root_target

    assert root_target(path, query, prefix) == target


def test_page_paths_are_main_pys_pages():
    import re

    from mixture.explorer import MAIN
    from mixture.explorer.page_paths import PAGE_PATHS

    assert tuple(re.findall(r'url_path="(\w+)"', MAIN.read_text())) == PAGE_PATHS
