"""The explorer and the static page show the same domain labels (mixture.composition.labels) and the same quality
bucket names (mixture.store.layout.bucket_names), also for a store.json that names no bucket."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mixture import accounting
from mixture.accounting import StoreReader
from mixture.overview.page import build_page
from tests.explorer.apptest_util import plain, run


def test_the_explorer_and_the_static_page_show_the_same_labels(app_env, store):
    page = build_page(StoreReader(str(store)))
    at = run()
    index = {int(b.key.split("_")[1]): plain(b.label).split(" · ")[1] for b in at.button
             if b.key and b.key.startswith("idx_")}
    assert index == {d.id: d.label for d in page.domains}
    assert index[0] == "socket, server, request"
    assert [t.text for t in page.domains[0].more_terms] == ["client", "port", "handler"]


@pytest.mark.parametrize("levels, names", [(5, ["junk", "poor", "usable", "good", "excellent"]),
                                           (7, [f"Q{q}" for q in range(7)])])
def test_a_store_json_without_bucket_names_shows_the_same_names_everywhere(tmp_path: Path, monkeypatch, store,
                                                                         levels, names):
    """store.json `partition.quality_names` empty: the static page, the explorer and the reports give every bucket
    the name the build would have written (the five default names for five buckets, else Q<n>)."""
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    info = json.loads((copy / "store.json").read_text())
    info["partition"] |= {"quality_names": [], "quality_levels": levels}
    (copy / "store.json").write_text(json.dumps(info))
    reader = StoreReader(str(copy))

    assert build_page(reader).quality_names == names
    monkeypatch.setenv("MIXTURE_STORE", str(copy))
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    monkeypatch.setenv("MIXTURE_SHARE", "0")
    buckets = next(m for m in run().metric if m.label == "buckets")
    assert plain(buckets.proto.help) == "calibrated quality buckets: " + ", ".join(
        f"Q{q} {n}" for q, n in enumerate(names))
    cells = accounting.cell_table(reader)
    assert {(q, n) for q, n in zip(cells.quality, cells.quality_name, strict=True)} == {
        (q, names[q]) for q in set(cells.quality)}
    assert list(accounting.matrix(reader).columns[2:-1]) == [f"Q{q} {n}" for q, n in enumerate(names)]
