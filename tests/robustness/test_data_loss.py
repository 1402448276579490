"""Loss is loud: records lost to a truncated file (estimated from the bytes not read) or quarantined are shown per
source at the end of every build and in `mixture summary`, recorded in store.json, and a source over
`processing.max_loss` (or keeping nothing) makes `mixture build` exit 3 unless --accept-loss."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from mixture.accounting import StoreReader, audit
from mixture.cli import app
from mixture.pipelines.sources.files import SourceReader
from mixture.pipelines.sources.records import SourceFiles, lost_after_break
from mixture.store.formats import BrokenFile, read_store_artifact
from mixture.store.loss import loss_info, source_loss, store_loss
from tests.robustness.badinput import jsonl, sentence_text

PARTITION = {"clusters": {"k": 2, "fine_k": 6, "min_share": 0.05, "embedding_dim": 8}}


def records(rng: random.Random, prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}-{i}", "text": sentence_text(rng, rng.randint(40, 120))} for i in range(n)]


def varied(rng: random.Random, prefix: str, n: int) -> list[dict]:
    """Records of made-up words: text that compresses about as evenly along a file as real text does."""
    def word() -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))

    return [{"id": f"{prefix}-{i}", "text": " ".join(word() for _ in range(rng.randint(60, 90))) + "."}
            for i in range(n)]


def write_lossy_corpus(root: Path) -> dict:
    """good/: 120 clean records; gz/: a.jsonl.gz whole and b.jsonl.gz (as many records, as large) cut at 60 %;
    pq/: a Parquet file whose text column is int64. Returns what the reader must find."""
    rng = random.Random(13)
    c = root / "corpus"
    for d in ("good", "gz", "pq"):
        (c / d).mkdir(parents=True)
    (c / "good" / "part-0.jsonl").write_bytes(jsonl(records(rng, "good", 120)))
    (c / "gz" / "a.jsonl.gz").write_bytes(gzip.compress(jsonl(varied(rng, "a", 100))))
    whole = gzip.compress(jsonl(varied(rng, "b", 100)))
    (c / "gz" / "b.jsonl.gz").write_bytes(whole[: len(whole) * 6 // 10])
    pq.write_table(pa.table({"id": [f"p-{i}" for i in range(30)], "text": pa.array(range(30), pa.int64())}),
                   c / "pq" / "part-0.parquet")
    return {"b_records": 100}


def lossy_spec(root: Path, store: str = "store", sources: tuple[str, ...] = ("good", "gz", "pq")) -> Path:
    formats = {"good": "jsonl", "gz": "jsonl.gz", "pq": "parquet", "short": "jsonl"}
    spec = {"name": "lossy", "sources": [{"name": s, "uri": f"corpus/{s}", "format": formats[s]} for s in sources],
            "processing": {"decontamination": {"enabled": False}}, "partition": PARTITION,
            "store": {"uri": store, "samples_per_cell": 2, "exemplars_per_cell": 1},
            "execution": {"executor": "local", "tasks": 2, "workers": 1}}
    path = root / f"{store}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes is not None else "")


def loss_table(text: str) -> list[str]:
    """The lines of the data loss table and the broken files under it (as printed)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "data loss per source" in line)
    end = next(i for i, line in enumerate(lines) if "largest domains" in line)
    return [" ".join(line.split()) for line in lines[start:end] if line.strip()]


@pytest.fixture(scope="module")
def lossy(tmp_path_factory):
    root = tmp_path_factory.mktemp("lossy")
    truth = write_lossy_corpus(root)
    code, out = cli("build", str(lossy_spec(root)))
    return {"root": root, "store": root / "store", "code": code, "out": out, **truth}


@pytest.mark.slow
def test_a_truncated_gzip_and_a_wrong_typed_column_exit_3_with_the_table(lossy):
    assert lossy["code"] == 3, lossy["out"]
    flat = " ".join(lossy["out"].split())
    assert "records per source" in flat and "data loss per source (max_loss 1.0%)" in flat
    rows = {line.split()[0]: line for line in loss_table(lossy["out"])}
    assert "over 1.0%" in rows["gz"] and "kept nothing" in rows["pq"] and "good" not in rows
    assert "built, with data loss (exit 3) in gz, pq" in flat and "--accept-loss" in flat
    assert re.search(r"gz: b\.jsonl\.gz: truncated_file after \d+ records, ~\d+ lost \(estimate", flat), flat


@pytest.mark.slow
def test_the_store_is_complete_and_records_the_loss_per_source(lossy):
    store = lossy["store"]
    art = read_store_artifact(str(store / "store.json"))
    result = audit(StoreReader(str(store)))
    assert result.ok, result.messages()
    loss = {s.name: s for s in art.loss.sources}
    assert art.loss.max_loss == 0.01 and art.loss.over == ["gz", "pq"]
    assert loss["good"].verdict == "ok" and loss["good"].share == 0
    assert loss["pq"].verdict == "kept nothing" and loss["pq"].quarantined == 30 and loss["pq"].kept == 0
    [broken] = loss["gz"].broken_files
    assert broken.file == "b.jsonl.gz" and broken.reason == "truncated_file" and broken.how.startswith("estimate")
    true_lost = lossy["b_records"] - broken.records_read
    assert 0.8 * true_lost <= broken.lost <= 1.2 * true_lost, (broken, true_lost)
    assert loss["gz"].lost == broken.lost and loss["gz"].records_read == 100 + broken.records_read + 1
    assert loss["gz"].share == pytest.approx((1 + broken.lost) / (loss["gz"].records_read + broken.lost))
    # the quarantine row of the broken file says the same
    rows = [r for f in sorted((store / "_quarantine").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    [row] = [r for r in rows if r["file"] == "b.jsonl.gz"]
    assert f"{broken.records_read:,} records read before the break, ~{broken.lost:,} more lost (estimate" in row["detail"]


@pytest.mark.slow
def test_a_rerun_of_the_finished_store_still_exits_3(lossy):
    code, out = cli("build", str(lossy_spec(lossy["root"])))
    flat = " ".join(out.split())
    assert code == 3 and "already built" in flat and "with data loss (exit 3) in gz, pq" in flat, out
    code, out = cli("build", str(lossy_spec(lossy["root"])), "--accept-loss")
    assert code == 0 and "data loss accepted (--accept-loss): gz, pq" in " ".join(out.split()), out


@pytest.mark.slow
def test_summary_shows_the_same_table(lossy):
    code, out = cli("summary", str(lossy["store"]))
    assert code == 0, out
    assert loss_table(out) == loss_table(lossy["out"])


@pytest.mark.slow
def test_accept_loss_exits_0(lossy):
    code, out = cli("build", str(lossy_spec(lossy["root"], "accepted")), "--accept-loss")
    assert code == 0, out
    assert "data loss accepted (--accept-loss): gz, pq" in " ".join(out.split())
    assert (lossy["root"] / "accepted" / "store.json").exists()


@pytest.mark.slow
def test_a_source_that_keeps_nothing_exits_3(lossy):
    """Nothing quarantined or lost: every record of `short` is dropped by the length gate."""
    root = lossy["root"]
    (root / "corpus" / "short").mkdir()
    (root / "corpus" / "short" / "part-0.jsonl").write_bytes(jsonl([{"id": f"s-{i}", "text": "too short"}
                                                                     for i in range(20)]))
    code, out = cli("build", str(lossy_spec(root, "kept-nothing", ("good", "short"))))
    assert code == 3, out
    art = read_store_artifact(str(root / "kept-nothing" / "store.json"))
    assert {s.name: s.verdict for s in art.loss.sources} == {"good": "ok", "short": "kept nothing"}
    assert "short (kept nothing)" in " ".join(out.split())


# ------------------------------------------------------------------------------------------- units (no build)
def test_lost_records_are_estimated_from_the_bytes_not_read():
    assert lost_after_break(40, 250, 1000, []) == (120, "estimate: 40 records in the first 250 of its 1,000 "
                                                        "compressed bytes")
    lost, how = lost_after_break(60, 600, 600, [1000, 1010, 990])  # truncated: ends inside its stream
    assert lost == 40 and how.startswith("estimate: the file is 600 bytes, its source's other files 1,000")
    assert lost_after_break(60, 600, 600, [])[0] is None  # nothing tells the file's size
    assert lost_after_break(60, 600, 600, [500])[0] is None  # its siblings are smaller: no estimate
    assert lost_after_break(0, 0, 600, [1000])[0] is None  # no record read: no rate


def test_a_gzip_broken_mid_file_estimates_the_records_after_the_break(tmp_path):
    rng = random.Random(1)
    members = [gzip.compress(jsonl([{"id": f"r{m}-{i}", "text": "".join(rng.choice("abcdefgh ") for _ in range(400))}
                                    for i in range(500)])) for m in range(4)]
    data = b"".join(members)
    at = len(members[0]) + len(members[1])
    (tmp_path / "a.jsonl.gz").write_bytes(data[:at] + b"XX" + data[at + 2:])  # the third member's header
    src = SourceFiles("s", "web", "jsonl.gz", str(tmp_path), ("a.jsonl.gz",), "text", "id", False, (len(data),))
    docs = list(SourceReader([src], str(tmp_path / "tally")).read_file(src, "a.jsonl.gz"))
    m = docs[-1].metadata
    assert len(docs) == 1001 and m["_bad"] == "truncated_file" and m["_read"] == 1000
    assert 700 <= m["_lost"] <= 1300 and m["_lost_how"].startswith("estimate: 1,000 records in the first")
    assert "1,000 records read before the break" in m["_detail"]


def test_verdicts():
    broken = [BrokenFile(file="a", reason="truncated_file", records_read=10, lost=None, how="unknown: x")]
    assert source_loss("s", 100, 0, 0, [], 0.01).verdict == "kept nothing"
    assert source_loss("s", 100, 90, 0, broken, 0.01).verdict == "unknown loss"
    assert source_loss("s", 100, 90, 2, [], 0.01).verdict == "over max_loss"
    assert source_loss("s", 100, 90, 2, [], 0.05).verdict == "ok"
    assert source_loss("s", 1000, 990, 10, [], 0.01).verdict == "ok"  # exactly at the limit


def test_a_stores_loss_is_judged_again_from_its_sources_and_broken_files(built_store):
    art = built_store.artifact
    assert store_loss(art) == art.loss == loss_info(art.sources, {}, art.loss.max_loss)  # no broken file
    judged = store_loss(art, 0.0)  # the recorded facts judged against another limit
    assert set(judged.over) == {s.name for s in built_store.artifact.sources if s.bad_input or not s.docs_kept}


def test_the_loss_block_is_written_and_read_through_the_model(built_store):
    art = built_store.artifact
    assert art.loss is not None and art.loss.max_loss == 0.05  # the demo spec's, for its planted bad records
    assert [s.name for s in art.loss.sources] == [s.name for s in art.sources]
    web = next(s for s in art.loss.sources if s.name == "web-like")
    assert web.quarantined == next(s.bad_input for s in art.sources if s.name == "web-like") > 0
    assert web.verdict == "ok" and web.share < 0.05
    json.dumps(art.model_dump(mode="json"))  # serialisable as written
