"""Stage keys: a stage's key covers every spec field its steps read (recorded while they are built), changes with
those fields, with the input files and with every earlier key, and with nothing else (execution)."""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import pytest
from pydantic import BaseModel

from mixture.pipelines.build import build_stage
from mixture.pipelines.context import BuildContext
from mixture.pipelines.partition import sample as sample_stage
from mixture.spec.canonical import canonical_spec
from mixture.spec.inputs import list_source
from mixture.spec.models import Source, Spec
from mixture.spec.resolve import References
from mixture.stages import keys as stage_keys
from mixture.stages import registry as stage_registry
from mixture.stages.drift import file_changed, files_drift
from mixture.stages.keys import flatten, pattern_of, reads, stage_records
from mixture.store.formats import (
    InputFile,
    InputManifest,
    SourceInputs,
    read_store_artifact,
    write_model,
)
from tests.conftest import small_spec

NAMES = stage_registry.names()


def _raw(corpus: str = "corpus") -> dict:
    return small_spec(corpus, "store")


def _canonical(raw: dict, folder: str) -> dict:
    return canonical_spec(References(Spec.model_validate(raw), folder))


def _with_datasets_source(raw: dict) -> dict:
    raw = copy.deepcopy(raw)
    raw["sources"].append({"name": "ds", "uri": "saved", "format": "datasets", "split": "train", "subset": "x",
                           "revision": "main", "streaming": False})
    return raw


# -- every field is someone's --------------------------------------------------------------------------------
def test_every_spec_field_is_read_by_a_stage_or_only_by_finalize():
    """A field of the canonical spec that no stage's `reads` covers must be listed as finalize-only; every `reads`
    entry names a field that exists (a typo would silently cover nothing)."""
    raw = _with_datasets_source(_raw())
    raw["processing"]["decontamination"]["benchmarks"].append({"name": "b2", "uri": "b2.jsonl"})
    leaves = {pattern_of(p) for p in flatten(_canonical(raw, "/spec"))}
    patterns = [(s.name, p) for s in stage_registry.STAGES for p in (*s.reads, *([s.when] if s.when else []))]
    unread = sorted(leaf for leaf in leaves if not any(reads(p, leaf) for _, p in patterns))
    assert unread == sorted(stage_registry.FINALIZE_ONLY), "classify each new spec field in mixture/stages/registry.py"
    for stage, p in patterns:
        assert any(reads(p, leaf) for leaf in leaves), f"{stage} reads {p!r}, which is no field of the spec"


class Recorder:
    """A spec (or a section of it) that records the path of every field read through it."""

    def __init__(self, obj: BaseModel, path: str, seen: set[str]):
        self._obj, self._path, self._seen = obj, path, seen

    def __getattr__(self, name: str):
        value = getattr(self._obj, name)
        path = f"{self._path}.{name}" if self._path else name
        if name not in type(self._obj).model_fields:  # a property or a method: it may read any field of the section
            self._seen.update(f"{self._path}.{f}" if self._path else f for f in type(self._obj).model_fields)
            return value
        if isinstance(value, BaseModel):
            return Recorder(value, path, self._seen)
        if isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
            return [Recorder(v, f"{path}[]", self._seen) for v in value]
        self._seen.add(path)
        return value


@pytest.mark.parametrize("fuzzy", [True, False])
def test_each_stage_reads_only_the_fields_its_key_covers(demo_corpus, tmp_path, monkeypatch, fuzzy):
    """Build every stage's steps with a spec that records each field read: all of them are in the stage's `reads`
    (so editing any of them changes the stage's key), and none of the finalize-only fields is read."""
    raw = _raw(str(demo_corpus))
    raw["processing"]["dedup"]["fuzzy"]["enabled"] = fuzzy
    spec = Spec.model_validate(raw)
    monkeypatch.setattr(sample_stage, "count_kept", lambda ctx: 1000)  # sample's rate reads dedup's results otherwise
    seen_by: dict[str, set[str]] = {}
    for info in stage_registry.planned(spec):
        seen: set[str] = set()
        ctx = BuildContext(Recorder(spec, "", seen), str(tmp_path), str(tmp_path / "store"), 2)  # type: ignore[arg-type]
        build_stage(ctx, info)
        seen_by[info.name] = {pattern_of(p) for p in seen}
        covered = (*info.reads, *([info.when] if info.when else []))
        # execution settings (e.g. DuckDB's memory limit) shape how a stage runs, never what it writes
        missing = sorted(p for p in seen_by[info.name]
                         if not p.startswith("execution.") and not any(reads(c, p) for c in covered))
        assert not missing, f"stage {info.name} reads {missing}: add them to its `reads` in the registry"
    assert seen_by["prepare"] >= {"sources[].uri", "processing.filters.length.min_chars", "partition.quality.scorer"}
    assert seen_by["assign"] >= {"tokenizer", "store.compression", "partition.clusters.k"}
    read = set().union(*seen_by.values())
    assert not read & set(stage_registry.FINALIZE_ONLY)


# -- what changes which key ----------------------------------------------------------------------------------
MANIFEST = InputManifest(sources=[SourceInputs(name=s["name"], base=f"/corpus/{s['name']}",
                                               files=[InputFile(path="a.jsonl", size=10, identity={"mtime": 1.0})])
                                  for s in _raw()["sources"]],
                         files={"processing.decontamination.benchmarks[0].uri": [InputFile(path="b.jsonl", size=5)]})


def keys(raw: dict, manifest: InputManifest = MANIFEST) -> dict[str, str]:
    return {r.name: r.key for r in stage_records(_canonical(raw, "/spec"), manifest, 2)}


def changed(edit, manifest: InputManifest = MANIFEST) -> list[str]:
    raw = _raw()
    edited = copy.deepcopy(raw)
    edit(edited)
    before, after = keys(raw), keys(edited, manifest)
    return [n for n in NAMES if n in after and before.get(n) != after[n]]


@pytest.mark.parametrize("what", ["LABELS_VERSION", "CALIBRATION_VERSION", "stopwords"])
def test_the_fit_methods_and_the_stop_word_lists_change_fit_and_what_follows(monkeypatch, what):
    """A new label or calibration method, or another stopwordsiso release, redoes fit and assign, nothing before."""
    from mixture.fit import implementation

    before = keys(_raw())
    if what == "stopwords":
        monkeypatch.setattr(implementation, "version", lambda name: "0.0.0-other")
    else:
        monkeypatch.setattr(implementation, what, getattr(implementation, what) + 1)
    after = keys(_raw())
    assert [n for n in NAMES if before[n] != after[n]] == [n for n in NAMES if NAMES.index(n) >= NAMES.index("fit")
                                                           and n in before]
    assert _canonical(_raw(), "/spec")["fit_implementation"]["stopwords"] == (
        "stopwordsiso 0.0.0-other" if what == "stopwords" else "stopwordsiso 0.7.1")


def _set(path: str, value):
    def edit(raw: dict) -> None:
        *head, last = path.split(".")
        node = raw
        for part in head:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
    return edit


@pytest.mark.parametrize(("path", "value", "first"), [
    ("processing.filters.length.min_chars", 2000, "prepare"),
    ("processing.dedup.fuzzy.ngram", 4, "prepare"),
    ("processing.decontamination.min_matches", 2, "prepare"),
    ("sources.3.text_field", "body", "prepare"),
    ("processing.dedup.exact.enabled", False, "find_duplicates"),
    ("processing.dedup.fuzzy.bands", 8, "minhash_sigs"),
    ("partition.clusters.sample_docs", 999, "sample"),
    ("seed", 7, "sample"),
    ("partition.clusters.k", 6, "fit"),
    ("partition.quality.calibration_sample", 99, "fit"),
    ("tokenizer", "tiktoken:o200k_base", "sample"),  # the sample counts its documents' tokens for the fit
    ("processing.language.min_score", 0.7, "prepare"),
    ("processing.dedup.fuzzy.threshold", 0.8, "minhash_verify"),
    ("partition.quality.per_language", False, "fit"),
    ("partition.clusters.max_share", 0.5, "fit"),
    ("store.compression", "snappy", "assign"),
    ("store.shard_bytes", 1 << 20, "assign"),
    ("store.keep_token_ids", True, "assign"),
])
def test_a_field_changes_the_key_of_each_stage_that_reads_it_and_of_every_later_stage(path, value, first):
    assert changed(_set(path, value)) == list(NAMES[NAMES.index(first):])


@pytest.mark.parametrize(("path", "value"), [
    ("execution.tasks", 7), ("execution.workers", 1), ("execution.executor", "ray"), ("store.uri", "elsewhere"),
    ("sources.0.license", "MIT"), ("description", "another"), ("name", "renamed")])
def test_no_key_changes_with_execution_or_what_only_store_json_shows(path, value):
    """Execution settings and the store's location change nothing; finalize-only fields (store.json's own) change
    the spec's hash, which a finished store is compared by, but no stage's key."""
    assert changed(_set(path, value)) == []
    raw, edited = _raw(), _raw()
    _set(path, value)(edited)
    same = stage_keys.spec_hash(_canonical(raw, "/s")) == \
        stage_keys.spec_hash(_canonical(edited, "/s"))
    assert same == (path.startswith(("execution.", "store.uri")))


def test_turning_fuzzy_dedup_off_changes_every_key_and_drops_the_minhash_stages():
    after = keys(_raw() | {"processing": {**_raw()["processing"], "dedup": {"fuzzy": {"enabled": False}}}})
    assert list(after) == ["prepare", "duplicate_ids", "find_duplicates", "sample", "fit", "assign"]
    assert not set(after.values()) & set(keys(_raw()).values())


def test_an_input_file_changes_every_key_from_prepare_on():
    touched = MANIFEST.model_copy(deep=True)
    touched.sources[2].files[0].identity["mtime"] = 2.0
    assert changed(lambda raw: None, touched) == list(NAMES)
    grown = MANIFEST.model_copy(deep=True)
    grown.sources[0].files.append(InputFile(path="b.jsonl", size=1))
    assert changed(lambda raw: None, grown) == list(NAMES)
    bench = MANIFEST.model_copy(deep=True)
    bench.files["processing.decontamination.benchmarks[0].uri"][0].size = 6
    assert changed(lambda raw: None, bench) == list(NAMES)


def test_record_counts_are_not_part_of_a_key():
    counted = MANIFEST.model_copy(deep=True)
    for s in counted.sources:
        s.records = 12
    assert changed(lambda raw: None, counted) == []


def test_relative_paths_resolve_before_hashing(tmp_path):
    """Two spec files in different folders naming the same corpus have the same keys."""
    a = _canonical(small_spec("corpus"), str(tmp_path))
    b = _canonical(small_spec("../corpus"), str(tmp_path / "sub"))
    assert stage_records(a, MANIFEST, 2) == stage_records(b, MANIFEST, 2)


# -- the manifest of local files ------------------------------------------------------------------------------
def test_local_manifest_has_size_and_mtime_and_names_each_change(demo_corpus, tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(demo_corpus / "web-like", corpus)
    src = Source(name="web", uri=str(corpus), format="jsonl")
    before = list_source(src, str(corpus)).inputs
    assert before.files and all(f.size and isinstance(f.identity.get("mtime"), float) for f in before.files)
    first, second = sorted(corpus.glob("*.jsonl"))[:2]
    with first.open("a") as f:
        f.write('{"id": "x", "text": "one more"}\n')
    st = second.stat()
    os.utime(second, (st.st_atime, st.st_mtime + 5))  # same bytes, touched
    (corpus / "zz.jsonl").write_text('{"text": "new"}\n')
    after = list_source(src, str(corpus)).inputs
    drift = files_drift("web", before.files, after.files)
    assert drift.added == ["zz.jsonl"] and drift.removed == []
    assert dict(drift.changed)[first.name].startswith("size ")
    assert dict(drift.changed)[second.name].startswith("mtime ")
    assert file_changed(before.files[-1], before.files[-1]) is None
    assert "1 file(s) added: zz.jsonl" in drift.lines()


# -- the audit checks the provenance -------------------------------------------------------------------------
def test_audit_recomputes_the_keys_and_the_record_counts(built_store, tmp_path: Path):
    from mixture.accounting import StoreReader, audit

    art = built_store.artifact
    assert art.provenance is not None
    assert [s.name for s in art.provenance.stages] == list(NAMES)
    assert [s.records for s in art.provenance.inputs.sources] == [s.docs_in for s in art.sources]
    assert audit(StoreReader(str(built_store.store))).check("provenance").status == "pass"

    store = tmp_path / "store"
    shutil.copytree(built_store.store, store)
    prov = art.provenance.model_copy(deep=True)
    prov.spec["processing"]["filters"]["length"]["min_chars"] = 2000  # the spec it claims, not the one it was built of
    prov.inputs.sources[1].records = (prov.inputs.sources[1].records or 0) + 3
    import fsspec

    write_model(fsspec.filesystem("file"), str(store / "store.json"), art.model_copy(update={"provenance": prov}))
    result = audit(StoreReader(str(store)))
    messages = "\n".join(result.messages())
    assert result.check("provenance").status == "fail"
    assert "[provenance] spec.hash" in messages and "[provenance] stage prepare: key" in messages
    assert f"[provenance] source {prov.inputs.sources[1].name}: records read" in messages
    assert read_store_artifact(str(store / "store.json")).provenance == prov


def test_what_changed_is_named_field_by_field_and_file_by_file():
    raw = _raw()
    edited = copy.deepcopy(raw)
    edited["processing"]["filters"]["length"]["min_chars"] = 2000
    now = MANIFEST.model_copy(deep=True)
    now.files["processing.decontamination.benchmarks[0].uri"][0].size = 6
    now.sources[0].files.append(InputFile(path="new.jsonl", size=3))
    now.sources[1].files = []
    old_prepare = stage_records(_canonical(raw, "/s"), MANIFEST, 2)[0]
    new_prepare = stage_records(_canonical(edited, "/s"), now, 2)[0]
    lines = stage_keys.record_changes(old_prepare, new_prepare).lines()
    first, second = (s["name"] for s in raw["sources"][:2])
    assert lines == ["processing.filters.length.min_chars: 50 → 2000",
                     f"source {first}: 1 file(s) added: new.jsonl",
                     f"source {second}: 1 file(s) removed: a.jsonl",
                     "processing.decontamination.benchmarks[0].uri: 1 file(s) changed: b.jsonl (size 5 → 6 bytes)"]


def test_the_code_version_is_in_every_key():
    """A change of what prepare writes (0.2.0: the content type's kind and code language, CLD2 without best effort)
    raises mixture.__version__; a store built by 0.1.0 then has other keys from prepare on, so nothing is reused."""
    import mixture

    canon = _canonical(_raw(), "/spec")
    now = {r.name: r.key for r in stage_records(canon, MANIFEST, 2)}
    old = {r.name: r.key for r in stage_records(canon, MANIFEST, 2, code="0.1.0+store2")}
    assert stage_keys.code_version().startswith(mixture.__version__ + "+") and mixture.__version__ != "0.1.0"
    assert set(now) == set(old) and all(now[n] != old[n] for n in now)
