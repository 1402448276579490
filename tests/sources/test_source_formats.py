"""A source format is one registry entry and one reader: a `tsv` format registered here, with its reader below,
validates, lists, reads and builds without a change to any other module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app
from mixture.pipelines.sources.records import SourceFiles, bad_record, to_document
from mixture.spec import source_formats
from mixture.spec.source_formats import SourceFormat
from mixture.text.normalize import normalize_text

ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def _unescape(value: str) -> str:
    out, chars = [], iter(value)
    for ch in chars:
        out.append(UNESCAPES.get(next(chars, ""), "") if ch == "\\" else ch)
    return "".join(out)


def read_tsv(src: SourceFiles, rel: str) -> Iterator:
    """The reader of the `tsv` format: a header line naming the columns, then one record a line (tab, newline and
    backslash escaped); a line with another number of columns is quarantined."""
    with fsspec.open(f"{src.base}/{rel}", "rt", encoding="utf-8", newline="\n") as f:
        header = f.readline().rstrip("\n").split("\t")
        for idx, line in enumerate(f):
            values = line.rstrip("\n").split("\t")
            if len(values) != len(header):
                yield bad_record(src, rel, idx, "wrong_columns", f"{len(values)} columns, the header names "
                                                                 f"{len(header)}", line)
                continue
            yield to_document(src, rel, idx, dict(zip(header, map(_unescape, values), strict=True)), line)


TSV = SourceFormat("tsv", (".tsv",), reader=f"{__name__}:read_tsv")


@pytest.fixture
def tsv_format(monkeypatch):
    monkeypatch.setitem(source_formats.FORMATS, "tsv", TSV)


def tsv_line(*values: str) -> str:
    return "\t".join("".join(ESCAPES.get(c, c) for c in v) for v in values) + "\n"


def write_tsv(folder: Path, records: list[dict]) -> dict:
    """Two tsv files of `records` (id, text), the first with two bad lines; returns {file: {line: reason}}."""
    folder.mkdir(parents=True)
    half = len(records) // 2
    lines = [tsv_line(r["id"], r["text"]) for r in records]
    first = [*lines[:3], "only-one-column\n", lines[3], tsv_line("bad-empty", "  "), *lines[4:half]]
    (folder / "a.tsv").write_text(tsv_line("id", "text") + "".join(first), encoding="utf-8")
    (folder / "b.tsv").write_text(tsv_line("id", "text") + "".join(lines[half:]), encoding="utf-8")
    (folder / "notes.txt").write_text("not a source file\n")
    return {"a.tsv": {3: "wrong_columns", 5: "empty_text"}}


def corpus_records(corpus: Path, source: str) -> list[dict]:
    tables = [pq.read_table(f, columns=["id", "text"]) for f in sorted((corpus / source).glob("*.parquet"))]
    return pa.concat_tables(tables).to_pylist()


def tsv_spec(root: Path, uri: str) -> dict:
    """Every good record kept (no dedup, no decontamination, permissive filters)."""
    return {
        "name": "tsv",
        "seed": 0,
        "sources": [{"name": "table", "uri": uri, "format": "tsv", "category": "specialized"}],
        "processing": {
            "filters": {"length": {"min_chars": 1, "min_words": 1},
                        "heuristics": {"max_symbol_ratio": 1.0, "max_duplicate_line_ratio": 1.0}},
            "dedup": {"exact": {"enabled": False}, "fuzzy": {"enabled": False}},
            "decontamination": {"enabled": False},
        },
        "partition": {"clusters": {"k": 3, "fine_k": 12, "min_share": 0.02, "embedding_dim": 16}},
        "store": {"uri": str(root / "store"), "samples_per_cell": 2, "exemplars_per_cell": 1},
        "execution": {"executor": "local", "tasks": 2, "workers": 1},
    }


def validate(root: Path, spec: dict) -> tuple[int, str]:
    path = root / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["validate", str(path)])
    return result.exit_code, result.output


def test_the_spec_takes_a_registered_format(tsv_format, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.tsv").write_text(tsv_line("id", "text") + tsv_line("1", "hello world"))
    code, out = validate(tmp_path, tsv_spec(tmp_path, "data"))
    assert code == 0, out
    assert "tsv" in out and "1 file(s)" in out
    # a source that matches no file names the format's extensions
    code, out = validate(tmp_path, tsv_spec(tmp_path, "data/*.csv"))
    assert code == 2 and "sources[0].uri: source 'table' matches no tsv file (.tsv)" in out, out
    # an unknown format lists the registered ones; the spec schema offers them
    spec = tsv_spec(tmp_path, "data")
    spec["sources"][0]["format"] = "csv"
    code, out = validate(tmp_path, spec)
    assert code == 2 and "sources[0].format: Input should be" in out and "'tsv'" in out, out
    schema = CliRunner().invoke(app, ["schema"]).output
    assert '"tsv"' in schema
    # another format's fields are refused
    spec["sources"][0].update(format="tsv", split="train")
    code, out = validate(tmp_path, spec)
    assert code == 2 and "split applies to format: datasets only (this source has format: tsv)" in out, out


def test_its_reader_reads_every_unit(tsv_format, tmp_path, demo_corpus):
    from mixture.pipelines.context import BuildContext
    from mixture.pipelines.sources.files import SourceReader
    from mixture.spec.load import load_spec

    records = corpus_records(demo_corpus, "structured-data")[:40]
    bad = write_tsv(tmp_path / "data", records)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(tsv_spec(tmp_path, "data")))
    spec = load_spec(tmp_path / "spec.yaml")
    ctx = BuildContext(spec, str(tmp_path), str(tmp_path / "store"), 2)
    [src] = ctx.sources()
    assert src.files == ("a.tsv", "b.tsv") and all(src.sizes)
    assert [f.path for f in ctx.inputs().sources[0].files] == ["a.tsv", "b.tsv"]
    reader = SourceReader([src], str(tmp_path / "tally"))
    docs = [d for rank in range(2) for d in reader.run(rank=rank, world_size=2)]
    kept = {d.id: d.text for d in docs if "_bad" not in d.metadata}
    assert kept == {r["id"]: r["text"] for r in records}
    quarantined = {(d.metadata["_file"], d.metadata["_record"]): d.metadata["_bad"] for d in docs if "_bad" in d.metadata}
    assert quarantined == {("a.tsv", line): reason for line, reason in bad["a.tsv"].items()}


@pytest.mark.slow
def test_a_build_reads_it(tsv_format, tmp_path, demo_corpus):
    from mixture.accounting import StoreReader, audit
    from mixture.pipelines.build import build

    records = corpus_records(demo_corpus, "structured-data") + corpus_records(demo_corpus, "multilingual")
    write_tsv(tmp_path / "data", records)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(tsv_spec(tmp_path, str(tmp_path / "data"))))
    art = build(str(tmp_path / "spec.yaml"), progress=False)
    [entry] = art.sources
    assert (entry.format, entry.docs_in) == ("tsv", len(records) + 2)
    assert art.counters.bad_input == 2 and art.bad_input_by_reason == {"wrong_columns": 1, "empty_text": 1}
    store = tmp_path / "store"
    quarantine = [r for f in sorted((store / "_quarantine").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert sorted((r["source"], r["file"], r["record"], r["reason"]) for r in quarantine) == \
        [("table", "a.tsv", 3, "wrong_columns"), ("table", "a.tsv", 5, "empty_text")]
    kept = {r["id"]: r["text"] for f in sorted(store.glob("cluster=*/quality=*/*.parquet"))
            for r in pq.read_table(f, columns=["id", "text"]).to_pylist()}
    assert kept == {r["id"]: normalize_text(r["text"]) for r in records}
    assert audit(StoreReader(str(store))).ok
