"""The static overview page in headless Debian chromium (playwright), opened from disk: search, open/close all,
anchors, light and dark themes, hostile documents shown as text; no dialog, no console error, no request
beyond the file itself. One browser for the module; each check in a fresh context."""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.overview.conftest import ONERROR_DOC, SCRIPT_DOC

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                 reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def _wait_until(page, expression: str, timeout: float = 30.0) -> None:
    """Poll a JavaScript expression through page.evaluate until it is true. Playwright's wait_for_function
    evaluates its predicate with eval() inside the page, which the page's CSP (no 'unsafe-eval') refuses."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {timeout:.0f} s: {expression}"
        page.wait_for_timeout(50)


@dataclass
class Opened:
    page: object
    url: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # console errors and uncaught exceptions
    dialogs: list[str] = field(default_factory=list)

    def visible(self, selector: str) -> list[str]:
        """data-domain of the elements matching `selector` that are not hidden."""
        return self.page.eval_on_selector_all(selector, "els => els.filter(e => !e.hidden).map(e => e.dataset.domain)")

    def open_domains(self) -> list[str]:
        return self.page.eval_on_selector_all("details.domain", "els => els.filter(e => e.open).map(e => e.id)")

    def in_view(self, element_id: str) -> bool:
        return self.page.evaluate("id => { const r = document.getElementById(id).getBoundingClientRect(); "
                                  "return r.top >= -1 && r.top < window.innerHeight; }", element_id)

    def check_clean(self) -> None:
        """Nothing ran but the page's script, nothing failed, nothing was fetched but the file."""
        assert self.dialogs == [], self.dialogs
        assert self.errors == [], self.errors
        assert self.requests and set(self.requests) == {self.url}, self.requests


@pytest.fixture
def open_page(browser) -> Iterator:
    contexts = []

    def _open(path: Path, anchor: str = "", scheme: str = "light") -> Opened:
        ctx = browser.new_context(color_scheme=scheme, viewport={"width": 1300, "height": 900})
        contexts.append(ctx)
        page = ctx.new_page()
        opened = Opened(page, path.as_uri())
        page.on("request", lambda r: opened.requests.append(r.url.split("#")[0]))
        page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: opened.errors.append(str(e)))
        page.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri() + anchor)
        page.wait_for_load_state("load")
        return opened

    yield _open
    for ctx in contexts:
        ctx.close()


def _luminance(css: str) -> float:
    nums = [float(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3]]
    return (0.2126 * nums[0] + 0.7152 * nums[1] + 0.0722 * nums[2]) / 255


def _colors(o: Opened) -> tuple[float, float]:
    bg = o.page.evaluate("getComputedStyle(document.body).backgroundColor")
    fg = o.page.evaluate("getComputedStyle(document.querySelector('h1')).color")
    return _luminance(bg), _luminance(fg)


def test_search_filters_index_and_panels(built_page, built_store, open_page):
    o = open_page(built_page.page)
    everything = o.visible("details.domain")
    n = len(built_store.artifact.clusters)
    assert len(everything) == len(o.visible("#index li")) == n
    # a sampled document's id is in exactly one domain's panel: searching it leaves that domain alone
    doc_id, number = o.page.evaluate("() => { const a = document.querySelector('details.domain article.doc'); "
                                     "return [a.querySelector('code').textContent, "
                                     "a.closest('details.domain').dataset.domain]; }")
    search = o.page.locator("#search")
    search.fill(doc_id)
    assert o.visible("details.domain") == o.visible("#index li") == [number]
    assert o.page.locator("#shown").inner_text() == f"1 of {n} domains match"
    label = o.page.locator(f"details.domain[data-domain='{number}'] summary .label").inner_text()
    search.fill(label.split(",")[0].upper())  # case does not matter
    assert number in o.visible("details.domain")
    search.fill("zzqx-no-such-word")
    assert o.visible("details.domain") == o.visible("#index li") == []
    search.fill("")
    assert o.visible("details.domain") == everything
    assert o.page.locator("#shown").inner_text() == f"{n} domains"
    o.check_clean()


def test_open_all_and_close_all(built_page, open_page):
    o = open_page(built_page.page)
    ids = o.page.eval_on_selector_all("details.domain", "els => els.map(e => e.id)")
    assert o.open_domains() == []
    o.page.click("#open-all")
    assert o.open_domains() == ids
    o.page.click("#close-all")
    assert o.open_domains() == []
    number = o.visible("details.domain")[-1]
    doc_id = o.page.evaluate(f"document.querySelector(\"details.domain[data-domain='{number}'] article.doc code\").textContent")
    o.page.fill("#search", doc_id)
    o.page.click("#open-all")  # opens the domains the search shows
    assert o.open_domains() == [f"domain-{number}"]
    o.check_clean()


def test_anchors_open_and_scroll_to_a_domain_and_a_cell(built_page, built_store, open_page):
    info = built_store.artifact
    last = max(c.id for c in info.clusters)
    number = f"{last:02d}"
    o = open_page(built_page.page, f"#domain-{number}")
    assert o.open_domains() == [f"domain-{number}"]
    assert o.in_view(f"domain-{number}") and o.page.evaluate("window.scrollY") > 0
    cell = max(info.cells, key=lambda c: (c.cluster, c.quality)).cell
    o.page.evaluate(f"location.hash = '#{cell}'")
    _wait_until(o.page, f"document.getElementById('{cell}').open")
    assert o.in_view(cell)
    first = f"domain-{min(c.id for c in info.clusters):02d}"
    o.page.click(f"#index a[href='#{first}']")
    _wait_until(o.page, f"document.getElementById('{first}').open")
    assert o.in_view(first)
    o.check_clean()
    o2 = open_page(built_page.page, f"#{info.cells[0].cell}")  # a cell anchor opened from outside
    assert o2.open_domains() == [f"domain-{info.cells[0].cell[1:-2]}"]
    assert o2.page.evaluate(f"document.getElementById('{info.cells[0].cell}').open")
    assert o2.in_view(info.cells[0].cell)
    o2.check_clean()


def test_theme_follows_the_system_and_the_toggle(built_page, open_page):
    ARTIFACTS.mkdir(exist_ok=True)
    light = open_page(built_page.page, scheme="light")
    bg, fg = _colors(light)
    assert bg > 0.8 and fg < 0.3, (bg, fg)
    light.page.click("#theme")
    bg, fg = _colors(light)
    assert bg < 0.2 and fg > 0.7, (bg, fg)  # toggled to dark
    light.check_clean()
    dark = open_page(built_page.page, "#domain-00", scheme="dark")
    bg, fg = _colors(dark)
    assert bg < 0.2 and fg > 0.7, (bg, fg)
    dark.page.screenshot(path=str(ARTIFACTS / "overview-dark.png"))
    assert dark.page.locator("#theme").inner_text() == "Light theme"
    dark.page.click("#theme")
    bg, fg = _colors(dark)
    assert bg > 0.8 and fg < 0.3, (bg, fg)
    dark.page.reload()
    assert _colors(dark)[0] > 0.8  # the choice is kept
    dark.check_clean()


def test_hostile_documents_show_as_text(hostile_page, open_page):
    o = open_page(hostile_page.page, "#c00q0")
    texts = o.page.eval_on_selector_all("#c00q0 article.doc pre.text", "els => els.map(e => e.innerText)")
    assert SCRIPT_DOC in texts and ONERROR_DOC in texts
    inside = o.page.eval_on_selector_all("article.doc pre.text *", "els => els.map(e => e.tagName + '.' + e.className)")
    assert set(inside) <= {"SPAN.rest", "SPAN.ellipsis"}  # no element came from a document
    o.page.wait_for_timeout(300)  # time for an injected handler to fire, were there one
    # "show all" reveals the rest of a long document, "show less" hides it again
    doc = o.page.locator("#c00q0 article.doc", has=o.page.locator("button.more")).first
    before = len(doc.locator("pre.text").inner_text())
    doc.locator("button.more").click()
    assert len(doc.locator("pre.text").inner_text()) > before
    assert doc.locator("button.more").inner_text() == "show less"
    doc.locator("button.more").click()
    assert len(doc.locator("pre.text").inner_text()) == before
    o.page.screenshot(path=str(ARTIFACTS / "overview-light.png"))
    o.check_clean()


def _open_sized(browser, path: Path, width: int, scheme: str, anchor: str = "") -> Opened:
    ctx = browser.new_context(color_scheme=scheme, viewport={"width": width, "height": 844},
                              is_mobile=width < 500, has_touch=width < 500)
    page = ctx.new_page()
    opened = Opened(page, path.as_uri())
    page.on("request", lambda r: opened.requests.append(r.url.split("#")[0]))
    page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.goto(path.as_uri() + anchor)
    page.wait_for_load_state("load")
    return opened


_OVERFLOW = "document.scrollingElement.scrollWidth - window.innerWidth"
_RIGHT = "sel => Math.max(...Array.from(document.querySelectorAll(sel)).filter(e => e.offsetParent)" \
         ".map(e => e.getBoundingClientRect().right))"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_no_horizontal_scroll_on_a_phone_or_a_desktop(built_page, browser, width, scheme):
    o = _open_sized(browser, built_page.page, width, scheme)
    try:
        assert o.page.evaluate(_OVERFLOW) <= 0  # panels closed
        # the domain index: in the first screen, or one tap away
        jump = o.page.locator("nav.jump a[href='#domains']")
        assert jump.bounding_box()["y"] + jump.bounding_box()["height"] <= 844
        jump.click()
        _wait_until(o.page, "document.getElementById('index').getBoundingClientRect().top < window.innerHeight")
        # every panel and every cell open, the group cutoffs too: still nothing wider than the window
        o.page.click("#open-all")
        o.page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        assert o.page.evaluate(_OVERFLOW) <= 0, f"{o.page.evaluate(_OVERFLOW)} px too wide at {width} px"
        inner = o.page.evaluate("window.innerWidth")
        # the cutoffs tables and every quality grid show their last bucket (Q3→Q4, Q4) inside the window
        assert o.page.evaluate(_RIGHT, "table.cutoffs th:nth-last-child(2)") <= inner
        assert o.page.evaluate(_RIGHT, "table.grid thead th:last-child") <= inner
        ARTIFACTS.mkdir(exist_ok=True)
        o.page.screenshot(path=str(ARTIFACTS / f"overview-{width}-{scheme}.png"))
        o.check_clean()
    finally:
        o.page.context.close()


@pytest.mark.parametrize(("anchor", "says"), [("#domain-99", "names no domain of this store"),
                                              ("#c07q9", "names no cell of this store"),
                                              ("#nothing-here", "is not a domain (#domain-NN) or a cell (#cNNqQ)")])
def test_unknown_anchor_names_the_problem(built_page, built_store, open_page, anchor, says):
    o = open_page(built_page.page, anchor)
    problem = o.page.locator("#link-problem")
    assert problem.is_visible()
    ids = sorted(c.id for c in built_store.artifact.clusters)
    assert problem.inner_text() == (f"The link's {anchor} {says}: its domains are {ids[0]}–{ids[-1]} and its "
                                    f"quality buckets Q0–Q{built_store.artifact.partition.quality_levels - 1}.")
    assert o.open_domains() == []
    o.page.click(f"#index a[href='#domain-{ids[0]:02d}']")  # a known anchor clears it
    _wait_until(o.page, "document.getElementById('link-problem').hidden")
    o.check_clean()


def _static_search(o: Opened, query: str) -> dict[int, str]:
    o.page.fill("#search", query)
    return {int(k): v for k, v in o.page.eval_on_selector_all(
        "#index li", "els => els.filter(e => !e.hidden).map(e => [e.dataset.domain, "
                     "e.querySelector('.why').textContent])")}


def _explorer_search(at, query: str) -> dict[int, str]:
    from tests.explorer.apptest_util import plain

    at.text_input(key="q").input(query).run()
    out = {}
    for b in at.button:
        if b.key and b.key.startswith("idx_"):
            label = plain(b.label)
            out[int(label.split(" · ")[0])] = label.split("*")[1] if "*matched in" in label else ""
    return out


def test_static_page_and_explorer_search_alike(built_page, built_store, open_page, monkeypatch):
    """The same queries on the same store: the page's script and the explorer find the same domains for the same
    reasons, both as mixture.composition says (one search index, one rule)."""
    from mixture import accounting
    from mixture.composition import figures
    from mixture.composition.labels import cluster_labels
    from tests.explorer.apptest_util import run

    reader = accounting.StoreReader(str(built_store.store))
    info = reader.store_info
    uniform = accounting.samples(reader, "uniform")
    labels = cluster_labels(info.clusters, uniform)
    domains = figures.domains_frame(figures.cells_frame(accounting.published_cell_table(reader), info, labels),
                                    info, labels)
    index = figures.search_index(domains, info, uniform)
    first = domains.iloc[0]
    doc = uniform.loc[uniform.text.str.len().idxmax()]
    deep = re.findall(r"[A-Za-z]{6,}", str(doc.text)[1000:2000])[0]  # past the head the page shows first
    queries = [first["name"].terms[0].text, first["top_terms"][-1], info.sources[0].name, "sympy", str(doc.id),
               deep.upper(), f"{first['name'].terms[0].text} {info.sources[-1].name}", "zzqx-no-such-word"]
    monkeypatch.setenv("MIXTURE_STORE", str(built_store.store))
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    monkeypatch.setenv("MIXTURE_SHARE", "0")
    at = run()
    o = open_page(built_page.page)
    reasons = set()
    for query in queries:
        expected = {d: f"matched in {', '.join(why)}" for d, why in figures.match_domains(index, query).items()}
        assert _static_search(o, query) == expected, query
        assert _explorer_search(at, query) == expected, query
        reasons |= {r for why in figures.match_domains(index, query).values() for r in why}
    assert reasons == set(figures.SEARCH_FIELDS.values())  # each reason shown at least once
    assert int(doc.cluster) in figures.match_domains(index, str(doc.id))
    assert all(figures.match_domains(index, q) for q in queries[:-1])  # each query finds something ('sympy' too)
    assert figures.match_domains(index, "zzqx-no-such-word") == {}
    o.check_clean()


def _static_figures(o: Opened) -> dict:
    """What the static page shows of every figure the explorer shows too."""
    page = o.page
    return {
        "headline": page.inner_text("#headline"),
        "cards": dict(page.eval_on_selector_all(".card:not(.drop)", "els => els.map(e => "
                                                "[e.querySelector('.label').textContent, e.querySelector('.value').textContent])")),
        "index": {int(d): (share, tok) for d, share, tok in page.eval_on_selector_all(
            "#index li", "els => els.map(e => [e.dataset.domain, e.querySelector('.share').textContent, "
                         "e.querySelector('.tok').textContent])")},
        "cutoffs": {r[0]: r[1:-1] for r in page.eval_on_selector_all(
            "#cutoffs > .scroll table.cutoffs tbody tr", "els => els.map(e => Array.from(e.cells).map(c => c.textContent))")},
        "grids": {int(d): {r[0]: r[1:] for r in rows} for d, rows in page.eval_on_selector_all(
            "details.domain", "els => els.map(e => [e.dataset.domain, Array.from(e.querySelectorAll("
                              "'table.grid tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent))])")},
    }


def _explorer_figures(at) -> dict:
    """The same figures as the explorer's overview shows them (every panel opened)."""
    from tests.explorer.apptest_util import grid, panel, plain, shown

    def text(value: str) -> str:  # the Markdown grid's bold and red marks, as the browser reads them
        return re.sub(r"^:red\[(.*) over cap\]$", r"\1", value.replace("**", "").strip())

    entries = [plain(b.label).split(" · ") for b in at.button if b.key and b.key.startswith("idx_")]
    cutoffs = shown(at.table[0])
    figures = {"headline": at.header[0].value, "cards": {m.label: m.value for m in at.metric},
               "index": {int(e[0]): (e[-2], e[-1]) for e in entries},
               "cutoffs": {str(t): [str(v) for v in row] for t, row in zip(at.table[0].value.index, cutoffs.values,
                                                                           strict=True)}}
    next(b for b in at.button if b.label == "Open all").click().run(timeout=300)
    figures["grids"] = {d: {row: [text(v) for v in values] for row, values in grid(panel(at, d)).items()
                            if row != "buckets"} for d in figures["index"]}
    return figures


def test_static_page_and_explorer_show_the_same_figures(built_page, built_store, open_page, monkeypatch):
    """Headline, cards, the index's shares and tokens, the raw-score cutoffs and every domain's quality grid (shares,
    tokens, documents, enrichment, the plan's weights and epochs) read the same on both, written by the same
    functions (mixture.composition)."""
    from mixture.planner.formats import read_plan
    from tests.explorer.apptest_util import run

    monkeypatch.setenv("MIXTURE_STORE", str(built_store.store))
    monkeypatch.setenv("MIXTURE_PLAN", str(built_page.plan))
    monkeypatch.setenv("MIXTURE_SHARE", "0")
    explorer = _explorer_figures(run(timeout=120))
    static = _static_figures(open_page(built_page.page))
    assert len(static["grids"]) == len(built_store.artifact.clusters)
    phases = read_plan(str(built_page.plan)).phases
    assert static["cutoffs"] and all(len(g) == 4 + len(phases) + 1 for g in static["grids"].values())  # + epochs
    for name in ("headline", "cards", "index", "cutoffs", "grids"):
        assert explorer[name] == static[name], name


@pytest.fixture(scope="module")
def full_site(hostile_store, tmp_path_factory) -> Path:
    from tests.overview.conftest import cli

    out = tmp_path_factory.mktemp("overview_full_texts")
    code, text = cli("overview", str(hostile_store), "--out", str(out), "--full-texts")
    assert code == 0, text
    return out


@contextmanager
def _served(folder: Path) -> Iterator[str]:
    """The folder over http on 127.0.0.1 (what a bucket or a web server does), in a thread of the test."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _long_sample(hostile_store) -> tuple[str, str]:
    from mixture.accounting import StoreReader, samples

    uniform = samples(StoreReader(str(hostile_store)), "uniform")
    row = uniform[(uniform.cluster == 0) & (uniform.quality == 0) & (uniform.text.str.len() > 5_000)].iloc[0]
    return str(row.id), str(row.text)


def test_show_all_fetches_the_whole_text_from_where_the_page_is_served(full_site, hostile_store, browser):
    doc_id, text = _long_sample(hostile_store)
    with _served(full_site) as origin:
        ctx = browser.new_context(viewport={"width": 1300, "height": 900})
        try:
            page = ctx.new_page()
            opened = Opened(page, f"{origin}/index.html")
            page.on("request", lambda r: opened.requests.append(r.url.split("#")[0]))
            page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{origin}/index.html#c00q0")
            doc = page.locator("#c00q0 article.doc", has=page.locator(f"code:text-is('{doc_id}')"))
            head = doc.locator("pre.text").first.inner_text()
            assert len(head) < len(text)
            doc.locator("a.more.full").click()
            _wait_until(page, "document.querySelectorAll('pre.whole').length > 0")
            assert doc.locator("pre.whole").text_content() == text  # whole, as text
            assert doc.locator("a.more.full").inner_text() == "show less"
            assert not doc.locator("pre.text:not(.whole)").is_visible()
            doc.locator("a.more.full").click()
            assert doc.locator("pre.text:not(.whole)").is_visible() and not doc.locator("pre.whole").is_visible()
            from mixture.overview.page import text_file

            assert opened.requests == [f"{origin}/index.html", f"{origin}/{text_file(doc_id)}"]  # same origin
            assert opened.errors == []
        finally:
            ctx.close()


def test_show_all_from_disk_opens_the_text_file(full_site, hostile_store, open_page):
    from mixture.overview.page import text_file

    doc_id, text = _long_sample(hostile_store)
    o = open_page(full_site / "index.html", "#c00q0")
    doc = o.page.locator("#c00q0 article.doc", has=o.page.locator(f"code:text-is('{doc_id}')"))
    with o.page.expect_navigation():
        doc.locator("a.more.full").click()
    assert o.page.url == (full_site / text_file(doc_id)).as_uri()
    assert o.page.locator("body").inner_text().startswith(text[:200].strip()[:100])
    assert o.errors == []
