"""Nothing corrupt reaches a trainer: a store shard or a mixture shard whose bytes changed after they were written
stops materialize, `load_store`, `load_mixture`, the document scan and `mixture realised`, naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_planner_materialize import write_plan_spec
from typer.testing import CliRunner

from mixture.accounting import CorruptShard, StoreReader, find_document, scan_documents
from mixture.cli import app
from mixture.datasets import load_mixture, load_store
from mixture.planner.formats import read_plan
from mixture.planner.realised import realised_ledger
from tests.accounting.test_damaged_shard_reads import break_page_header

SHARD = "cluster=00/quality=1/part-00000.parquet"


def flip_bit(path: Path, at: float = 0.5) -> None:
    """One bit flipped in the middle of the file: same size, other bytes (what bit rot does)."""
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0x10
    path.write_bytes(bytes(data))


def make_plan(tmp_path: Path, store: Path) -> Path:
    plan = tmp_path / "plan.json"
    res = CliRunner().invoke(app, ["plan", str(write_plan_spec(tmp_path, store)), "--out", str(plan)])
    assert res.exit_code == 0, res.output
    return plan


def test_materialize_refuses_a_store_shard_changed_after_the_build(tmp_path: Path, synthetic_store: Path):
    plan = make_plan(tmp_path, synthetic_store)
    flip_bit(synthetic_store / SHARD)
    out = tmp_path / "mix"
    res = CliRunner().invoke(app, ["materialize", str(plan), "--out", str(out), "--shard-bytes", "8KB"])
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert SHARD in text and "xxh64" in text and "mixture audit" in text and "Traceback" not in text
    assert not (out / "manifest.json").exists()


def test_load_store_and_the_scan_refuse_a_changed_shard(synthetic_store: Path):
    assert len(load_store(str(synthetic_store), cells="c00q1")) == 60
    changed = pq.ParquetFile(synthetic_store / SHARD).read(columns=["id"]).column("id")[0].as_py()
    flip_bit(synthetic_store / SHARD)
    with pytest.raises(CorruptShard, match=r"cluster=00/quality=1/part-00000\.parquet.*mixture audit"):
        load_store(str(synthetic_store), cells="c00q1")
    assert len(load_store(str(synthetic_store), cells="c01q2")) == 30  # the other cells' shards are intact
    with pytest.raises(CorruptShard, match="xxh64"):
        scan_documents(StoreReader(str(synthetic_store)), text="w")
    doc_id = load_store(str(synthetic_store), cells="c01q2")[0]["id"]
    assert len(find_document(StoreReader(str(synthetic_store)), doc_id)) == 1  # an intact shard opens by id
    with pytest.raises(CorruptShard, match="xxh64"):
        find_document(StoreReader(str(synthetic_store)), changed)
    (synthetic_store / SHARD).write_bytes((synthetic_store / SHARD).read_bytes()[:-7])
    with pytest.raises(CorruptShard, match="bytes, its ledger"):
        load_store(str(synthetic_store), cells="c00q1")


def test_a_changed_mixture_shard_is_refused_by_load_mixture_and_realised(tmp_path: Path, synthetic_store: Path):
    plan = make_plan(tmp_path, synthetic_store)
    out = tmp_path / "mix"
    runner = CliRunner()
    res = runner.invoke(app, ["materialize", str(plan), "--out", str(out), "--shard-bytes", "8KB"])
    assert res.exit_code == 0, res.output
    assert len(load_mixture(str(out), phase="a")) > 0
    shard = sorted((out / "phase=a").glob("part-*.parquet"))[1]
    good = shard.read_bytes()
    flip_bit(shard, 0.3)
    with pytest.raises(CorruptShard, match=rf"phase=a/{shard.name}.*manifest"):
        load_mixture(str(out), phase="a")
    res = runner.invoke(app, ["realised", str(out), str(plan)])
    assert res.exit_code == 1 and "not as the manifest recorded" in " ".join(res.output.split())
    corrupt = realised_ledger(out, read_plan(str(plan)))["corrupt"]
    assert len(corrupt) == 1 and f"phase=a/{shard.name}: xxh64" in corrupt[0]
    shard.write_bytes(good)
    break_page_header(shard)  # DuckDB's recount fails on it, naming no file: the manifest's check names it
    res = runner.invoke(app, ["realised", str(out), str(plan)])
    assert res.exit_code == 2 and f"phase=a/{shard.name}: xxh64" in " ".join(res.output.split()), res.output
    assert isinstance(res.exception, SystemExit)


def test_materialize_and_overview_into_a_folder_that_cannot_be_written_say_so(tmp_path: Path, synthetic_store: Path):
    """An --out that cannot be made (here under a regular file; a read-only folder fails the same way): one line
    naming the place and what to do, exit 1, no traceback."""
    plan = make_plan(tmp_path, synthetic_store)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    runner = CliRunner()
    res = runner.invoke(app, ["materialize", str(plan), "--out", str(blocker / "mix"), "--shard-bytes", "8KB"])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "cannot write the mixture" in text and "a-file" in text, res.output
    assert "Traceback" not in text and res.exception is None or isinstance(res.exception, SystemExit)
    res = runner.invoke(app, ["overview", str(synthetic_store), "--out", str(blocker / "site")])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and "cannot write the overview" in text and "a-file" in text, res.output
    assert isinstance(res.exception, SystemExit)


@pytest.mark.parametrize("keep_work", [False, True])
def test_a_rerun_onto_a_finished_mixture_with_a_changed_shard_names_it_and_writes_it_again(
        tmp_path: Path, synthetic_store: Path, keep_work: bool):
    """The rerun checks every shard's xxh64, not its size alone (a flipped bit keeps the size): the damaged shard is
    named on the terminal and the mixture written again, to the bytes of the first run."""
    plan = make_plan(tmp_path, synthetic_store)
    out = tmp_path / "mix"
    args = ["materialize", str(plan), "--out", str(out), "--shard-bytes", "8KB"] + (["--keep-work"] * keep_work)
    runner = CliRunner()
    assert runner.invoke(app, args).exit_code == 0
    shard = sorted((out / "phase=a").glob("part-*.parquet"))[1]
    good = shard.read_bytes()
    flip_bit(shard, 0.3)
    res = runner.invoke(app, args)
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert f"phase=a/{shard.name}: xxh64" in text and "Writing the mixture again" in text, text
    assert shard.read_bytes() == good
    assert len(load_mixture(str(out), phase="a")) > 0  # every shard matches the manifest again
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "warning" not in res.output


def test_a_store_shard_with_a_broken_page_header_is_named_not_a_traceback(tmp_path: Path, synthetic_store: Path):
    """The draw reads the shards' sizes with DuckDB before any text: a broken page header fails that query with no
    file named ("don't know what type"); the ledger names the shard and the message points to `mixture audit`."""
    plan = make_plan(tmp_path, synthetic_store)
    shard = synthetic_store / SHARD
    data = bytearray(shard.read_bytes())
    data[4:68] = b"\xff" * 64  # the first page's header, right after the magic bytes
    shard.write_bytes(bytes(data))
    res = CliRunner().invoke(app, ["materialize", str(plan), "--out", str(tmp_path / "mix"), "--shard-bytes", "8KB"])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and SHARD in text and "mixture audit" in text, res.output
    assert isinstance(res.exception, SystemExit)


def test_a_rerun_after_the_store_was_rebuilt_draws_again(tmp_path: Path, synthetic_store: Path):
    """A store rebuilt at the same place with the same counts (another id field, say) is another store: its
    finished mixture of the old store is drawn again, not left as it is (the counts alone matched)."""
    plan = make_plan(tmp_path, synthetic_store)
    out = tmp_path / "mix"
    args = ["materialize", str(plan), "--out", str(out), "--shard-bytes", "8KB"]
    assert CliRunner().invoke(app, args).exit_code == 0
    before = json.loads((out / "manifest.json").read_text())
    art = json.loads((synthetic_store / "store.json").read_text())
    assert before["store_created"] == art["created"]
    art["created"] = "2031-01-01T00:00:00Z"  # what a rebuild changes, whatever else stays the same
    (synthetic_store / "store.json").write_text(json.dumps(art))
    (out / "phase=a" / "_manifest.json").unlink()  # written again only by a new draw
    assert CliRunner().invoke(app, args).exit_code == 0
    assert json.loads((out / "manifest.json").read_text())["store_created"] == "2031-01-01T00:00:00Z"
    assert (out / "phase=a" / "_manifest.json").exists()
