"""Audit: passes on a valid store, and each kind of tampering is caught with a message naming the shard."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.local import LocalFileSystem
from typer.testing import CliRunner

from mixture.accounting import StoreReader, audit, connect
from mixture.cli import app
from mixture.fit.balance import cluster_balance
from mixture.store.formats import (
    Ledger,
    NearDuplicateReport,
    StoreArtifact,
    read_model,
    read_store_artifact,
    write_model,
)
from mixture.store.loss import store_loss

runner = CliRunner()


def _ledger(store: Path, cell_dir: str) -> Ledger:
    return read_model(Ledger, str(store / cell_dir / "_ledger.json"))


def _store_json(store: Path) -> StoreArtifact:
    return read_store_artifact(str(store / "store.json"))


def _write(path: Path, model: Ledger | StoreArtifact) -> None:
    """A tampered but well-formed file, written through its model as the build writes it."""
    write_model(LocalFileSystem(), str(path), model)


def test_audit_passes_on_valid_store(store: Path, template_store) -> None:
    result = audit(StoreReader(str(store)), deep=True, sample=50)
    assert result.status == "ok", result.messages()
    assert [c.status for c in result.checks] == ["pass"] * len(result.checks)
    n_shards = sum(c.shards for c in template_store[1].cells)
    assert result.check("files").checked == n_shards == 45
    assert result.check("checksums").checked == n_shards
    assert result.check("tokens (deep)").checked == 50
    cli = runner.invoke(app, ["audit", str(store)])
    assert cli.exit_code == 0, cli.output
    assert "every invariant holds" in cli.output


def test_delete_a_shard(store: Path) -> None:
    (store / "cluster=01/quality=2/part-00001.parquet").unlink()
    result = audit(StoreReader(str(store)))
    assert result.status == "failed"
    msgs = [f.message() for f in result.check("files").failures]
    assert msgs == ["cluster=01/quality=2/part-00001.parquet: listed in the ledger but missing on storage; "
                    "rebuild the cell"]
    cli = runner.invoke(app, ["audit", str(store)])
    assert cli.exit_code == 1
    assert "cluster=01/quality=2/part-00001.parquet" in cli.output


def test_stray_parquet_file(store: Path) -> None:
    shutil.copy(store / "cluster=00/quality=0/part-00000.parquet", store / "cluster=00/quality=0/part-00099.parquet")
    result = audit(StoreReader(str(store)))
    fails = result.check("files").failures
    assert len(fails) == 1 and fails[0].where == "cluster=00/quality=0/part-00099.parquet"
    assert "unlisted" in fails[0].what
    # readers never see the unlisted file
    con = connect(StoreReader(str(store)))
    assert con.execute("SELECT count(*) FROM documents").fetchone()[0] == sum(
        lg.total_num_rows for lg in StoreReader(str(store)).ledger_models().values())


def test_changed_n_tokens_value(store: Path) -> None:
    rel = "cluster=02/quality=3/part-00001.parquet"
    table = pq.read_table(store / rel)
    tokens = table["n_tokens"].to_pylist()
    tokens[0] += 1
    pq.write_table(table.set_column(table.schema.get_field_index("n_tokens"), "n_tokens",
                                    pc.cast(tokens, "int64")), store / rel)
    ledger_tokens = next(s.tokens for s in _ledger(store, "cluster=02/quality=3").shards
                         if s.path == "part-00001.parquet")
    result = audit(StoreReader(str(store)))
    fails = [f for f in result.check("n_tokens").failures if f.where != "store"]
    assert len(fails) == 1
    assert (fails[0].where, fails[0].expected, fails[0].found) == (rel, ledger_tokens, ledger_tokens + 1)
    assert result.check("n_tokens").failures[-1].where == "store"  # Σ n_tokens no longer equals tokens_out
    assert rel in fails[0].message() and f"{ledger_tokens:,}" in fails[0].message()
    assert [f.where for f in result.check("checksums").failures] == [rel]
    assert result.check("rows").status == "pass"


def test_truncated_file(store: Path) -> None:
    rel = "cluster=00/quality=4/001_part-00000.parquet"
    data = (store / rel).read_bytes()
    (store / rel).write_bytes(data[: len(data) // 2])
    result = audit(StoreReader(str(store)))
    size = result.check("files").failures
    assert [(f.where, f.expected, f.found) for f in size] == [(rel, len(data), len(data) // 2)]
    rows = result.check("rows").failures
    assert [f.where for f in rows] == [rel] and "unreadable Parquet" in rows[0].what
    # other files were still checked file by file
    assert result.check("rows").checked == 45
    assert len(result.check("n_tokens").failures) == 1


def test_edited_ledger_total(store: Path) -> None:
    ledger = _ledger(store, "cluster=01/quality=0")
    true_total = ledger.total_tokens
    ledger.total_tokens += 5
    _write(store / "cluster=01/quality=0/_ledger.json", ledger)
    result = audit(StoreReader(str(store)))
    fails = result.check("ledgers").failures
    assert [(f.where, f.what, f.expected, f.found) for f in fails] == [
        ("cluster=01/quality=0/_ledger.json", "total_tokens", true_total, true_total + 5)]
    cli = runner.invoke(app, ["audit", str(store)])
    assert cli.exit_code == 1 and "cluster=01/quality=0/_ledger.json" in cli.output


def test_edited_shard_entry_caught_by_footer_and_artifact(store: Path) -> None:
    ledger = _ledger(store, "cluster=01/quality=1")
    ledger.shards[0].rows += 1
    ledger.total_num_rows += 1
    _write(store / "cluster=01/quality=1/_ledger.json", ledger)
    result = audit(StoreReader(str(store)))
    rows = result.check("rows").failures
    assert [(f.where, f.expected - f.found) for f in rows] == [("cluster=01/quality=1/part-00000.parquet", 1)]
    assert [f.where for f in result.check("cells").failures] == ["c01q1"]


def test_removed_store_json_is_building(store: Path) -> None:
    (store / "store.json").unlink()
    result = audit(StoreReader(str(store)))
    assert result.status == "building" and result.exit_code == 1
    cli = runner.invoke(app, ["audit", str(store)])
    assert cli.exit_code == 1
    assert "building" in cli.output and "corrupt" not in cli.output.lower()
    report = runner.invoke(app, ["report", str(store)])
    assert report.exit_code == 1 and "building" in report.output


def test_counter_mismatch_named(store: Path) -> None:
    art = _store_json(store)
    art.counters.records_in += 3
    art.counters.filtered += 1
    _write(store / "store.json", art)
    result = audit(StoreReader(str(store)))
    counters = {(f.where, f.expected_from): (f.expected, f.found) for f in result.check("counters").failures}
    assert counters[("records_in", "records_out + bad_input + every drop")][1] - counters[
        ("records_in", "records_out + bad_input + every drop")][0] == 2
    side = result.check("side files").failures
    assert [(f.where, f.found - f.expected) for f in side] == [("_dropped/filtered/", 1)]


def test_deep_catches_wrong_token_count_with_consistent_ledger(store: Path) -> None:
    """A wrong n_tokens that the ledger agrees with is only visible by re-tokenizing."""
    import xxhash

    rel_dir, name = "cluster=00/quality=1", "part-00000.parquet"
    table = pq.read_table(store / rel_dir / name)
    tokens = table["n_tokens"].to_pylist()
    tokens[2] += 3
    pq.write_table(table.set_column(table.schema.get_field_index("n_tokens"), "n_tokens",
                                    pc.cast(tokens, "int64")), store / rel_dir / name)
    data = (store / rel_dir / name).read_bytes()
    lg = _ledger(store, rel_dir)
    lg.shards[0] = lg.shards[0].model_copy(update={"tokens": lg.shards[0].tokens + 3, "bytes": len(data),
                                                   "xxh64": xxhash.xxh64(data).hexdigest()})
    lg.total_tokens += 3
    _write(store / rel_dir / "_ledger.json", lg)
    art = _store_json(store)
    art.cell_entries()["c00q1"].tokens += 3
    art.clusters[0].tokens += 3
    art.counters.tokens_out += 3
    src = table["source"][2].as_py()
    next(s for s in art.sources if s.name == src).tokens_kept += 3
    art.cluster_balance = cluster_balance(art.clusters, art.cluster_balance.min_share, art.cluster_balance.max_share)
    _write(store / "store.json", art)
    assert audit(StoreReader(str(store))).status == "ok"
    deep = audit(StoreReader(str(store)), deep=True, sample=0)
    fails = deep.check("tokens (deep)").failures
    doc_id = table["id"][2].as_py()
    assert [(f.where, f.expected - f.found) for f in fails] == [(f"{rel_dir}/{name} id={doc_id}", 3)]


@pytest.mark.parametrize("args", [["audit", "/nonexistent/store"], ["report", "/nonexistent/store"]])
def test_missing_store_is_bad_usage(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "no such store" in result.output


def test_source_recount_in_deep(store: Path) -> None:
    art = _store_json(store)
    src = art.sources[1]
    true_tokens = src.tokens_kept
    src.tokens_kept += 10
    art.sources[0].tokens_kept -= 10  # keeps Σ sources = tokens_out: only a recount can see it
    _write(store / "store.json", art)
    assert audit(StoreReader(str(store))).status == "ok"
    deep = audit(StoreReader(str(store)), deep=True, sample=10)
    fails = {(f.where, f.what): (f.expected, f.found) for f in deep.check("sources").failures}
    assert fails[(f"source {src.name}", "tokens")] == (true_tokens + 10, true_tokens)
    assert len(fails) == 2


def test_store_json_with_a_wrong_field_type_fails_the_audit_naming_the_field(store: Path) -> None:
    # a file no model can write: edited as raw JSON
    art = json.loads((store / "store.json").read_text())
    art["counters"]["filtered"] = str(art["counters"]["filtered"])
    art["cells"][2]["tokens"] += 0.5
    del art["partition"]["k"]
    (store / "store.json").write_text(json.dumps(art))
    result = audit(StoreReader(str(store)))
    assert result.status == "failed"
    fails = [f.what for f in result.check("artifact").failures]
    assert any(f.startswith("counters.filtered: Input should be a valid integer, found '") for f in fails), fails
    assert any(f.startswith("cells[2].tokens: Input should be a valid integer, found ") for f in fails), fails
    assert "partition.k: required field is missing" in fails
    cli = runner.invoke(app, ["audit", str(store)])
    assert cli.exit_code == 1 and "counters.filtered" in cli.output and "cells[2].tokens" in cli.output
    report = runner.invoke(app, ["report", str(store)])  # readers refuse it too, naming the file and field
    assert report.exit_code == 1 and "store.json: counters.filtered" in report.output
    # `mixture sql` still queries the files, naming the fields and leaving out the views of store.json
    sql = runner.invoke(app, ["sql", str(store), "SELECT count(*) AS n FROM documents"])
    assert sql.exit_code == 0 and "store.json: counters.filtered" in sql.output and "left out" in sql.output
    assert runner.invoke(app, ["sql", str(store), "SELECT * FROM counters"]).exit_code == 1


def test_a_ledger_with_a_wrong_field_type_is_an_unreadable_ledger(store: Path) -> None:
    path = store / "cluster=01/quality=0/_ledger.json"  # a file no model can write: edited as raw JSON
    ledger = json.loads(path.read_text())
    ledger["shards"][0]["rows"] = "many"
    path.write_text(json.dumps(ledger))
    reader = StoreReader(str(store))
    assert "cluster=01/quality=0" not in reader.ledger_models()
    assert "shards[0].rows: Input should be a valid integer" in reader.ledger_errors()["cluster=01/quality=0"]
    fails = [f.message() for f in audit(reader).check("ledgers").failures]
    assert any(m.startswith("cluster=01/quality=0/_ledger.json: unreadable ledger (shards[0].rows:") for m in fails)


def _with_reports(store: Path) -> StoreArtifact:
    """The synthetic store with the loss, near-duplicate and cluster-balance blocks a build writes."""
    art = _store_json(store)
    nd = NearDuplicateReport(measure="word 5-gram Jaccard", threshold=0.7, anchors=8, signature_margin=0.1,
                             band_pairs=9, buckets=4, documents=8, pairs_considered=6, pairs_ruled_out=2,
                             pairs_compared=4, pairs_verified=1, pairs_rejected=5,
                             drops=art.counters.fuzzy_duplicate_dropped, kept_similar=0)
    art = art.model_copy(update={"loss": store_loss(art, 0.5), "near_duplicates": nd,
                                 "cluster_balance": cluster_balance(art.clusters, 0.0, 0.9)})
    _write(store / "store.json", art)
    return art


def test_reports_agree_with_what_they_summarise(store: Path) -> None:
    art = _with_reports(store)
    result = audit(StoreReader(str(store)))
    assert result.status == "ok", result.messages()
    assert result.check("reports").status == "pass" and result.check("reports").checked > 10

    loss = art.loss.model_copy(update={"over": ["web"]})
    first = art.loss.sources[0].model_copy(update={"quarantined": art.loss.sources[0].quarantined + 5})
    loss.sources[0] = first
    nd = art.near_duplicates.model_copy(update={"drops": 7, "pairs_compared": 3})
    balance = art.cluster_balance.model_copy(update={"largest_cluster": art.cluster_balance.smallest_cluster + 1})
    _write(store / "store.json", art.model_copy(update={"loss": loss, "near_duplicates": nd,
                                                        "cluster_balance": balance}))
    result = audit(StoreReader(str(store)))
    assert result.status == "failed"
    msgs = [f.message() for f in result.check("reports").failures]
    assert f"loss {first.name}: quarantined: sources[] and its broken files {first.quarantined - 5} ≠ store.json " \
           f"{first.quarantined}" in msgs, msgs
    assert "loss: over: sources whose verdict is not ok [] ≠ store.json ['web']" in msgs, msgs
    assert f"near_duplicates: drops: counters.fuzzy_duplicate_dropped {art.counters.fuzzy_duplicate_dropped} ≠ " \
           "store.json 7" in msgs, msgs
    assert "near_duplicates: pairs_considered: pairs_ruled_out + pairs_compared 5 ≠ store.json 6" in msgs, msgs
    assert any(m.startswith("cluster_balance: largest_cluster: clusters[] tokens and docs") for m in msgs), msgs
    cli = runner.invoke(app, ["audit", str(store)])
    assert cli.exit_code == 1 and "near_duplicates: drops" in cli.output
