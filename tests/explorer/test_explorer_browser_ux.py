"""Issue 16 as a user sees it, in headless chromium on a store of 40 domains (one server for the module): links and
index clicks scroll to the panel, charts readable in the dark theme, every domain labelled on the heatmaps, nothing
cut off, a phone-wide page that reads in order."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mixture.explorer import MAIN
from tests.explorer.synthstore import build_plan, build_store
from tests.explorer.test_explorer_browser import ARGS, ARTIFACTS, CHROMIUM, _free_port, _luminance, serve

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                 reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")]
K = 40

# Wait until Streamlit has finished a run and the page stopped changing (no running status, no stale element and no
# DOM change for `ms` milliseconds).
_OBSERVE = """() => { window.__last = performance.now(); new MutationObserver(() => { window.__last = performance.now(); })
  .observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true}); }"""
_QUIET = """(ms) => !document.querySelector('[data-testid="stStatusWidget"]') &&
  !document.querySelector('[data-stale="true"]') && performance.now() - window.__last > ms"""


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("explorer_40") / "store"
    build_store(root, k=K)
    build_plan(root.parent / "plan.json", root)
    return root


@pytest.fixture(scope="module")
def server(big, store_b):
    port = _free_port()
    env = dict(os.environ, MIXTURE_STORE=str(big), MIXTURE_PLAN=str(big.parent / "plan.json"),
               MIXTURE_STORE_B=str(store_b), MIXTURE_SHARE="0")
    with serve([sys.executable, "-m", "streamlit", "run", str(MAIN), "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal"], env, port, "streamlit") as url:
        yield url


@pytest.fixture(scope="module")
def browser(server):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            warm = b.new_page()  # a fresh server renders blank until the script ran once
            warm.goto(server)
            warm.get_by_text("semantic domains").first.wait_for(timeout=60000)
            warm.close()
            yield b
        finally:
            b.close()


def settle(page, ms: int = 700) -> None:
    page.evaluate(_OBSERVE)
    page.wait_for_timeout(150)
    page.wait_for_function(_QUIET, arg=ms, timeout=60000, polling=100)


def visit(browser, url: str, scheme: str = "light", width: int = 1280, height: int = 800, wait: str = ""):
    ctx = browser.new_context(color_scheme=scheme, viewport={"width": width, "height": height})
    page = ctx.new_page()
    page.goto(url)
    page.get_by_text(wait or "semantic domains").first.wait_for(timeout=60000)
    settle(page)
    return page


def top_of(page, key: str) -> float:
    """Where the element made with `key` starts, in pixels from the top of the window."""
    return page.evaluate(f"document.querySelector('.st-key-{key}').getBoundingClientRect().top")


def scrolled_to(page, key: str) -> float:
    """Wait until the element made with `key` is at the top of the window (the page scrolls once its run has
    drawn it), then say where it starts."""
    page.wait_for_function(f"(document.querySelector('.st-key-{key}')?.getBoundingClientRect().top ?? 1e9) < 120",
                           timeout=20000, polling=100)
    return top_of(page, key)


def test_links_and_index_clicks_scroll_to_the_open_panel(browser, server):
    """Issue 16: `?domain=26`, `?cell=c26q3` and index clicks opened the panel 2,300–3,000 px below the fold."""
    page = visit(browser, server + "?domain=33")
    assert 0 <= scrolled_to(page, "dom_33") < 120  # scrolled to, just under the app's header
    assert page.locator(".st-key-dom_33 details").get_attribute("open") is not None
    page.close()
    page = visit(browser, server + "?cell=c31q2")
    assert 0 <= scrolled_to(page, "bucket_31") < 120  # the bucket picker, with Q2 picked, and the cell below it
    page.locator(".st-key-dom_31 [data-testid='stCode']").nth(1).wait_for(timeout=20000)  # its two examples
    assert page.locator(".st-key-dom_31 [data-testid='stCode']").count() == 2
    page.close()
    page = visit(browser, server)
    assert top_of(page, "dom_29") > 800  # below the fold
    page.locator(".st-key-idx_29 button").click()
    assert 0 <= scrolled_to(page, "dom_29") < 120
    page.screenshot(path=str(ARTIFACTS / "explorer-index-click.png"))
    page.close()
    page = visit(browser, server + "?domain=99")
    page.get_by_text("names no domain of this store: its domains are 0–39").first.wait_for(timeout=20000)
    page.close()


def _fills(page, chart: int, role: str) -> list[tuple[str, str]]:
    """(text, fill) of the text marks with `role` in the page's `chart`-th Vega chart (waiting for it to draw)."""
    page.wait_for_function(f"document.querySelectorAll('.vega-embed svg').length > {chart}", timeout=20000)
    return page.evaluate(
        f"[...document.querySelectorAll('.vega-embed svg')[{chart}].querySelectorAll('g.{role} text')]"
        ".map(t => [t.textContent, getComputedStyle(t).fill])")


def _overlaps(boxes: list[dict]) -> list[tuple[int, int]]:
    return [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes) if i < j
            and a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]]


_BOXES = """(sel) => [...document.querySelectorAll(sel)].map(t => { const r = t.getBoundingClientRect();
  return {text: t.textContent, x: r.x, y: r.y, width: r.width, height: r.height}; })"""


def _heatmap_labels(page) -> None:
    """Every domain labelled on the page's first chart (a heatmap), its legend labels apart from each other."""
    page.wait_for_function(f"document.querySelectorAll('.vega-embed svg g.role-axis-label text').length >= {K}",
                           timeout=20000)
    axis = page.evaluate(_BOXES, ".vega-embed svg g.role-axis-label text")
    ids = {int(b["text"].split(" ·")[0]) for b in axis if b["text"].split(" ·")[0].strip().isdigit()}
    assert set(range(K)) <= ids
    legend = page.evaluate(_BOXES, ".vega-embed svg g.role-legend-label text")
    assert legend and not _overlaps(legend), legend


def _readable(fills: list[tuple[str, str]], scheme: str) -> None:
    for text, fill in fills:
        lum = _luminance(fill)
        assert (lum > 0.7 if scheme == "dark" else lum < 0.3), (text, fill)


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_store_page_charts_readable_and_complete(browser, server, scheme):
    """Issue 16: the funnel's counts were black on the dark page and its labels cut ('after exact duplic…'); the
    heatmap labelled every other domain and its legend labels overlapped."""
    page = visit(browser, server + "store", scheme, height=3000, wait="Where records went")
    _heatmap_labels(page)
    counts = _fills(page, 1, "role-mark")  # the funnel: its bars, then their counts
    assert counts and all(t[0].replace(",", "").isdigit() for t in counts)
    _readable(counts, scheme)
    funnel = [t for t, _ in _fills(page, 1, "role-axis-label")]
    assert "after exact duplicate" in funnel and not [t for t in funnel if t.endswith("…")]
    page.screenshot(path=str(ARTIFACTS / f"explorer-store-{scheme}.png"))
    page.close()


def test_map_and_diff_in_the_dark(browser, server):
    """Issue 16: the map's domain ids were black on the dark page; the Diff heatmap labelled every other domain."""
    page = visit(browser, server + "map", "dark", height=1200, wait="Map")
    ids = _fills(page, 0, "role-mark")
    assert sorted(int(t) for t, _ in ids) == list(range(K))
    _readable(ids, "dark")
    page.close()
    page = visit(browser, server + "diff", "dark", height=1800, wait="B − A")
    _fills(page, 0, "role-axis-label")
    _heatmap_labels(page)
    page.screenshot(path=str(ARTIFACTS / "explorer-diff-dark.png"))
    page.close()


_METRICS_CUT = """() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"""
_GRIDS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller')].map(s =>
  ({w: s.scrollWidth - s.clientWidth, h: s.scrollHeight - s.clientHeight}))"""
_PAGE_FITS = """() => { const m = document.querySelector('.stMain');
  return m.scrollWidth <= m.clientWidth || [m.scrollWidth, m.clientWidth, [...m.querySelectorAll('*')]
    .filter(e => e.getBoundingClientRect().right > m.clientWidth + 1).slice(0, 6)
    .map(e => e.tagName + '.' + String(e.className).slice(0, 50) + ' ' + e.textContent.slice(0, 40))]; }"""


@pytest.mark.parametrize("width", [1280, 390])
def test_nothing_is_cut_off(browser, server, big, width):
    """Issue 16: '197 non-e…' (cards), 'tokens so far 28.0…' (Live build), the Sources table's last column, the
    lineage grid hiding cell/domain/bucket below its fold; at 390 px tables wider than the screen."""
    page = visit(browser, server + "?domain=3", width=width)  # an open panel: its grid scrolls inside it
    page.wait_for_function("[...document.querySelectorAll('style')].some(s => s.textContent.includes("
                           "'overflow-x: auto'))", timeout=20000)  # the overview's style (an st.html: it loads late)
    assert page.evaluate(_METRICS_CUT) == []
    assert page.evaluate(_PAGE_FITS) is True
    page.close()
    page = visit(browser, server + "store", width=width, height=1400, wait="Where records went")
    page.wait_for_function("document.querySelectorAll('[data-testid=\"stDataFrame\"] .dvn-scroller').length >= 2")
    if width == 1280:
        assert page.evaluate(_GRIDS)[:2] == [{"w": 0, "h": 0}, {"w": 0, "h": 0}]  # both source tables fit
    assert page.evaluate(_PAGE_FITS) is True  # a table wider than the screen scrolls inside itself, not the page
    page.close()
    for path, wait in (("live", "rows so far"), ("mixture", "Warnings")):
        page = visit(browser, server + path, width=width, wait=wait)
        assert page.evaluate(_METRICS_CUT) == [], path
        page.close()
    if width == 1280:
        import pyarrow.parquet as pq

        doc = pq.read_table(big / "_samples/uniform.parquet").column("id")[0].as_py()
        page = visit(browser, server + f"search?doc={doc}", width=width, height=1600, wait="Checks it passed")
        fields = page.evaluate(_GRIDS)[-2:]  # the lineage fields and the phases drawing its cell
        assert all(g["h"] <= 0 for g in fields), fields  # every row shows: nothing below a fold
        page.close()


def test_a_phone_wide_page_reads_in_order(browser, server):
    """Issue 16 at 390 px: the index stacked as 0, 3, 6 …; the cards took ~1,700 px before the domains."""
    page = visit(browser, server, "dark", width=390, height=900)
    # every index entry drawn (on a loaded machine the run can pause longer than `settle`'s quiet time mid-index)
    page.wait_for_function(f"document.querySelectorAll('[class*=\"st-key-idx_\"]').length >= {K}", timeout=60000,
                           polling=100)
    entries = page.evaluate("""() => [...document.querySelectorAll('[class*="st-key-idx_"]')].map(e => {
        const r = e.getBoundingClientRect();
        return [parseInt([...e.classList].find(c => c.startsWith('st-key-idx_')).slice(11)), r.top, r.left]; })""")
    by_position = [e[0] for e in sorted(entries, key=lambda e: (round(e[1]), e[2]))]
    assert by_position == list(range(K))
    first = min(e[1] for e in entries)
    assert first < 1100, first  # the cards are compact: the index starts within about a screen
    page.screenshot(path=str(ARTIFACTS / "explorer-overview-390-dark.png"))
    page.close()
