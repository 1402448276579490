"""Spec fuzzing: whatever the file holds, `mixture validate` answers 0 (valid) or 2 with a message, never a traceback."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mixture.cli import app
from mixture.demo import demo_spec

pytestmark = pytest.mark.slow
DEMO = demo_spec("../demo/corpus", "../demo/store")
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.filter_too_much])

# scalars a hand-written YAML file can hold (no "://": a random URI must not reach the network)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30).filter(lambda s: "://" not in s),
    st.sampled_from(["", "0", "-1", "1e3", "15M", "1.5T", "lots", "tiktoken:nope", "hf:x.json", "jsonl", "parquet",
                     "[/]", "[bold]", "${rank}", "../..", "/", "*", "**/*.jsonl", "\x00", "c01q2", "nan"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=12), st.integers()), inner, max_size=4)),
    max_leaves=12)


def paths(node, prefix=()):
    """Every key path in a nested spec."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, (*prefix, i))


DEMO_PATHS = [p for p in paths(DEMO) if p]


def mutate(spec, path, value, delete: bool):
    spec = copy.deepcopy(spec)
    node = spec
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return spec


def validate(workdir: Path, text: str | bytes, resources: bool = True) -> tuple[int, str]:
    path = workdir / "spec.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    args = ["validate", str(path)] + ([] if resources else ["--no-resources"])
    result = CliRunner().invoke(app, args)
    out = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{out[-2000:]}")
    assert "Traceback" not in out, out[-2000:]
    assert result.exit_code in (0, 2), (result.exit_code, out[-2000:])
    if result.exit_code == 2:
        assert "invalid spec" in out and str(path) in out, out[-2000:]
    return result.exit_code, out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300).map(bytes)))
def test_any_text_or_bytes(workdir, text):
    validate(workdir, text)


@FUZZ
@given(values)
def test_any_yaml_value(workdir, value):
    validate(workdir, yaml.safe_dump(value, allow_unicode=True))


@FUZZ
@given(st.sampled_from(DEMO_PATHS), values, st.booleans())
def test_demo_spec_with_one_field_changed(workdir, path, value, delete):
    validate(workdir, yaml.safe_dump(mutate(DEMO, path, value, delete), allow_unicode=True), resources=False)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(DEMO_PATHS), values), min_size=1, max_size=4))
def test_demo_spec_with_several_fields_changed(workdir, changes):
    spec = DEMO
    for path, value in changes:
        try:
            spec = mutate(spec, path, value, False)
        except (KeyError, IndexError, TypeError):  # an earlier change replaced the parent
            continue
    validate(workdir, yaml.safe_dump(spec, allow_unicode=True), resources=False)


def test_rich_markup_in_a_value_is_reported_not_raised(tmp_path):
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({"name": "[/]", "sources": "[bold]"}))
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "spec.yaml")])
    assert result.exit_code == 2 and "[bold]" in result.output


def test_multipliers_not_a_mapping_is_reported_not_raised(tmp_path):
    spec = mutate(DEMO, ("mixture", "phases", 1, "weights", "multipliers"), [None], False)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "spec.yaml"), "--no-resources"])
    assert result.exit_code == 2 and "multipliers" in result.output
