"""Real browser: `streamlit run` on loopback, headless Debian chromium via playwright, light and dark themes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mixture.composition import numbers
from mixture.explorer import MAIN
from tests.explorer.synthstore import SCRIPT_DOC

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
APP = MAIN
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                 reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(cmd: list[str], env: dict[str, str], port: int, what: str) -> Iterator[str]:
    """Run the explorer server `cmd` on `port` until its health endpoint answers; yield its URL, stop it after."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.time() + 60  # only to stop waiting for the server, not a timing assertion
        while True:
            try:
                urllib.request.urlopen(url + "_stcore/health", timeout=2)
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{what} did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def server(store, plan_file):
    port = _free_port()
    env = dict(os.environ, MIXTURE_STORE=str(store), MIXTURE_PLAN=str(plan_file))
    with serve([sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--browser.gatherUsageStats", "false"], env, port, "streamlit") as url:
        yield url


def _luminance(css: str) -> float:
    nums = [float(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3]]
    return (0.2126 * nums[0] + 0.7152 * nums[1] + 0.0722 * nums[2]) / 255


def test_overview_in_chromium_light_and_dark(server, artifact):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    ARTIFACTS.mkdir(exist_ok=True)
    expected = (f"{numbers.tokens(artifact['counters']['tokens_out'], 4)} tokens across {len(artifact['clusters'])} "
                "semantic domains and 5 calibrated quality buckets")
    dialogs: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            warm = browser.new_page()  # a fresh server renders blank until the script ran once
            warm.goto(server)
            warm.get_by_text("semantic domains").first.wait_for(timeout=60000)
            warm.close()
            seen = {}
            for scheme in ("light", "dark"):
                ctx = browser.new_context(color_scheme=scheme, viewport={"width": 1400, "height": 1600})
                page = ctx.new_page()
                page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                page.goto(server + "?cell=c01q2")
                heading = page.locator("h2", has_text="semantic domains").first
                heading.wait_for(timeout=30000)
                assert heading.inner_text().strip() == expected
                doc = page.get_by_text("<script>alert(1)</script>", exact=False).first
                doc.wait_for(timeout=30000)
                assert SCRIPT_DOC in doc.inner_text()
                page.wait_for_timeout(1500)
                page.screenshot(path=str(ARTIFACTS / f"explorer-overview-{scheme}.png"), full_page=True)
                bg = page.evaluate("getComputedStyle(document.querySelector('.stApp')).backgroundColor")
                fg = page.evaluate("getComputedStyle(document.querySelector('h2')).color")
                seen[scheme] = (_luminance(bg), _luminance(fg))
                ctx.close()
        finally:
            browser.close()
    assert dialogs == []  # the <script> in the document never ran
    (bg_l, fg_l), (bg_d, fg_d) = seen["light"], seen["dark"]
    assert bg_l > 0.8 and fg_l < 0.3, seen  # dark text on a light page
    assert bg_d < 0.2 and fg_d > 0.7, seen  # light text on a dark page
