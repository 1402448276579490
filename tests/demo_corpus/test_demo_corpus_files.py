"""The written demo corpus: manifest, formats, fields, determinism and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mixture.cli import app
from mixture.demo_corpus import read
from mixture.demo_corpus.tokens import count

from .conftest import SCALE

SOURCE_KEYS = {"name", "category", "license", "format", "uri_glob", "text_field", "id_field",
               "exempt_from_fuzzy_dedup", "files", "docs", "approx_tokens"}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_manifest_lists_real_sources_and_formats(corpus: Path) -> None:
    m = read.manifest(corpus)
    assert m["seed"] == 0 and m["scale"] == SCALE and m["python_version"].count(".") == 2
    names = [s["name"] for s in m["sources"]]
    assert len(names) >= 6 and len(set(names)) == len(names)
    assert {"stdlib-code", "stdlib-docstrings", "python-reference", "web-like", "synthetic-dialogues"} <= set(names)
    assert {"jsonl", "jsonl.gz", "parquet"} <= {s["format"] for s in m["sources"]}
    assert {"code", "prose", "web", "synthetic", "specialized"} <= {s["category"] for s in m["sources"]}
    for s in m["sources"]:
        assert set(s) >= SOURCE_KEYS, s["name"]
        shards = read.shard_paths(corpus, s)
        assert len(shards) == s["files"] and 1 <= len(shards) <= 8, s["name"]
        assert sum(1 for _ in read.iter_records(corpus, s)) == s["docs"], s["name"]
        assert s["approx_tokens"] > 0
    assert [s["name"] for s in m["sources"] if s["exempt_from_fuzzy_dedup"]] == ["synthetic-dialogues"]
    assert m["totals"]["docs"] == sum(s["docs"] for s in m["sources"])


def test_field_names_exercise_the_spec_options(corpus: Path) -> None:
    code = read.source_entry(corpus, "stdlib-code")
    assert (code["id_field"], code["text_field"]) == ("path", "content")
    rows = [r for _, _, r in read.iter_records(corpus, code)]
    assert all(r["path"].startswith("stdlib/") and r["path"].endswith(".py") and r["content"] for r in rows)
    ref = read.source_entry(corpus, "python-reference")
    assert ref["id_field"] is None
    assert all("id" not in r and r["text"] for _, _, r in read.iter_records(corpus, ref))


def test_ids_are_unique_across_sources(corpus: Path) -> None:
    seen: set[str] = set()
    for s in read.manifest(corpus)["sources"]:
        if s["id_field"] is None:
            continue
        ids = [r[s["id_field"]] for _, _, r in read.iter_records(corpus, s) if r is not None and s["id_field"] in r]
        assert len(ids) == len(set(ids)), s["name"]
        assert not seen & set(ids), s["name"]
        seen |= set(ids)


def test_only_the_planted_document_exceeds_max_chars(corpus: Path) -> None:
    gt = read.ground_truth(corpus)
    (large,) = gt["large_documents"]
    assert large["chars"] >= 1_200_000
    over = []
    for s in read.manifest(corpus)["sources"]:
        for _, _, r in read.iter_records(corpus, s):
            t = r.get(s["text_field"]) if r else None
            if isinstance(t, str) and len(t) > 1_000_000:
                over.append((r.get(s["id_field"]) if s["id_field"] else None, len(t)))
    assert over == [(large["id"], large["chars"])]


def test_approx_tokens_match_a_real_count(corpus: Path) -> None:
    for name in ("stdlib-code", "web-like", "multilingual"):
        s = read.source_entry(corpus, name)
        real = sum(count(r[s["text_field"]]) for _, _, r in read.iter_records(corpus, s)
                   if r is not None and isinstance(r.get(s["text_field"]), str))
        assert abs(s["approx_tokens"] - real) <= 0.05 * real, (name, s["approx_tokens"], real)


def test_benchmark_file(corpus: Path) -> None:
    (bench,) = read.manifest(corpus)["benchmarks"]
    lines = (corpus / bench["path"]).read_text(encoding="utf-8").splitlines()
    recs = [json.loads(ln) for ln in lines]
    assert len(recs) == bench["records"] >= 90
    assert len({r["id"] for r in recs}) == len(recs)
    assert all(r["question"].endswith("?") and len(r["answer"].split()) >= 20 for r in recs)
    held = set(bench["held_out_modules"])
    code_ids = {r["path"] for _, _, r in read.iter_records(corpus, read.source_entry(corpus, "stdlib-code"))}
    assert not {f"stdlib/{m.replace('.', '/')}.py" for m in held} & code_ids


def test_cli_writes_byte_identical_corpus_for_the_same_seed(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "again"
    res = CliRunner().invoke(app, ["demo-corpus", str(out), "--seed", "0", "--scale", str(SCALE), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "ground_truth.json" in res.output and "web-like" in res.output
    assert _files(out) == _files(corpus)
    # writing again over an earlier demo corpus replaces it in place
    res = CliRunner().invoke(app, ["demo-corpus", str(out), "--scale", str(SCALE), "-q"])
    assert res.exit_code == 0 and _files(out) == _files(corpus)


def test_a_different_seed_gives_a_different_corpus(corpus: Path, corpus_seed1: Path) -> None:
    a, b = _files(corpus), _files(corpus_seed1)
    assert a["web-like/part-0000.jsonl"] != b["web-like/part-0000.jsonl"]
    assert a["ground_truth.json"] != b["ground_truth.json"]
    assert a["stdlib-code/part-0000.parquet"] != b["stdlib-code/part-0000.parquet"]


def test_cli_rejects_bad_usage(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["demo-corpus", str(tmp_path / "x"), "--scale", "0"])
    assert res.exit_code == 2 and "--scale" in res.output
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    res = CliRunner().invoke(app, ["demo-corpus", str(foreign), "--scale", str(SCALE), "-q"])
    assert res.exit_code == 2 and "MANIFEST.json" in res.output
    assert (foreign / "notes.txt").read_text() == "mine"
