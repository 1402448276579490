"""Explorer helpers without Streamlit: plan shapes, cuts and escapes, the explore command's checks."""

from __future__ import annotations

import json

import pytest
from mixture.explorer.fmt import cut_text, md
from mixture.explorer.plan_view import PlanError, from_dict, load_plan
from typer.testing import CliRunner

from mixture.cli import app as cli_app
from mixture.explore_cli import streamlit_command


def test_mix_file_shape_computes_exposure():
    plan = from_dict({"available_tokens": {"c00q0": 100, "c00q1": 1000},
                      "phase0_weights": {"c00q0": 0.5, "c00q1": 0.5},
                      "phase1_weights": {"c00q0": 0.1, "c00q1": 0.9}, "phase_budgets": ["1K", 500]})
    assert [p.tokens for p in plan.phases] == [1000, 500]
    assert plan.exposure["c00q0"] == pytest.approx((1000 * 0.5 + 500 * 0.1) / 100)
    assert plan.exposure["c00q1"] == pytest.approx((1000 * 0.5 + 500 * 0.9) / 1000)
    assert plan.max_epochs == 8 and plan.over_cap() == []
    plan.max_epochs = 5
    assert plan.over_cap() == ["c00q0"]


def test_plan_errors_name_file_and_field(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"phases": [{"name": "a", "weights": {}}]}))
    with pytest.raises(PlanError, match=r"p\.json: phases\[0\]\.tokens: missing"):
        load_plan(bad)
    bad.write_text("{nope")
    with pytest.raises(PlanError, match="not valid JSON"):
        load_plan(bad)
    with pytest.raises(PlanError, match="no such plan file"):
        load_plan(tmp_path / "missing.json")


def test_warning_objects_become_text():
    plan = from_dict({"phases": [{"name": "p", "tokens": 10, "weights": {"c01q0": 1.0}}],
                      "warnings": [{"kind": "zero_sequences", "message": "no sequences", "cells": ["c01q0"]}]})
    assert plan.warnings == ["[zero_sequences] no sequences (c01q0)"]


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
    assert result.exit_code == 2 and "no phases found" in result.output
    cmd = streamlit_command(str(store), plan_file, 8599, "127.0.0.1")
    assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[4].endswith("app/main.py")
    assert cmd[cmd.index("--server.port") + 1] == "8599"
    assert cmd[cmd.index("--store") + 1] == str(store) and cmd[cmd.index("--plan") + 1] == str(plan_file)


def test_reads_the_real_planner_output(tmp_path):
    plan_mod = pytest.importorskip("mixture.planner.plan")
    from mixture.planner.counts import CellCount, Counts
    from mixture.planner.run import repair_plan

    sizes = {"c00q0": 10**6, "c00q1": 10**4, "c01q0": 2 * 10**6}
    cells = {n: CellCount(n, int(n[1:3]), int(n[4]), t) for n, t in sizes.items()}
    weights = {"c00q0": 0.3, "c00q1": 0.4, "c01q0": 0.3}
    inputs = plan_mod.PlanInputs(Counts(cells, "<test>", "csv", k=2), [plan_mod.PhaseInput("p0", 10**6, weights)],
                                 block_sequences=10, ladder=[{"name": "tiny", "tokens": 10**3}])
    plan = plan_mod.compute_plan(inputs)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    _, repaired = repair_plan(inputs, plan)
    if repaired is not None:
        (tmp_path / "plan.repaired.json").write_text(json.dumps(repaired))
    view = load_plan(path)
    assert [p.name for p in view.phases] == ["p0"] and view.phases[0].tokens == 10**6
    assert view.cell_tokens == sizes
    assert view.max_epochs == plan["exposure"]["cap"]
    assert set(view.over_cap()) == set(plan["exposure"]["over_cap"]) == {"c00q1"}
    assert view.exposure["c00q1"] == pytest.approx(0.4 * 10**6 / 10**4)
    assert any("c00q1" in w for w in view.warnings)
    ladder = view.ladder_frame()
    assert list(ladder["name"]) == ["tiny"] and "vanished cells" in ladder
    if repaired is not None:
        assert view.repaired is not None and view.repaired.over_cap() == []
