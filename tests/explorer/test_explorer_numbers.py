"""The explorer writes numbers the one way of `mixture.composition.numbers` (tokens 10.0M, shares 7.52%, weights
0.01235, scores 0.422), never raw floats, and leaves out columns that hold nothing."""

from __future__ import annotations

import json
import re
import shutil

import pyarrow.parquet as pq

from mixture.composition import numbers
from mixture.planner.formats import read_plan
from tests.explorer.apptest_util import run, shown

TOKENS = re.compile(r"^(\d{1,3}(,\d{3})*|\d+(\.\d+)?[KMBT])$")


def test_store_page_tables_write_tokens_and_shares(app_env, artifact):
    at = run("store")
    sources = shown(at.dataframe[0])
    assert "tokens_in" not in sources  # None for every source of this store: no column of None
    assert all(TOKENS.match(t) for t in sources.tokens_kept)
    # the numbers stay numbers under their text: the table sorts 449K after 2.92M by value, not as text
    values = at.dataframe[0].value
    assert values.tokens_kept.dtype.kind in "iuf" and values.docs_kept.dtype.kind in "iuf"
    assert list(sources.tokens_kept) == [numbers.tokens(t) for t in values.tokens_kept]
    mix = shown(at.dataframe[-1])
    assert all(TOKENS.match(t) for t in mix.tokens), list(mix.tokens)
    assert all(s.endswith("%") for s in mix.share), list(mix.share)
    assert at.dataframe[-1].value.share.dtype.kind == "f"


def test_mixture_page_tables_write_weights_and_tokens(app_env, plan_file):
    plan = read_plan(str(plan_file))
    at = run("mixture")
    table = next(shown(d) for d in at.dataframe if "available" in d.value)
    by_cell = {c.cell: c for c in plan.cells}
    for row in table.to_dict("records"):
        cell = by_cell[row["cell"]]
        assert row["available"] == numbers.tokens(cell.available_tokens)
        for p in plan.phases:
            drawn = cell.phases.get(p.name)
            assert row[f"w {p.name}"] == numbers.weight(drawn.weight if drawn else 0.0)
            assert row[f"tokens {p.name}"] == numbers.tokens(drawn.tokens if drawn else 0)
    assert not any("e-" in str(v) for v in table.values.ravel())


def test_lineage_writes_scores_weights_and_tokens(app_env, store, plan_file):
    sampled = pq.read_table(store / "_samples/uniform.parquet").to_pandas()
    doc = sampled.sort_values(["cluster", "quality", "rank"]).iloc[0]
    at = run("search", doc=doc.id)
    tables = [d.value for d in at.dataframe]
    fields = next(t for t in tables if "field" in t).set_index("field").value
    assert fields["quality_score"] == f"{doc.quality_score:.3f}"
    assert fields["n_tokens"] == numbers.count(doc.n_tokens)
    phases = next(t for t in tables if "phase" in t)
    plan = read_plan(str(plan_file))
    drawing = [p for p in plan.phases if p.weights.get(fields["cell"], 0) > 0]
    assert list(phases.weight) == [numbers.weight(p.weights[fields["cell"]]) for p in drawing]
    assert list(phases.tokens) == [numbers.tokens(p.weights[fields["cell"]] * p.tokens) for p in drawing]


def test_overview_and_store_say_the_same_cell_count(app_env, monkeypatch, store, tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    art = json.loads((copy / "store.json").read_text())
    grid = len(art["cells"])
    art["cells"] = art["cells"][1:]  # a cell of the grid with no documents
    (copy / "store.json").write_text(json.dumps(art))
    monkeypatch.setenv("MIXTURE_STORE", str(copy))
    said = f"{grid - 1} non-empty of {grid}"
    overview = run()
    assert {m.label: m.value for m in overview.metric}["cells"] == said
    assert f" · {said} cells · " in run("store").caption[0].value
