"""A page path opened directly (`/store`, `/search?q=…`) in chromium on `mixture explore`, local and shared behind
its token: the page asked for is shown, and no request fails (Streamlit looked for its server at
`/store/_stcore/health` first: two 404s and two console errors)."""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.explorer.test_explorer_browser import ARGS, CHROMIUM, _free_port, serve

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                 reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")]
TOKEN = "page-paths-5e1d"
# a text each page shows once it ran
SHOWS = {"store": "Tokens per cell", "search?q=def&doc=nope": "Scan the whole store", "diff": "Store B"}


def _explore(store: Path, plan: Path, *extra: str, token: str = ""):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIXTURE_")}
    if token:
        env["MIXTURE_EXPLORER_TOKEN"] = token
    cmd = [str(Path(sys.executable).parent / "mixture"), "explore", str(store), "--plan", str(plan), "--host",
           "127.0.0.1", "--port", str(port), *extra]
    return serve(cmd, env, port, "mixture explore")


def _open_directly(browser, url: str, path: str, token: str = "") -> tuple[list[str], list[str], str]:
    """Open `url + path` in a new browser session (giving the token when asked) and wait for the page: (console
    errors, failed responses, the URL shown), counted from the moment the app's page is requested."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    errors: list[str] = []
    failed: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(url + path)
    if token:  # the door's own answer is a 401 with its form: counted from the token on
        box = page.get_by_label("Access token", exact=True)
        box.wait_for(timeout=60000)
        errors.clear()
        failed.clear()
        box.fill(token)
        box.press("Enter")
    page.get_by_text(SHOWS[path]).first.wait_for(timeout=60000)
    page.wait_for_load_state("networkidle")
    shown = page.url
    page.context.close()
    return errors, failed, shown


@pytest.mark.parametrize(("extra", "token", "metrics"), [((), "", 200), (("--share",), "", 404),
                                                    (("--share",), TOKEN, 401)],
                         ids=["local", "shared", "shared with a token"])
def test_a_page_path_opened_directly_makes_no_failed_request(store, plan_file, extra, token, metrics):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    with _explore(store, plan_file, *extra, token=token) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for path in SHOWS:
                errors, failed, shown = _open_directly(browser, url, path, token)
                assert failed == [] and errors == [], (path, failed, errors)
                assert shown.startswith(url + path.split("?")[0]), (path, shown)  # the page the link names
                assert all(part in shown for part in path.split("?")[-1].split("&")), (path, shown)  # its query
        finally:
            browser.close()
        # the page path is sent to the app's root with the page named, its query kept (after the token)
        assert _answer(url + "store?doc=a%20b") == (401 if token else 302, None if token else "/?page=store&doc=a%20b")
        # Streamlit's metrics: no page needs them; behind the token, or off when sharing without one
        assert (_answer(url + "_stcore/metrics")[0], _answer(url + "_stcore/health")[0]) == (metrics, 200)


def _answer(url: str) -> tuple[int, str | None]:
    """The status and Location of a GET, redirects not followed."""
    try:
        with urllib.request.build_opener(_NoRedirect).open(url, timeout=10) as r:
            return r.status, r.headers["location"]
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["location"]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
        return None
