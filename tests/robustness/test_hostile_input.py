"""Inputs that used to crash, hang or exhaust the machine: a YAML alias bomb and deep nesting in a spec, a plan
nested too deeply, a FIFO, a socket and a symlink loop in a source folder, a materialized mixture inside a source folder."""

from __future__ import annotations

import json
import os
import resource
import socket
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app
from mixture.spec.source_files import match_files
from tests.robustness.test_bad_input import _build_cli

TEXT = '{"text": "hello there general kenobi, you are a bold one"}\n'


def validate(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, " ".join(result.output.split())


def alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "name: bomb\n" + "\n".join(lines) + f"\nsources: *a{levels - 1}\n"


def test_a_yaml_alias_bomb_is_refused_without_expanding_it(tmp_path: Path):
    spec = tmp_path / "bomb.yaml"
    spec.write_text(alias_bomb())
    assert len(spec.read_bytes()) < 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code, out = validate(spec)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert code == 2 and "aliases" in out and "Traceback" not in out, out
    assert grown_mib < 200, grown_mib  # 9**9 values expanded would take tens of GB
    assert len(out) < 2000
    spec.write_text("name: big\nsources: [" + ", ".join(["1"] * 250_000) + "]\n")  # big without an alias
    code, out = validate(spec)
    assert code == 2 and "more than 200,000 values" in out and "aliases" not in out, out


def test_anchors_a_spec_may_use_still_work(tmp_path: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text(TEXT)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: ok\nsrc: &src {{format: jsonl}}\nsources:\n  - {{<<: *src, name: a, uri: {tmp_path}/data}}\n"
                    f"store: {{uri: {tmp_path}/store}}\n")
    code, out = validate(spec)
    assert "aliases" not in out and "nested" not in out, out


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_nesting_is_a_message(tmp_path: Path, depth: int):
    spec = tmp_path / "deep.yaml"
    spec.write_text("name: deep\nsources: " + "[" * depth + "]" * depth + "\n")
    code, out = validate(spec)
    assert code == 2 and "nested more than 100 levels deep" in out and "Traceback" not in out, out[-500:]
    plan = tmp_path / "plan.json"
    plan.write_text("[" * depth + "]" * depth)
    res = CliRunner().invoke(app, ["export", str(plan), "--format", "olmo"])
    assert res.exit_code == 2 and "nested too deeply" in " ".join(res.output.split()), res.output[-500:]


def irregular_source(tmp_path: Path, kind: str) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text(TEXT)
    if kind == "fifo":
        os.mkfifo(data / "pipe.jsonl")
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:  # the socket file stays once closed
            sock.bind(str(data / "pipe.jsonl"))
    else:
        (data / "loop.jsonl").symlink_to(data / "loop.jsonl")
    return data


@pytest.mark.parametrize("kind", ["fifo", "socket", "symlink loop"])
def test_a_fifo_or_a_symlink_loop_in_a_source_is_refused_by_validate_and_build(tmp_path: Path, kind: str):
    data = irregular_source(tmp_path, kind)
    name = "loop.jsonl" if kind == "symlink loop" else "pipe.jsonl"
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "irregular", "sources": [{"name": "a", "uri": str(data), "format": "jsonl"}],
                                    "store": {"uri": str(tmp_path / "store")}}))
    code, out = validate(spec)
    assert code == 2 and f"{data}/{name} is not a regular file" in out, out
    code, out = _build_cli(tmp_path, [{"name": "a", "uri": str(data), "format": "jsonl"}])
    assert code == 2 and f"{data}/{name} is not a regular file" in out and "Traceback" not in out, out
    assert not (tmp_path / "store" / "_build" / "LOCK").exists()
    glob = match_files(f"{data}/*.jsonl", (".jsonl",))  # a glob matches it too
    assert [f for f, _ in glob.files] == ["a.jsonl"] and glob.irregular == [f"{data}/{name}"]


def test_a_materialized_mixture_inside_a_source_folder_is_skipped(tmp_path: Path):
    data = tmp_path / "data"
    (data / "mix" / "phase=a").mkdir(parents=True)
    (data / "a.jsonl").write_text(TEXT)
    (data / "mix" / "manifest.json").write_text(json.dumps({"format": 1}))
    (data / "mix" / "phase=a" / "part-00000.parquet").write_bytes(b"PAR1")
    (data / "mix" / "phase=a" / "_manifest.json").write_text("{}")
    (data / "work" / "_materialize" / "work").mkdir(parents=True)
    (data / "work" / "_materialize" / "work" / "draws.parquet").write_bytes(b"PAR1")
    listing = match_files(str(data), (".jsonl", ".parquet", ".json"))
    assert [f for f, _ in listing.files] == ["a.jsonl"]
    assert sorted(listing.skipped.folders) == [f"{data}/mix", f"{data}/work"]


def test_big_values_and_many_problems_give_a_short_message(tmp_path: Path):
    """Values of megabytes and 50,000 unknown fields: each value shown in a few hundred characters at most, the first
    problems listed and how many more (the whole list was megabytes of terminal output)."""
    spec = tmp_path / "big.yaml"
    fields = ", ".join(f"k{i}: {i}" for i in range(50_000))
    spec.write_text(f"name: {'x' * 3_000_000}\nsources:\n  - {{name: [{', '.join(['1'] * 20_000)}], uri: /nowhere, "
                    f"format: jsonl, {fields}}}\n")
    code, out = validate(spec)
    assert code == 2 and "50,0" in out and "more" in out and "Traceback" not in out, out[:2000]
    assert len(out) < 8_000
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"kind": "mixture-plan"} | {f"k{i}": "y" * 1000 for i in range(50_000)}))
    res = CliRunner().invoke(app, ["export", str(plan), "--format", "olmo"])
    assert res.exit_code == 2 and "more problems" in res.output and len(res.output) < 8_000, res.output[-2000:]


@pytest.mark.parametrize(("field", "yaml_text"), [
    ("tokenizer", "tokenizer: {fifo}"),
    ("partition.quality.fasttext_model", "partition: {{quality: {{scorer: fasttext, fasttext_model: {fifo}}}}}"),
    ("processing.language.model", "processing: {{language: {{model: 'fasttext:{fifo}'}}}}"),
    ("processing.decontamination.benchmarks[0].uri",
     "processing: {{decontamination: {{enabled: true, benchmarks: [{{name: b, uri: {fifo}, fields: [q]}}]}}}}"),
])
def test_a_fifo_named_by_the_spec_is_refused_not_read(tmp_path: Path, field: str, yaml_text: str):
    """A tokenizer, model or benchmark path that is a FIFO: opening it would block `validate` and `build` forever."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text(TEXT)
    fifo = tmp_path / "named.json"
    os.mkfifo(fifo)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: fifo\nsources: [{{name: a, uri: {data}, format: jsonl}}]\nstore: {{uri: {tmp_path}/store}}\n"
                    + yaml_text.format(fifo=fifo) + "\n")
    code, out = validate(spec)
    assert code == 2 and f"{field}: " in out and f"{fifo} is not a regular file" in out, out
