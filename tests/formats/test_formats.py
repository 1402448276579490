"""Each JSON file the build and the planner write is defined once (a pydantic model) and matches it; the JSON
Schemas `mixture schema` prints are valid and accept those files; one registry defines every drop reason."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from mixture.cli import app
from mixture.planner.formats import Manifest, PhaseManifest, Plan
from mixture.store import drops, layout
from mixture.store.formats import Counters, Ledger, SourceEntry, StoreArtifact, read_model

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
OPTIONS = {"--store": StoreArtifact, "--ledger": Ledger, "--plan": Plan, "--manifest": Manifest}


def schema_of(option: str | None) -> dict:
    res = runner.invoke(app, ["schema", *([option] if option else [])])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("option", [None, *OPTIONS])
def test_schema_command_prints_a_valid_json_schema(option: str | None) -> None:
    schema = schema_of(option)
    jsonschema.Draft202012Validator.check_schema(schema)
    if option:
        assert schema == OPTIONS[option].model_json_schema()
        for name, definition in {"": schema, **schema.get("$defs", {})}.items():  # every field is described
            assert definition.get("description"), name
            assert [f for f, p in definition["properties"].items() if not p.get("description")] == [], name
    else:
        assert schema["properties"]["mixture"]["anyOf"][0] == {"$ref": "#/$defs/MixtureSection"}


def test_schema_command_takes_one_format() -> None:
    res = runner.invoke(app, ["schema", "--store", "--plan"])
    assert res.exit_code == 2 and "choose one" in res.output


def check(path: Path, model, schema: dict):
    """`path` validates against `model` and against its printed JSON Schema, and is exactly what the model writes."""
    raw = json.loads(path.read_text())
    jsonschema.validate(raw, schema)
    parsed = read_model(model, str(path))
    assert parsed.model_dump(mode="json") == raw, path
    return parsed


@pytest.mark.slow
def test_every_file_of_a_real_build_and_plan_matches_its_format(built_store, tmp_path: Path) -> None:
    schemas = {option: schema_of(option) for option in OPTIONS}
    art = check(built_store.store / layout.STORE_JSON, StoreArtifact, schemas["--store"])
    ledgers = sorted(built_store.store.glob("cluster=*/quality=*/_ledger.json"))
    assert len(ledgers) == len(art.cells) > 0
    for path in ledgers:
        check(path, Ledger, schemas["--ledger"])
    plan_path, mix = tmp_path / "plan.json", tmp_path / "mix"
    args = ["plan", str(built_store.spec_path), "--out", str(plan_path), "--scale", "0.05"]
    assert runner.invoke(app, args).exit_code in (0, 1)
    first = read_model(Plan, str(plan_path))  # a cap between the proportional and the peak exposure: repairable
    cap = (first.exposure.proportional + first.exposure.max) / 2
    res = runner.invoke(app, [*args, "--max-epochs", repr(cap)])
    assert res.exit_code == 1 and "repaired plan written" in " ".join(res.output.split()), res.output
    plan = check(plan_path, Plan, schemas["--plan"])
    repaired = check(tmp_path / "plan.repaired.json", Plan, schemas["--plan"])
    assert plan.repair is None and repaired.repair.repaired_from == plan.plan_id
    assert [c.cell for c in plan.cells] == [c.cell for c in art.cells]
    res = runner.invoke(app, ["materialize", str(plan_path), "--out", str(mix)])
    assert res.exit_code == 0, res.output
    manifest = check(mix / "manifest.json", Manifest, schemas["--manifest"])
    assert manifest.plan_id == plan.plan_id
    for phase in manifest.phases:
        phase_schema = {**schemas["--manifest"]["$defs"]["PhaseManifest"], "$defs": schemas["--manifest"]["$defs"]}
        assert check(mix / f"phase={phase.name}" / "_manifest.json", PhaseManifest, phase_schema) == phase


def test_one_registry_defines_every_drop_reason() -> None:
    counters = list(Counters.model_fields)
    assert counters == ["records_in", *drops.COUNTERS, "records_out", "tokens_out"]
    assert list(SourceEntry.model_fields)[-len(drops.REASONS):] == list(drops.COUNTERS)
    assert tuple(r.name for r in drops.REASONS if r.folder.startswith(layout.DROPPED_DIR)) == layout.DROP_REASONS
    assert drops.reason("bad_input").folder == layout.QUARANTINE_DIR
    for r in drops.REASONS:
        if r.breakdown:
            assert r.breakdown[1] in StoreArtifact.model_fields
    store_md = (REPO / "docs" / "store.md").read_text()
    for r in drops.REASONS:  # the contract documents each reason: its counter, label and folder
        assert f"| `{r.name}` | `{r.counter}` | {r.label} | `{r.folder}/` |" in store_md, r.name
    with pytest.raises(KeyError, match="known: bad_input, filtered"):
        drops.reason("typo")
