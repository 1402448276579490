"""The wheel installed into a fresh venv outside the checkout: `mixture demo`, `mixture explore`, an AppTest page.

The wheel's dependencies (exactly its Requires-Dist, no extras) are installed once into a cached venv keyed by
them (first run: a few minutes); the fresh venv of every run sees that venv's site-packages through a `.pth` file
and gets the wheel itself with `--no-deps`. Nothing of the checkout is importable there."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("MIXTURE_TEST_CACHE", Path.home() / ".cache" / "mixture-tests"))
PIP_QUIET = ["-q", "--disable-pip-version-check"]

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def _requirements(wheel: Path) -> list[str]:
    """The wheel's Requires-Dist without the optional extras (what `pip install mixture` installs)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        fields = Parser().parsestr(z.read(meta).decode())
    return sorted(r for r in fields.get_all("Requires-Dist") or [] if "extra ==" not in r)


def _deps_venv(requirements: list[str], work: Path) -> Path:
    """A venv holding exactly `requirements`, cached under CACHE by their hash and the Python version."""
    key = hashlib.sha256("\n".join([sys.version, *requirements]).encode()).hexdigest()[:16]
    final = CACHE / f"deps-{key}"
    if (final / "READY").exists():
        os.utime(final)  # in use: kept by the clean-up below
        return final
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = CACHE / f"deps-{key}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(tmp)], work)
    _run([str(tmp / "bin" / "python"), "-m", "pip", "install", *PIP_QUIET, *requirements], work, timeout=1800)
    (tmp / "READY").write_text("\n".join(requirements) + "\n")
    for old in CACHE.glob("deps-*"):  # venvs of other requirements and leftovers of killed runs, unused for a day
        if old != tmp and time.time() - old.stat().st_mtime > 86400:
            shutil.rmtree(old, ignore_errors=True)
    os.rename(tmp, final)  # only its site-packages is used (through a .pth), so the venv may move
    return final


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(python of a fresh venv with the wheel installed, a work folder outside the checkout)."""
    work = tmp_path_factory.mktemp("installed")
    # a copy without build outputs: setuptools reuses ./build/lib, which keeps modules deleted since the last build
    source = work / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "demo", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache", "test-artifacts"))
    wheels = work / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", *PIP_QUIET, "--no-deps", "-w", str(wheels), str(source)], work)
    wheel = next(wheels.glob("mixture-*.whl"))
    deps = _deps_venv(_requirements(wheel), work)
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], work)
    (_site_packages(venv) / "_mixture_test_deps.pth").write_text(f"{_site_packages(deps)}\n")
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", *PIP_QUIET, "--no-deps", str(wheel)], work)
    return python, work


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "COLUMNS": "160", "NO_COLOR": "1"}


def test_the_installed_package_is_self_contained(installed):
    python, work = installed
    out = _run([str(python), "-c", (
        "import importlib.util as u, mixture, mixture.explorer, mixture.pipelines, mixture.specs;"
        "print(mixture.__file__); print(mixture.explorer.MAIN.exists());"
        "print([n for n in ('pipelines', 'app', 'specs') if u.find_spec(n)])")], work, _env())
    where, main_exists, generic = out.split("\n")[:3]
    assert str(python.parent.parent) in where and str(REPO) not in where
    assert main_exists == "True"
    assert generic == "[]"  # no generic top-level names installed


def test_demo_then_explore_from_the_installed_package(installed):
    python, work = installed
    mixture = str(python.parent / "mixture")
    demo = work / "demo"
    out = _run([mixture, "demo", str(demo), "--scale", "0.05"], work, _env())
    assert "every invariant holds" in out and "every cell's realised tokens match the plan" in out, out[-3000:]
    for rel in ("demo.yaml", "corpus/MANIFEST.json", "store/store.json", "plan.json", "mixture/manifest.json",
                "overview/index.html"):
        assert (demo / rel).exists(), rel

    env = {**_env(), "MIXTURE_STORE": str(demo / "store"), "MIXTURE_PLAN": str(demo / "plan.json")}
    page = _run([str(python), "-c", (
        "from streamlit.testing.v1 import AppTest\n"
        "from mixture.explorer import MAIN\n"
        "at = AppTest.from_file(str(MAIN), default_timeout=120)\n"
        "at.run()\n"
        "assert not at.exception, [e.value for e in at.exception]\n"
        "print(at.header[0].value)\n")], work, env)
    assert "tokens across 8 semantic domains and 5 calibrated quality buckets" in page, page[:2000]

    for sig in (signal.SIGTERM, signal.SIGKILL):
        _explore_stops_its_server(mixture, demo, work, sig)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _explore_stops_its_server(mixture: str, demo: Path, work: Path, sig: signal.Signals) -> None:
    """`mixture explore` serves the health endpoint; stopping it (`sig`) stops its Streamlit server too."""
    port = _free_port()
    proc = subprocess.Popen([mixture, "explore", str(demo / "store"), "--plan", str(demo / "plan.json"),
                             "--port", str(port)], cwd=work, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    assert r.read().decode().strip() == "ok"
                break
            except OSError:
                assert proc.poll() is None, f"mixture explore exited {proc.returncode}"
                # a deadline only to stop waiting for the server, not a timing assertion
                assert time.monotonic() < deadline, "the explorer did not answer on its health endpoint"
                time.sleep(0.3)
        servers = _children(proc.pid)
        assert servers, "mixture explore runs no server process"
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(_alive(s) for s in servers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(s) for s in servers), f"the Streamlit server outlived `mixture explore` ({sig.name})"
    finally:
        for pid in [proc.pid, *_children(proc.pid)]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
