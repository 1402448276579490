"""Every kind of spec mistake gives a message naming the file and field, and exit code 2, before any work."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app

GOOD = {
    "name": "t",
    "sources": [{"name": "a", "uri": "data", "format": "jsonl"}],
    "store": {"uri": "store"},
}


def with_(path: str, value, base=None) -> dict:
    spec = yaml.safe_load(yaml.safe_dump(base or GOOD))
    node = spec
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
    if isinstance(node, list):
        node[int(keys[-1])] = value
    elif value is DELETE:
        node.pop(keys[-1])
    else:
        node[keys[-1]] = value
    return spec


DELETE = object()

CASES = [
    ("missing name", with_("name", DELETE), "name: required field is missing"),
    ("unknown top-level field", with_("sorces", []), "sorces: unknown field"),
    ("bad format", with_("sources.0.format", "csv"), "sources[0].format: Input should be"),
    ("source without uri", with_("sources.0", {"name": "a", "format": "jsonl"}), "sources[0].uri: required field is missing"),
    ("glob matching nothing", with_("sources.0.uri", "nothing/*.jsonl"), "sources[0].uri: source 'a' matches no jsonl file"),
    ("duplicate source names", with_("sources", [GOOD["sources"][0], GOOD["sources"][0]]), "source name 'a' is used twice"),
    ("permutations not a multiple of bands", with_("processing", {"dedup": {"fuzzy": {"permutations": 100, "bands": 26}}}),
     "processing.dedup.fuzzy: permutations (100) must be a multiple of bands (26)"),
    ("edges not increasing", with_("partition", {"quality": {"edges": [0.2, 0.6, 0.4, 0.8]}}),
     "partition.quality: edges must be strictly increasing"),
    ("wrong number of edges", with_("partition", {"quality": {"levels": 4}}), "4 quality levels need 3 edges, found 4"),
    ("k above fine_k", with_("partition", {"clusters": {"k": 50, "fine_k": 10}}), "fine_k (10) must be at least k (50)"),
    ("min share impossible", with_("partition", {"clusters": {"k": 40, "min_share": 0.05}}), "cannot fit in 100%"),
    ("unknown tiktoken encoding", with_("tokenizer", "tiktoken:nope"), "tokenizer: tiktoken has no encoding 'nope'"),
    ("bad tokenizer form", with_("tokenizer", "gpt2"), "tokenizer: expected tiktoken:<encoding>"),
    ("missing store", with_("store", DELETE), "store: required field is missing"),
    ("workers zero", with_("execution", {"workers": 0}), "execution.workers: workers must be -1"),
    ("benchmark file missing", with_("processing", {"decontamination": {"benchmarks": [{"name": "b", "uri": "nope.jsonl"}]}}),
     "processing.decontamination.benchmarks[0].uri: benchmark file not found"),
    ("string where a number is expected", with_("store", {"uri": "s", "samples_per_cell": "many"}),
     "store.samples_per_cell: Input should be a valid integer"),
    ("bad token amount in mixture", with_("mixture", {"budget": "lots"}), "mixture"),
]


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text('{"id": "1", "text": "hello world"}\n')
    return tmp_path


def run_validate(workdir, spec_obj) -> tuple[int, str]:
    path = workdir / "spec.yaml"
    path.write_text(spec_obj if isinstance(spec_obj, str) else yaml.safe_dump(spec_obj))
    result = CliRunner().invoke(app, ["validate", str(path)])
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes is not None else "")


def test_good_spec_validates(workdir):
    code, out = run_validate(workdir, GOOD)
    assert code == 0, out
    assert "1 file(s)" in out


@pytest.mark.parametrize(("kind", "spec", "expected"), CASES, ids=[c[0] for c in CASES])
def test_invalid_spec(workdir, kind, spec, expected):
    code, out = run_validate(workdir, spec)
    assert code == 2, out
    flat = " ".join(out.split())
    assert "spec.yaml" in flat
    assert expected in flat, flat


def test_yaml_syntax_error_names_line(workdir):
    code, out = run_validate(workdir, "name: t\nsources: [\n  {name: a\n")
    assert code == 2
    assert "invalid YAML: line" in " ".join(out.split())


def test_several_errors_reported_at_once(workdir):
    spec = with_("tokenizer", "tiktoken:nope", with_("sources.0.uri", "missing-dir"))
    code, out = run_validate(workdir, spec)
    flat = " ".join(out.split())
    assert code == 2
    assert "2 problems" in flat and "sources[0].uri" in flat and "tokenizer" in flat


def test_build_refuses_invalid_spec_before_any_work(workdir):
    spec = with_("sources.0.uri", "missing-dir")
    path = workdir / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["build", str(path)])
    assert result.exit_code == 2
    assert not (workdir / "store").exists()


def test_token_amounts():
    from mixture.spec.amounts import parse_amount

    assert parse_amount("18.75T") == 18_750_000_000_000
    assert parse_amount("926B") == 926_000_000_000
    assert parse_amount("48e9") == 48_000_000_000
    with pytest.raises(ValueError, match="expected a token amount"):
        parse_amount("lots")


def test_schema_command_prints_json_schema():
    import json

    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert "sources" in schema["properties"] and "Source" in schema["$defs"]
