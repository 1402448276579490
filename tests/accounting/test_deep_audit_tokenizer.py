"""`mixture audit --deep` recounts tokens with the tokenizer the build used: a tokenizer.json named relative to the
spec's folder is recorded in store.json by its absolute path and sha256, so the audit loads it from any folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app
from mixture.store.formats import TokenizerRef, read_store_artifact
from mixture.tokenizer import file_sha256
from tests.conftest import small_spec

runner = CliRunner()
WORDS = ["the", "of", "and", "to", "in", "is", "a", "server", "theorem", "function", "return", "river"]


def write_tokenizer_json(path: Path, words: list[str]) -> None:
    """A small word-level tokenizer.json: each known word one token, anything else [UNK]."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))


@pytest.fixture(scope="module")
def local_tokenizer_store(tmp_path_factory, demo_corpus) -> Path:
    """A store built from a spec in its own folder naming `tokenizer: hf:tok/tokenizer.json`, built from another
    folder."""
    root = tmp_path_factory.mktemp("local_tokenizer")
    specs = root / "specs"
    write_tokenizer_json(specs / "tok" / "tokenizer.json", WORDS)
    spec = {**small_spec(str(demo_corpus), "store"), "tokenizer": "hf:tok/tokenizer.json"}
    (specs / "spec.yaml").write_text(yaml.safe_dump(spec))
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(elsewhere)
        result = runner.invoke(app, ["build", str(specs / "spec.yaml")])
    assert result.exit_code == 0, result.output
    return specs


def test_store_json_records_the_resolved_tokenizer(local_tokenizer_store: Path) -> None:
    art = read_store_artifact(str(local_tokenizer_store / "store" / "store.json"))
    file = local_tokenizer_store / "tok" / "tokenizer.json"
    assert art.tokenizer == "hf:tok/tokenizer.json"  # the spec's string, as written
    assert art.tokenizer_ref == TokenizerRef(kind="file", name=str(file), sha256=file_sha256(str(file)))
    assert art.provenance is not None and art.provenance.spec["tokenizer"] == f"hf:{file}"


def test_deep_audit_loads_a_relative_tokenizer_file_from_another_folder(local_tokenizer_store: Path, tmp_path,
                                                                        monkeypatch) -> None:
    """From a folder without tok/tokenizer.json, the deep audit recounts every document with the spec's file."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["audit", str(local_tokenizer_store / "store"), "--deep", "--sample", "0"])
    assert result.exit_code == 0, result.output
    assert "every invariant holds" in result.output


def test_deep_audit_names_a_tokenizer_file_changed_since_the_build(local_tokenizer_store: Path) -> None:
    """The recorded sha256 tells a tokenizer file edited after the build from wrong token counts."""
    from mixture.accounting import StoreReader, audit

    file = local_tokenizer_store / "tok" / "tokenizer.json"
    original = file.read_bytes()
    try:
        write_tokenizer_json(file, WORDS[:3])
        result = audit(StoreReader(str(local_tokenizer_store / "store")), deep=True, sample=10)
    finally:
        file.write_bytes(original)
    failures = [f.message() for f in result.check("tokens (deep)").failures]
    assert len(failures) == 1 and failures[0].startswith(f"{file}: sha256: the tokenizer file changed since the build")
