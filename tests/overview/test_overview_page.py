"""`mixture overview`: the page's content against the store and plan it was written from, escaping, no outside
reference, its size for 200 cells, the command's errors (no browser here: see test_overview_browser.py)."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from markupsafe import escape

from mixture.accounting import StoreReader, samples
from mixture.composition import numbers
from mixture.overview.page import (
    HEAD_CHARS,
    build_page,
    escaped_size,
    published_name,
    search_bytes,
    split_text,
    text_file,
)
from mixture.planner.formats import read_plan
from mixture.store.layout import cell_name
from tests.overview.conftest import HOSTILE, ONERROR_DOC, SCRIPT_DOC, cli

pytestmark = pytest.mark.slow


class Tags(HTMLParser):
    """Every start tag with its attributes, every id."""

    def __init__(self, html: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    @property
    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if a.get("id")}

    def count(self, tag: str, cls: str | None = None) -> int:
        return sum(1 for t, a in self.tags if t == tag and (cls is None or cls in (a.get("class") or "").split()))


def test_page_mirrors_the_store_and_plan(built_page, built_store):
    html = built_page.page.read_text(encoding="utf-8")
    info = built_store.artifact
    k = info.partition.k
    assert (f"{numbers.tokens(info.counters.tokens_out, 4)} tokens across {len(info.clusters)} semantic domains "
            "and 5 calibrated quality buckets") in html
    tags = Tags(html)
    for c in info.clusters:
        assert f"domain-{cell_name(c.id, 0, k)[1:-2]}" in tags.ids
        for q in range(info.partition.quality_levels):
            assert cell_name(c.id, q, k) in tags.ids  # every cell of the grid, empty ones too
    assert tags.count("details", "domain") == len(info.clusters)
    for cell in info.cells:
        assert (f"Q{cell.quality} {info.partition.quality_names[cell.quality]} · {numbers.tokens(cell.tokens)} "
                f"tokens · {numbers.count(cell.docs)} documents") in html, cell.cell
    uniform = samples(StoreReader(str(built_store.store)), "uniform")
    assert tags.count("article", "doc") == len(uniform) > 0
    for doc_id in uniform.id:
        assert f"<code>{escape(doc_id)}</code>" in html
    for ctype, cutoffs in info.raw_score_cutoffs.items():
        row = re.search(rf"<tr><td>{re.escape(ctype)}</td>(.*?)</tr>", html)
        assert row and all(f"{v:.3f}" in row.group(1) for v in cutoffs), ctype
    for label in ("documents", "cells", "sources", "domains", "buckets"):
        assert f'<div class="label">{label}</div>' in html
    # the cards as the explorer writes them: the headline's token figure, the non-empty cells of the grid
    grid = len(info.clusters) * info.partition.quality_levels
    non_empty = sum(1 for c in info.cells if c.docs or c.tokens)
    assert f'<div class="value">{numbers.tokens(info.counters.tokens_out, 4)}</div><div class="label">tokens' in html
    assert f'<div class="value">{non_empty} non-empty of {grid}</div><div class="label">cells' in html
    plan = read_plan(str(built_page.plan))
    for p in plan.phases:
        assert f"<th>weight {p.name}</th>" in html


def test_cells_carry_the_plans_weights_and_epochs(built_store, built_plan):
    plan = read_plan(str(built_plan))
    page = build_page(StoreReader(str(built_store.store)), plan, str(built_plan))
    by_cell = {c.name: c for d in page.domains for c in d.cells}
    exposure = plan.exposures()
    checked = 0
    for cell in plan.cells:
        got = by_cell[cell.cell]
        assert got.weights == [p.weights.get(cell.cell) for p in plan.phases]
        assert got.epochs == exposure[cell.cell]
        assert got.over_cap == (exposure[cell.cell] > plan.settings.max_epochs)
        assert got.tokens == cell.available_tokens
        checked += 1
    assert checked == len(plan.cells) > 0
    assert page.plan is not None and page.plan.cells_missing == 0
    # shares and enrichment: each domain's buckets sum to 1; enrichment = share in domain / share of the corpus
    total = sum(c.tokens for c in by_cell.values())
    for d in page.domains:
        assert sum(c.share_in_domain for c in d.cells) == pytest.approx(1.0)
        for c in d.cells:
            bucket = sum(x.tokens for x in by_cell.values() if x.quality == c.quality) / total
            assert c.enrichment == pytest.approx(c.share_in_domain / bucket)


def test_stacked_bar_writes_its_shares_on_the_segments(built_page, built_store):
    """Each domain's Q0–Q4 bar shows 'Q2 41%' on every segment wide enough to hold it (12 % of the domain or more)
    and names every segment in its tooltip: the values are not in tooltips only."""
    html = built_page.page.read_text(encoding="utf-8")
    page = build_page(StoreReader(str(built_store.store)))
    labelled = 0
    for d in page.domains:
        panel = html[html.index(f'<details class="domain" id="{d.anchor}"'):]
        bar = panel[:panel.index("</div>", panel.index('<div class="stack"'))]
        segments = re.findall(r'<span class="q\d+" style="width:[\d.]+%" title="([^"]*)">([^<]*)</span>', bar)
        shown = [c for c in d.cells if c.share_in_domain > 0]
        assert [t for t, _ in segments] == [f"Q{c.quality} {c.quality_name}: {numbers.pct(c.share_in_domain)}"
                                            for c in shown]
        assert [w for _, w in segments] == [f"Q{c.quality} {numbers.pct(c.share_in_domain, 0)}"
                                            if c.share_in_domain >= 0.12 else "" for c in shown]
        labelled += sum(1 for _, w in segments if w)
    assert labelled >= len(page.domains)  # every domain has a bucket of 12 % or more


def test_page_names_no_local_path(built_page):
    """A page meant for a public bucket names the store and the plan by name, never by the writer's file system."""
    html = built_page.page.read_text(encoding="utf-8")
    for path in (built_page.store, built_page.plan, built_page.page):
        for parent in path.parents[:-2]:  # /tmp itself may be in a sampled document's text
            assert str(parent) not in html, parent
        assert str(path) not in html
    private = {p for path in (built_page.store, built_page.plan) for p in path.parent.parts[2:]}  # under /tmp
    assert private and not [p for p in private if p in html], private
    assert "store <code>store</code>" in html and "plan.json" in html


@pytest.mark.parametrize(("given", "named"), [
    ("/home/someone/stores/run-7", "run-7"), ("/home/someone/stores/run-7/", "run-7"), ("run-7", "run-7"),
    ("file:///home/someone/run-7", "run-7"), ("/home/someone/plan.json", "plan.json"),
    ("gs://bucket/stores/run-7", "gs://bucket/stores/run-7"), ("s3://bucket/plan.json", "s3://bucket/plan.json")])
def test_published_name(given, named):
    assert published_name(given) == named


def test_page_makes_no_outside_reference(built_page):
    html = built_page.page.read_text(encoding="utf-8")
    tags = Tags(html)
    for tag, attrs in tags.tags:
        for name in ("src", "href", "action", "srcset", "poster", "data", "formaction"):
            value = attrs.get(name)
            assert value is None or value.startswith("#") or value.startswith("data:"), (tag, name, value)
    assert tags.count("script") == 1 and tags.count("style") == 1
    css = html[html.index("<style>"):html.index("</style>")]
    assert "@import" not in css and "url(" not in css
    csp = next(a["content"] for t, a in tags.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp
    assert not list(built_page.page.parent.glob("*.tmp"))  # written through a temporary name


def test_documents_are_escaped(hostile_page):
    html = hostile_page.page.read_text(encoding="utf-8")
    for doc in HOSTILE:
        assert str(escape(doc)) in html
        assert doc not in html
    tags = Tags(html)
    assert tags.count("script") == 1  # the page's own
    assert tags.count("img") == 0 and "<b>bold</b>" not in html
    assert 'onerror="' not in html and "<script>alert" not in html
    assert SCRIPT_DOC.replace("<", "&lt;").replace(">", "&gt;") in html.replace("&#39;", "'")
    assert ONERROR_DOC not in html


def test_page_for_200_cells_with_4_samples_is_under_3_mb(hostile_page):
    html = hostile_page.page.read_text(encoding="utf-8")
    tags = Tags(html)
    assert sum(1 for t, a in tags.tags if t == "details" and "cell" in (a.get("class") or "")) == 200
    assert tags.count("article", "doc") == 800
    assert hostile_page.page.stat().st_size < 3_000_000


def test_show_all_holds_a_prefix_of_each_document_within_the_budget(hostile_store):
    reader = StoreReader(str(hostile_store))
    page = build_page(reader, text_budget=400_000 + search_bytes(figures_index(reader)))  # 400 KB for the texts
    texts = dict(zip(samples(reader, "uniform").id, samples(reader, "uniform").text, strict=True))
    docs = [doc for d in page.domains for c in d.cells for doc in c.samples]
    assert len(docs) == 800
    for doc in docs:
        full = texts[doc.id]
        assert full.startswith(doc.head + doc.rest) and doc.n_chars == len(full)
        assert doc.complete == (len(doc.head) + len(doc.rest) == len(full))
        assert len(doc.head) <= HEAD_CHARS
        if doc.rest:
            assert escaped_size(doc.head + doc.rest) <= 400_000 // 800
    assert sum(escaped_size(d.head + d.rest) for d in docs) <= 400_000 + 800 * escaped_size("x" * HEAD_CHARS) * 6


def figures_index(reader: StoreReader) -> dict[int, dict[str, str]]:
    return build_page(reader).search


def test_search_index_shares_the_text_budget(hostile_store):
    reader = StoreReader(str(hostile_store))
    index = figures_index(reader)
    assert search_bytes(index) > 100_000
    docs = [doc for d in build_page(reader, text_budget=search_bytes(index)).domains for c in d.cells
            for doc in c.samples]
    assert docs and not any(doc.rest for doc in docs)  # the index took the whole budget: heads only


def test_split_text():
    assert split_text("short text", 900, 10_000) == ("short text", "")
    words = " ".join(f"word{i}" for i in range(400))
    head, rest = split_text(words, 100, 10_000)
    assert len(head) <= 100 and not head.endswith(" ") and words.startswith(head + rest) and head + rest == words
    assert words[len(head)] == " "  # cut on a word boundary
    head, rest = split_text(words, 100, 300)
    assert escaped_size(head + rest) <= 300 and rest
    quotes = '"<>' * 1000
    head, rest = split_text(quotes, 90, 1000)
    assert escaped_size(head + rest) <= 1000 and quotes.startswith(head + rest)
    text = "é" * 5000
    head, rest = split_text(text, 900, 4000)
    assert len((head + rest).encode()) <= 4000 and len(head) == 900
    head, rest = split_text(words, 100, 10_000, max_chars=150)
    assert len(head + rest) == 150


def test_samples_option_limits_documents_per_cell(built_store, tmp_path: Path):
    code, text = cli("overview", str(built_store.store), "--out", str(tmp_path), "--samples", "1")
    assert code == 0, text
    assert text.startswith(f"wrote {tmp_path}/index.html (") and "MB in" in text
    tags = Tags((tmp_path / "index.html").read_text(encoding="utf-8"))
    assert tags.count("article", "doc") <= len(built_store.artifact.cells)


def test_command_errors(tmp_path: Path, built_store):
    code, text = cli("overview", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"))
    assert code == 2 and "does not exist" in text
    building = tmp_path / "building"
    (building / "cluster=00" / "quality=0").mkdir(parents=True)
    code, text = cli("overview", str(building), "--out", str(tmp_path / "o"))
    assert code == 1 and "no store.json yet" in text
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps({"available_tokens": {}}))
    code, text = cli("overview", str(built_store.store), "--out", str(tmp_path / "o"), "--plan", str(bad))
    assert code == 2 and str(bad) in text and "mixture plan" in text
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("damage", ["deleted", "a row removed"])
def test_a_store_whose_samples_were_lost_is_not_published(hostile_store, tmp_path: Path, damage: str):
    """The page shows the uniform samples: a file deleted or cut after the build was published without them."""
    store = tmp_path / "store"
    shutil.copytree(hostile_store, store)
    path = store / "_samples" / "uniform.parquet"
    if damage == "deleted":
        path.unlink()
    else:
        table = pq.read_table(path)
        pq.write_table(table.slice(0, table.num_rows - 1), path)
    code, text = cli("overview", str(store), "--out", str(tmp_path / "site"))
    said = " ".join(text.split())
    assert code == 1 and "_samples/uniform.parquet" in said and f"mixture audit {store}" in said, text
    assert not (tmp_path / "site").exists()


def test_same_store_and_plan_give_the_same_page(built_page, tmp_path: Path):
    code, text = cli("overview", str(built_page.store), "--out", str(tmp_path), "--plan", str(built_page.plan))
    assert code == 0, text
    assert (tmp_path / "index.html").read_bytes() == built_page.page.read_bytes()


def test_full_texts_are_files_beside_the_page(hostile_store, tmp_path: Path):
    code, text = cli("overview", str(hostile_store), "--out", str(tmp_path), "--full-texts")
    assert code == 0, text
    assert ", 798 text files beside it in " in text  # every sample but the two short hostile ones
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    uniform = samples(StoreReader(str(hostile_store)), "uniform")
    tags = Tags(html)
    links = {a["href"]: a for t, a in tags.tags if t == "a" and "full" in (a.get("class") or "").split()}
    files = {str(p.relative_to(tmp_path)) for p in (tmp_path / "texts").iterdir()}
    assert set(links) == files and len(files) == 798
    for row in uniform.itertuples():
        rel = text_file(row.id)
        if len(row.text) > HEAD_CHARS:
            assert (tmp_path / rel).read_text(encoding="utf-8") == row.text  # whole, as the store holds it
            assert links[rel]["data-more"] == f"show all ({len(row.text):,} characters)"
        else:
            assert rel not in links
    assert 'class="rest"' not in html  # the page holds the heads only
    assert (tmp_path / "index.html").stat().st_size < 3_000_000
    csp = next(a["content"] for t, a in tags.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "connect-src 'self'" in csp and "default-src 'none'" in csp
    assert not list(tmp_path.rglob("*.tmp"))


def test_the_default_page_reads_no_file(hostile_page):
    html = hostile_page.page.read_text(encoding="utf-8")
    assert "connect-src" not in html and 'class="more full"' not in html
    assert not (hostile_page.page.parent / "texts").exists()


def test_page_says_when_clusters_split_by_language_and_shows_cluster_names(built_store, tmp_path):
    """A store whose clusters are each one language's: the page says first that cluster weights are then language
    weights (the build's warning), and each domain shows the name the fit took from its exemplars' titles."""
    import shutil

    from mixture.composition import figures

    copy = tmp_path / "store"
    shutil.copytree(built_store.store, copy)
    doc = json.loads((copy / "store.json").read_text())
    for i, c in enumerate(doc["clusters"]):
        c["languages"], c["language_share"] = [["de", "fr", "ja"][i % 3]], 0.97
        c["name"] = f"Handbuch des Themas {i}"
    (copy / "store.json").write_text(json.dumps(doc))
    out = tmp_path / "page"
    code, text = cli("overview", str(copy), "--out", str(out))
    assert code == 0, text
    html = (out / "index.html").read_text()
    assert figures.language_note(StoreReader(str(copy)).store_info).startswith("the clusters split by language")
    assert 'role="note">the clusters split by language' in html
    assert "“Handbuch des Themas 0”" in html
    plain = (tmp_path / "plain")
    code, text = cli("overview", str(built_store.store), "--out", str(plain))
    assert code == 0 and 'role="note"' not in (plain / "index.html").read_text()
