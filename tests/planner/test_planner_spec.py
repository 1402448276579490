"""The `mixture:` section: weight forms, validation errors, spec loading and the `mixture plan` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app
from mixture.planner.counts import PlanInputError
from mixture.planner.formats import parse_plan, read_plan
from mixture.planner.inputs import build_inputs, load_planning_spec
from mixture.spec.mixture_section import MixtureSection

COUNTS = "cell,tokens,docs\nc00q0,1000,10\nc00q1,3000,30\nc01q0,4000,40\nc01q1,2000,20\n"


def write_spec(tmp_path: Path, mixture: dict, counts: str = COUNTS) -> tuple[Path, Path]:
    (tmp_path / "counts.csv").write_text(counts)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "t", "sources": [{"name": "s", "uri": "corpus", "format": "jsonl"}],
                                    "store": {"uri": "store"}, "mixture": mixture}))
    return spec, tmp_path / "counts.csv"


def plan_weights(tmp_path: Path, mixture: dict) -> list[dict[str, float]]:
    spec, counts = write_spec(tmp_path, mixture)
    inputs = build_inputs(load_planning_spec(str(spec)), str(counts))
    return [p.weights for p in inputs.phases]


def test_weight_forms(tmp_path: Path):
    (w,) = plan_weights(tmp_path, {"budget": "10K", "phases": [{"name": "a", "weights": "proportional"}]})
    assert w == pytest.approx({"c00q0": 0.1, "c00q1": 0.3, "c01q0": 0.4, "c01q1": 0.2})
    (w,) = plan_weights(tmp_path, {"budget": "10K", "phases": [{"name": "a", "weights": {"temperature": 0.5}}]})
    roots = {"c00q0": 1000**0.5, "c00q1": 3000**0.5, "c01q0": 4000**0.5, "c01q1": 2000**0.5}
    assert w == pytest.approx({c: r / sum(roots.values()) for c, r in roots.items()})
    mult = {"multipliers": {"base": "uniform", "clusters": {1: 2.0}, "quality": {0: 0.0}}}
    (w,) = plan_weights(tmp_path, {"budget": "10K", "phases": [{"name": "a", "weights": mult}]})
    assert w == pytest.approx({"c00q0": 0.0, "c00q1": 1 / 3, "c01q0": 0.0, "c01q1": 2 / 3})
    (tmp_path / "w.json").write_text(json.dumps({"c00q0": 0.25, "c00q1": 0.25, "c01q0": 0.25, "c01q1": 0.25}))
    (w,) = plan_weights(tmp_path, {"budget": "10K", "phases": [{"name": "a", "weights": {"file": "w.json"}}]})
    assert w == {"c00q0": 0.25, "c00q1": 0.25, "c01q0": 0.25, "c01q1": 0.25}


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        ({"c00q0": 0.5, "c00q1": 0.5, "c01q0": 0.0, "c01q1": 0.0, "c09q0": 0.0}, r"unknown cells \['c09q0'\]"),
        ({"c00q0": 0.5, "c00q1": 0.5}, r"missing weights for 2 cells \['c01q0', 'c01q1'\]"),
        ({"c00q0": 0.5, "c00q1": 0.6, "c01q0": 0.0, "c01q1": 0.0}, r"summing to 1 .* found 1.1"),
    ],
)
def test_explicit_weight_errors(tmp_path: Path, weights: dict, match: str):
    with pytest.raises(PlanInputError, match=match):
        plan_weights(tmp_path, {"budget": "10K", "phases": [{"name": "a", "weights": weights}]})


def test_negative_weight_is_a_schema_error(tmp_path: Path):
    spec, _ = write_spec(tmp_path, {"budget": 10, "phases": [{"name": "a", "weights": {"c00q0": -0.1}}]})
    with pytest.raises(PlanInputError, match=r"spec.yaml: mixture.phases\[0\].weights.*negative"):
        load_planning_spec(str(spec))


def test_normalize_warns_with_the_factor(tmp_path: Path):
    weights = {"c00q0": 1.0, "c00q1": 1.0, "c01q0": 1.0, "c01q1": 1.0}
    spec, counts = write_spec(tmp_path, {"budget": "10K", "normalize": True, "phases": [{"name": "a", "weights": weights}]})
    inputs = build_inputs(load_planning_spec(str(spec)), str(counts))
    assert inputs.phases[0].weights == {c: 0.25 for c in weights}
    (warn,) = inputs.warnings
    assert warn.code == "normalized" and "summed to 4" in warn.message and "0.25" in warn.message


def test_section_model_errors_say_expected_and_found():
    with pytest.raises(ValueError, match=r"expected the phases to add up to the budget 100, found 90"):
        MixtureSection.model_validate({"budget": 100, "phases": [{"name": "a", "tokens": 90}]})
    with pytest.raises(ValueError, match=r"less than 65536"):
        MixtureSection.model_validate({"budget": 1, "phases": [{"name": "a"}], "block_sequences": 70_000})
    m = MixtureSection.model_validate({"budget": "18.75T", "phases": [{"name": "a", "fraction": 0.8},
                                                                      {"name": "b", "fraction": 0.2}]})
    assert m.phase_tokens() == [15 * 10**12, 375 * 10**10]


def test_plan_cli_writes_plan_repaired_plan_and_exit_codes(tmp_path: Path):
    weights = {"c00q0": 0.7, "c00q1": 0.1, "c01q0": 0.1, "c01q1": 0.1}
    spec, counts = write_spec(tmp_path, {
        "budget": "10K", "max_epochs": 4, "block_sequences": 1000, "batch_sequences": 10, "seq_len": 10,
        "phases": [{"name": "a", "weights": weights}], "validation": ["heldout"],
        "ladder": [{"name": "tiny", "tokens": 100}],
    })
    out = tmp_path / "plan.json"
    runner = CliRunner()
    res = runner.invoke(app, ["plan", str(spec), "--counts", str(counts), "--out", str(out), "--ladder"])
    assert res.exit_code == 1, res.output  # c00q0 reads 7 epochs > 4
    assert "over_cap" in res.output and "L1 change" in res.output
    plan = read_plan(str(out))
    assert plan.exposure.over_cap == ["c00q0"] and plan.exposure.max == pytest.approx(7.0)
    repaired = read_plan(str(tmp_path / "plan.repaired.json"))
    assert repaired.exposure.max == pytest.approx(4.0)
    assert repaired.repair.l1_total == pytest.approx(0.6) and repaired.repair.repaired_from == plan.plan_id
    res = runner.invoke(app, ["plan", str(tmp_path / "plan.repaired.json"), "--counts", str(counts)])
    assert res.exit_code == 2 and "Marin mix JSON" in res.output
    res = runner.invoke(app, ["plan", str(spec), "--counts", str(tmp_path / "nope.csv")])
    assert res.exit_code == 2
    ok = {"budget": "10K", "phases": [{"name": "a", "weights": "proportional"}]}
    spec2, counts2 = write_spec(tmp_path, ok)
    res = runner.invoke(app, ["plan", str(spec2), "--counts", str(counts2), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert parse_plan(json.loads(res.stdout), "stdout").exposure.max == pytest.approx(1.0)


def test_a_file_that_is_not_a_plan_is_refused_with_how_to_write_one(tmp_path: Path):
    alias = tmp_path / "alias.json"
    alias.write_text(json.dumps({"phases": [{"name": "a", "tokens_budget": 10, "weights": {"c00q0": 1.0}}],
                                 "cells": {"c00q0": {"tokens": 10, "exposure": 1.0}}, "max_epochs": 8}))
    runner = CliRunner()
    for args in (["export", str(alias), "--format", "csv"], ["materialize", str(alias), "--out", str(tmp_path / "m")],
                 ["realised", str(tmp_path), str(alias)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        text = " ".join(res.output.split())
        assert "kind: expected a plan written by `mixture plan` (kind: mixture-plan)" in text
        assert "mixture plan SPEC --out plan.json" in text
    spec, counts = write_spec(tmp_path, {"budget": "10K", "phases": [{"name": "a", "weights": "proportional"}]})
    plan = tmp_path / "plan.json"
    assert runner.invoke(app, ["plan", str(spec), "--counts", str(counts), "--out", str(plan)]).exit_code == 0
    data = json.loads(plan.read_text())
    data["phases"][0]["tokens"] = 1.5
    plan.write_text(json.dumps(data))
    res = runner.invoke(app, ["export", str(plan), "--format", "csv"])
    assert res.exit_code == 2 and "phases[0].tokens: Input should be a valid integer, found 1.5" in res.output
