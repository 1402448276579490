"""A 200-cell Marin mix JSON: import -> plan -> export round trip, published-style exposure, every export format."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
import yaml
from planner_fixtures import marin_mix
from typer.testing import CliRunner

from mixture.cli import app
from mixture.planner.exports import export_plan
from mixture.planner.formats import parse_plan, read_plan
from mixture.planner.marin import inputs_from_marin, plan_to_marin
from mixture.planner.plan import compute_plan
from mixture.store.formats import dump


def test_marin_round_trip_through_the_cli(tmp_path: Path, marin_file: Path):
    runner = CliRunner()
    plan_path = tmp_path / "plan.json"
    res = runner.invoke(app, ["plan", str(marin_file), "--out", str(plan_path), "--batch-sequences", "11264",
                              "--train-steps", "390251"])
    assert res.exit_code in (0, 1), res.output
    plan = read_plan(str(plan_path))
    assert len(plan.cells) == 200 and [p.tokens for p in plan.phases] == [15 * 10**12, 375 * 10**10]
    assert [p.start_step for p in plan.phases] == [0, 312_192]
    out = tmp_path / "back.json"
    res = runner.invoke(app, ["export", str(plan_path), "--format", "marin", "--out", str(out)])
    assert res.exit_code == 0, res.output
    original = json.loads(marin_file.read_text())
    back = json.loads(out.read_text())
    assert back == original  # same content, values compared exactly
    assert list(back) == list(original)  # and the same key order
    assert list(back["phase0_weights"]) == list(original["phase0_weights"])
    # and again: the exported file plans to the same plan
    res = runner.invoke(app, ["plan", str(out), "--out", str(tmp_path / "plan2.json"), "--batch-sequences", "11264",
                              "--train-steps", "390251"])
    assert read_plan(str(tmp_path / "plan2.json")).plan_id == plan.plan_id


def test_exposure_from_the_mix_file_alone_matches_the_formula():
    mix = marin_mix()
    plan = compute_plan(inputs_from_marin(mix))
    total = sum(mix["available_tokens"].values())
    for row in plan.cells[:: 17]:
        c = row.cell
        expected = (15e12 * mix["phase0_weights"][c] + 3.75e12 * mix["phase1_weights"][c]) / mix["available_tokens"][c]
        assert row.exposure == pytest.approx(expected, rel=1e-12)
    # phase 0 is proportional: its share of every cell's exposure is 15T / total
    assert plan.exposure.proportional == pytest.approx(18.75e12 / total)
    top = plan.top_exposure[0]
    assert top.exposure == max(r.exposure for r in plan.cells)
    assert sum(r.phases["phase0"].tokens for r in plan.cells) == 15 * 10**12


def test_marin_export_keeps_budget_types_and_changed_weights():
    mix = marin_mix()
    plan = parse_plan(json.loads(dump(compute_plan(inputs_from_marin(mix)))), "plan.json")  # through the file
    assert plan_to_marin(plan)["phase_budgets"] == [15e12, 3.75e12]
    assert isinstance(plan_to_marin(plan)["phase_budgets"][0], float)
    plan.phases[1].tokens = 10**12
    assert plan_to_marin(plan)["phase_budgets"] == [15 * 10**12, 10**12]


def test_every_export_format(tmp_path: Path):
    mix = marin_mix()
    inputs = inputs_from_marin(mix)
    inputs.batch_sequences, inputs.train_steps = 11_264, 390_251
    inputs.validation = [{"name": "paloma", "uri": "gs://val/paloma"}]
    plan = parse_plan(json.loads(dump(compute_plan(inputs))), "plan.json")
    lev = yaml.safe_load(export_plan(plan, "levanter"))["data"]
    assert lev["mixture_block_size"] == 49_152
    assert [s[0] for s in lev["train_weights"]] == [0, 312_192]
    assert lev["train_weights"][1][1]["paloma"] == 0.0 and lev["components"]["paloma"]["validation"] is True
    assert math.fsum(lev["train_weights"][0][1].values()) == pytest.approx(1.0, abs=1e-9)
    assert lev["components"]["c07q3"]["source"] == "gs://bucket/store-v1/cluster=07/quality=3"
    olmo = json.loads(export_plan(plan, "olmo"))
    src = {s["source_name"]: s for s in olmo["phases"][0]["source_mixture_config"]["source_configs"]}
    assert src["c07q3"]["target_ratio"] == mix["phase0_weights"]["c07q3"]
    assert src["c07q3"]["max_repetition_ratio"] >= 1.0
    assert olmo["phases"][1]["source_mixture_config"]["requested_tokens"] == 375 * 10**10
    meg = export_plan(plan, "megatron").splitlines()
    assert meg[0].startswith("# phase phase0") and meg[1].startswith("--data-path ")
    assert len(meg[1].split()) == 1 + 2 * 200
    rows = list(csv.DictReader(io.StringIO(export_plan(plan, "csv"))))
    assert len(rows) == 200 * 2 + 2  # cells × phases + the validation set in each phase
    assert sum(int(r["tokens"]) for r in rows if r["phase"] == "phase1") == 375 * 10**10
    assert json.loads(export_plan(plan, "json")) == plan.model_dump(mode="json")
