"""A store of another format version is refused, with one message naming its version, the version this code reads
and how to rebuild, by every reader of store.json (audit, summary, plan, build); `mixture build --redo-changed`
rebuilds it. A store.json without a required field names the file and the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mixture.accounting import StoreReader
from mixture.cli import app
from mixture.store.formats import (
    STORE_FORMAT_VERSION,
    FormatError,
    StoreArtifact,
    StoreVersionError,
    read_store_artifact,
)
from tests.conftest import small_spec

runner = CliRunner()


def _flat(text: str) -> str:
    """Text without whitespace: a message compared whatever the console wrapped."""
    return "".join(text.split())


def _with(store: Path, **changes) -> Path:
    """store.json edited as raw JSON: `changes` set (a value of None removes the field)."""
    data = json.loads((store / "store.json").read_text())
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    (store / "store.json").write_text(json.dumps(data, indent=1))
    return store


@pytest.fixture
def copy(built_store, tmp_path) -> Path:
    return Path(shutil.copytree(built_store.store, tmp_path / "store"))


@pytest.fixture
def old(copy) -> Path:
    return _with(copy, format_version=1)


def refusal(store: Path, version: int) -> str:
    return f"{store}/store.json: {StoreVersionError(f'{store}/store.json', version).refusal}"


def test_the_refusal_names_both_versions_and_how_to_rebuild():
    message = str(StoreVersionError("s/store.json", 1))
    assert message.startswith("s/store.json: a store of format version 1; this mixture reads store format version "
                              f"{STORE_FORMAT_VERSION}.")
    assert "`mixture build SPEC --redo-changed`" in message and "new folder" in message


@pytest.mark.parametrize("version", [1, STORE_FORMAT_VERSION + 1])
def test_an_older_or_newer_store_is_refused_by_the_reader(copy, version):
    _with(copy, format_version=version)
    with pytest.raises(StoreVersionError) as exc:
        read_store_artifact(str(copy / "store.json"))
    assert exc.value.version == version and str(exc.value) == refusal(copy, version)
    with pytest.raises(StoreVersionError):
        StoreReader(str(copy)).store_info  # noqa: B018 - the accounting layer's reader (the explorer's too)


def test_audit_refuses_an_old_store(old):
    result = runner.invoke(app, ["audit", str(old)])
    assert result.exit_code == 1, result.output
    assert _flat(StoreVersionError("", 1).refusal) in _flat(result.output)
    assert "does not match its format" not in result.output  # the one message, not a list of fields


def test_summary_refuses_an_old_store(old):
    result = runner.invoke(app, ["summary", str(old)])
    assert result.exit_code == 1, result.output
    assert _flat(refusal(old, 1)) in _flat(result.output)


def test_plan_refuses_an_old_store(built_store, old):
    result = runner.invoke(app, ["plan", str(built_store.spec_path), "--counts", str(old)])
    assert result.exit_code == 2, result.output
    assert _flat(refusal(old, 1)) in _flat(result.output)


def test_build_refuses_an_old_store_and_rebuilds_it_with_redo_changed(built_store, old, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(small_spec(str(built_store.corpus), str(old))))
    before = (old / "store.json").read_bytes()
    result = runner.invoke(app, ["build", str(spec)])
    assert result.exit_code == 2, result.output
    assert _flat(refusal(old, 1)) in _flat(result.output)
    assert (old / "store.json").read_bytes() == before  # nothing was done

    result = runner.invoke(app, ["build", str(spec), "--redo-changed"])
    assert result.exit_code == 0, result.output
    rebuilt = read_store_artifact(str(old / "store.json"))
    assert rebuilt.format_version == STORE_FORMAT_VERSION
    assert rebuilt.cells == built_store.artifact.cells  # the same spec and inputs: the same store
    assert runner.invoke(app, ["audit", str(old)]).exit_code == 0


def test_a_missing_required_field_names_the_file_and_the_field(copy):
    _with(copy, provenance=None)
    with pytest.raises(FormatError) as exc:
        read_store_artifact(str(copy / "store.json"))
    assert not isinstance(exc.value, StoreVersionError)
    assert exc.value.fields == ["provenance"]
    assert f"{copy}/store.json: provenance: required field is missing" in str(exc.value)
    result = runner.invoke(app, ["audit", str(copy)])
    assert result.exit_code == 1 and "provenance: required field is missing" in result.output, result.output


def test_every_field_of_store_json_is_required():
    """Version 2: no block of store.json may be left out (the input manifest's models, shared with the stage
    records of `_build/<stage>/key.json`, keep their optional per-form fields), but for the fields added within
    version 2, optional so that stores written before them still read (docs/store.md, Format version)."""
    schema = StoreArtifact.model_json_schema()
    shared = {"InputFile", "InputManifest", "SourceInputs"}
    optional = {name: sorted(set(d["properties"]) - set(d.get("required", [])))
                for name, d in {"StoreArtifact": schema, **schema["$defs"]}.items() if name not in shared}
    added_within_2 = {"ClusterEntry": ["coverage", "language_share", "languages", "name"],
                      "CalibrationGroup": ["map", "shape_groups"], "NearDuplicateReport": ["largest_component"]}
    assert {name: fields for name, fields in optional.items() if fields} == added_within_2
