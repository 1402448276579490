"""Bad input matrix: each case is quarantined with its reason and counted (or dropped by a gate), the build goes
on; configuration errors stop `mixture build` before any work with exit 2 and a message naming the source."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from mixture.accounting import StoreReader, audit
from mixture.cli import app
from tests.robustness.badinput import HUGE_CHARS, bad_spec, register_test_filesystems, write_bad_corpus


@pytest.fixture(scope="module")
def bad_build(tmp_path_factory):
    """One build over every planted case (two tasks run in this process, so the test filesystems are registered)."""
    from mixture.pipelines.build import build

    register_test_filesystems()
    root = tmp_path_factory.mktemp("bad")
    truth = write_bad_corpus(root)
    spec_path = root / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(bad_spec(root)))
    artifact = build(str(spec_path), progress=False)
    store = root / "store"
    quarantine = [r for f in sorted((store / "_quarantine").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    return {"artifact": artifact, "store": store, "quarantine": quarantine, "truth": truth, "root": root}


def q(bad_build, source: str, file: str) -> list[tuple[int, str]]:
    return sorted((r["record"], r["reason"]) for r in bad_build["quarantine"] if r["source"] == source and r["file"] == file)


def kept_ids(bad_build) -> set[str]:
    store = bad_build["store"]
    return {i for f in store.glob("cluster=*/quality=*/*.parquet") for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()}


def source_row(bad_build, name: str):
    return next(s for s in bad_build["artifact"].sources if s.name == name)


@pytest.mark.slow
def test_build_goes_on_and_every_record_is_accounted_for(bad_build):
    art = bad_build["artifact"]
    c = art.counters
    assert c.records_out > 100
    assert c.records_in == c.records_out + c.bad_input + c.filtered + c.exact_duplicate_dropped + \
        c.fuzzy_duplicate_dropped + c.contaminated_dropped
    assert c.bad_input == len(bad_build["quarantine"]) == sum(art.bad_input_by_reason.values())
    assert Counter(r["reason"] for r in bad_build["quarantine"]) == Counter(art.bad_input_by_reason)
    assert sum(s.bad_input for s in art.sources) == c.bad_input
    result = audit(StoreReader(str(bad_build["store"])))
    assert result.ok, result.messages()


@pytest.mark.slow
def test_summary_says_how_many_and_where(bad_build, capsys):
    from mixture.pipelines.cli import print_summary

    print_summary(bad_build["artifact"], str(bad_build["store"]))
    text = capsys.readouterr().out
    assert f"{bad_build['artifact'].counters.bad_input:,}" in text and "_quarantine/" in text


@pytest.mark.slow
def test_malformed_json_line(bad_build):
    assert q(bad_build, "broken", "malformed.jsonl") == [(1, "invalid_json")]
    assert {"m-0", "m-2"} <= kept_ids(bad_build)
    row = next(r for r in bad_build["quarantine"] if r["file"] == "malformed.jsonl")
    assert row["raw"].startswith('{"id": "m-1"') and row["raw_bytes"] == len(row["raw"])


@pytest.mark.slow
def test_invalid_utf8(bad_build):
    assert q(bad_build, "broken", "utf8.jsonl") == [(1, "invalid_utf8")]
    row = next(r for r in bad_build["quarantine"] if r["file"] == "utf8.jsonl")
    assert "\\xe9" in row["raw"] and "byte" in row["detail"]
    assert {"u-0", "u-2"} <= kept_ids(bad_build)


@pytest.mark.slow
def test_missing_text_field(bad_build):
    assert q(bad_build, "broken", "missing.jsonl") == [(0, "missing_text")]
    row = next(r for r in bad_build["quarantine"] if r["file"] == "missing.jsonl")
    assert "'text'" in row["detail"] and "body" in row["detail"]


@pytest.mark.slow
def test_text_of_the_wrong_type(bad_build):
    assert q(bad_build, "broken", "wrongtype.jsonl") == [(0, "wrong_type"), (1, "wrong_type")]
    details = sorted(r["detail"] for r in bad_build["quarantine"] if r["file"] == "wrongtype.jsonl")
    assert "is int" in details[0] and "is list" in details[1]


@pytest.mark.slow
def test_empty_document(bad_build):
    assert q(bad_build, "broken", "emptydoc.jsonl") == [(0, "empty_text"), (1, "empty_text")]


@pytest.mark.slow
def test_empty_file(bad_build):
    assert q(bad_build, "broken", "empty.jsonl") == [(0, "empty_file")]
    assert q(bad_build, "pq", "no_rows.parquet") == [(0, "empty_file")]


@pytest.mark.slow
def test_50mb_document_is_dropped_by_the_length_gate_and_the_rest_of_its_file_kept(bad_build):
    store = bad_build["store"]
    rows = [r for f in (store / "_dropped" / "filtered").glob("*.parquet") for r in pq.read_table(f).to_pylist()]
    huge = [r for r in rows if r["id"] == "huge-1"]
    assert len(huge) == 1 and huge[0]["detail"].startswith(f"max_chars: {HUGE_CHARS:,} characters, over the maximum of ") and huge[0]["n_chars"] == HUGE_CHARS
    assert len(huge[0]["text_head"]) == 500
    assert "h-1" in kept_ids(bad_build)
    assert bad_build["artifact"].filtered_by_reason["max_chars"] == 1


@pytest.mark.slow
def test_truncated_gzip_keeps_the_records_before_the_break(bad_build):
    got = q(bad_build, "gz", "truncated.jsonl.gz")
    assert len(got) == 1 and got[0][1] == "truncated_file"
    good_before = got[0][0]  # the record index where the stream broke = records read intact before it
    assert 0 < good_before < 40
    assert {f"gz-{i}" for i in range(good_before)} <= kept_ids(bad_build)
    assert source_row(bad_build, "gz").docs_in == good_before + 1 + 1  # + the break + notgzip.jsonl.gz


@pytest.mark.slow
def test_not_a_gzip_file(bad_build):
    [(record, reason)] = q(bad_build, "gz", "notgzip.jsonl.gz")
    assert (record, reason) == (0, "truncated_file")
    row = next(r for r in bad_build["quarantine"] if r["file"] == "notgzip.jsonl.gz")
    assert "gzip" in row["detail"].lower()


@pytest.mark.slow
def test_truncated_zstd_is_detected(bad_build):
    """zstandard's stream reader ends silently on a cut file; the reader must notice the missing frame end."""
    got = q(bad_build, "zst", "truncated.jsonl.zst")
    assert [reason for _, reason in got] == ["truncated_file"], got  # not a half line reported as invalid_json
    good_before = got[0][0]
    assert 20 <= good_before < 40  # the first frame is whole
    assert {f"zst-{i}" for i in range(good_before)} <= kept_ids(bad_build)
    row = next(r for r in bad_build["quarantine"] if r["file"] == "truncated.jsonl.zst")
    assert "zstd" in row["detail"]


@pytest.mark.slow
def test_parquet_with_another_schema(bad_build):
    assert q(bad_build, "pq", "other_schema.parquet") == [(0, "missing_text"), (1, "missing_text"), (2, "missing_text")]
    row = next(r for r in bad_build["quarantine"] if r["file"] == "other_schema.parquet" and r["record"] == 1)
    assert json.loads(row["raw"]) == {"body": "b", "n": 2} and "body" in row["detail"]
    assert q(bad_build, "pq", "not_parquet.parquet") == [(0, "unreadable_file")]
    assert sum(1 for i in kept_ids(bad_build) if i.startswith("pq/good.parquet/")) == 20


@pytest.mark.slow
def test_duplicate_ids_across_sources(bad_build):
    """The first occurrence (spec order: `good` before `dup`) keeps the id; later ones are quarantined as
    duplicate_id, even when their text is identical (then exact dedup must not drop the first instead)."""
    got = q(bad_build, "dup", "part-0.jsonl")
    assert got == [(0, "duplicate_id"), (1, "duplicate_id")]
    details = [r["detail"] for r in bad_build["quarantine"] if r["reason"] == "duplicate_id" and r["source"] == "dup"]
    assert all("already used by source 'good'" in d for d in details)
    ids = kept_ids(bad_build)
    assert {"shared-1", "shared-2", "dup-own"} <= ids
    store = bad_build["store"]
    docs = [r for f in store.glob("cluster=*/quality=*/*.parquet")
            for r in pq.read_table(f, columns=["id", "source"]).to_pylist()]
    assert Counter(r["id"] for r in docs).most_common(1)[0][1] == 1  # ids are unique in the store
    assert {r["source"] for r in docs if r["id"] in ("shared-1", "shared-2")} == {"good"}


@pytest.mark.slow
def test_duplicate_id_within_a_source(bad_build):
    got = [(r["record"], r["reason"]) for r in bad_build["quarantine"] if r["reason"] == "duplicate_id" and r["source"] == "good"]
    assert got == [(63, "duplicate_id")]  # the second "twice"; the first (record 62) is kept
    assert "twice" in kept_ids(bad_build)


@pytest.mark.slow
def test_remote_file_without_read_permission(bad_build):
    [(record, reason)] = q(bad_build, "denied", "part-0.jsonl")
    assert (record, reason) == (0, "unreadable_file")
    row = next(r for r in bad_build["quarantine"] if r["source"] == "denied")
    assert "PermissionError" in row["detail"] and "storage.objects.get" in row["detail"]
    assert source_row(bad_build, "denied").docs_kept == 0


def _build_cli(tmp_path: Path, sources: list[dict]) -> tuple[int, str]:
    spec = {"name": "cfg", "sources": sources, "store": {"uri": str(tmp_path / "store")},
            "execution": {"tasks": 1, "workers": 1}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["build", str(path)])
    return result.exit_code, " ".join(result.output.split())


def test_source_glob_matching_nothing_stops_before_any_work(tmp_path: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text('{"text": "hello there general kenobi, you are a bold one"}\n')
    code, out = _build_cli(tmp_path, [{"name": "a", "uri": str(tmp_path / "data"), "format": "jsonl"},
                                      {"name": "web", "uri": str(tmp_path / "nothing" / "*.jsonl"), "format": "jsonl"}])
    assert code == 2, out
    assert "sources[1].uri" in out and "matches no jsonl file" in out and "nothing/*.jsonl" in out
    assert not (tmp_path / "store").exists()


def test_remote_source_without_list_permission_stops_before_any_work(tmp_path: Path):
    register_test_filesystems()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text('{"text": "hello"}\n')
    code, out = _build_cli(tmp_path, [{"name": "secret", "uri": f"nolist://{tmp_path / 'data'}", "format": "jsonl"}])
    assert code == 2, out
    assert "sources[0].uri" in out and "cannot list" in out and "PermissionError" in out, out
    assert "storage.objects.list" in out
    assert not (tmp_path / "store").exists()
