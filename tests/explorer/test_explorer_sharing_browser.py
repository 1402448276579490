"""Real browser on `mixture explore … --share --token`: only the token prompt until it is given, no path box, a
location outside the shared ones refused, the store scan stopped at its row limit."""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.explorer.test_explorer_browser import ARGS, CHROMIUM, _free_port, serve
from tests.explorer.test_explorer_sharing import FREE_TEXT

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                 reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")]
TOKEN = "open-sesame-7f3c"


@pytest.fixture(scope="module")
def shared_server(store, store_b, plan_file):
    port = _free_port()
    mixture = Path(sys.executable).parent / "mixture"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIXTURE_")}
    env["MIXTURE_EXPLORER_TOKEN"] = TOKEN
    with serve([str(mixture), "explore", str(store), "--store", str(store_b), "--plan", str(plan_file),
                             "--host", "127.0.0.1", "--port", str(port), "--share", "--scan-rows", "10"], env, port, "mixture explore") as url:
        yield url


def _prompt(browser, url: str):
    """Open `url` in a new browser session and wait for the token prompt (the door every page is behind)."""
    page = browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
    page.goto(url)
    box = page.get_by_label("Access token", exact=True)
    box.wait_for(timeout=60000)
    return page, box


def _give_token(page, box) -> None:
    box.fill(TOKEN)
    box.press("Enter")
    box.wait_for(state="detached", timeout=60000)


def _text_boxes(page) -> set[str]:
    return {label.strip() for label in page.locator('[data-testid="stTextInput"] label').all_inner_texts()}


def _status(url: str, cookie: str = "") -> int:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_every_endpoint_but_health_asks_for_the_token(shared_server):
    from mixture.explorer.gate import COOKIE, session_value

    assert _status(shared_server + "_stcore/health") == 200
    for path in ("", "store", "search?doc=x", "_stcore/metrics", "_stcore/host-config", "static/js/x.js",
                 "media/x.png", "_mixture/token"):
        assert _status(shared_server + path) == 401, path
    assert _status(shared_server + "_stcore/metrics", f"{COOKIE}={session_value('not-' + TOKEN)}") == 401
    assert _status(shared_server + "_stcore/metrics", f"{COOKIE}={session_value(TOKEN)}") == 200


def test_shared_explorer_in_chromium(shared_server, store):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for url in (shared_server, shared_server + "store", shared_server + "?page=diff&store=/etc"):
                page, _ = _prompt(browser, url)
                body = page.inner_text("body")
                assert "semantic domains" not in body and "Refused" not in body and "Diff" not in body
                assert page.locator('[data-testid="stSidebar"]').count() == 0
                assert page.locator("input:not([type=hidden])").count() == 1  # the token box alone
                page.context.close()
            page, box = _prompt(browser, shared_server)
            box.fill("not-the-token")
            box.press("Enter")
            page.get_by_text("Wrong token.").wait_for(timeout=30000)
            assert "semantic domains" not in page.inner_text("body")
            _give_token(page, page.get_by_label("Access token", exact=True))
            page.locator("h2", has_text="semantic domains").first.wait_for(timeout=60000)
            assert _text_boxes(page) <= FREE_TEXT  # no Store / Plan box in the sidebar
            assert page.locator('[data-testid="stSidebar"]').get_by_text("Store").count() >= 1  # a select box
            page.reload()  # the token lasts for the browser session: no prompt again
            page.locator("h2", has_text="semantic domains").first.wait_for(timeout=60000)
            assert page.get_by_label("Access token", exact=True).count() == 0
            page.goto(shared_server + "store")  # nor on another page
            page.get_by_text("Tokens per cell").first.wait_for(timeout=60000)
            page.context.close()

            page, box = _prompt(browser, shared_server + "?page=overview&store=" + str(store.parent / "elsewhere"))
            _give_token(page, box)
            page.get_by_text("Refused: store=").first.wait_for(timeout=60000)
            assert "semantic domains" not in page.inner_text("body")
            page.context.close()

            page, box = _prompt(browser, shared_server + "diff")  # a shared deep link survives the prompt
            _give_token(page, box)
            page.get_by_text("Store B").first.wait_for(timeout=60000)
            assert page.url.startswith(shared_server + "diff")
            assert _text_boxes(page) <= FREE_TEXT
            page.context.close()

            page, box = _prompt(browser, shared_server + "search?q=def")
            _give_token(page, box)
            page.get_by_role("button", name="Scan the whole store").click(timeout=60000)
            page.get_by_text("The scan stopped after 10 rows").wait_for(timeout=60000)
            assert page.url.startswith(shared_server + "search?q=def")
            page.context.close()
        finally:
            browser.close()


def test_a_bare_streamlit_run_with_a_token_keeps_the_deep_link(store):
    """Without the door (`streamlit run main.py` with the secret in its environment), the app's own prompt is shown
    on the page the link names, and the link's page is shown once the token is given."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    from mixture.explorer import MAIN

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIXTURE_")}
    env.update(MIXTURE_EXPLORER_TOKEN=TOKEN, MIXTURE_STORE=str(store))
    with serve([sys.executable, "-m", "streamlit", "run", str(MAIN), "--server.port", str(port), "--server.address",
                "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"], env, port,
               "streamlit") as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page, box = _prompt(browser, url + "store")
            assert page.locator('[data-testid="stSidebarNav"]').count() == 0 and "Tokens per cell" not in \
                page.inner_text("body")
            _give_token(page, box)
            page.get_by_text("Tokens per cell").first.wait_for(timeout=60000)
            assert page.url.startswith(url + "store")
        finally:
            browser.close()
