"""Fixtures of the explorer tests: a small synthetic store, a plan, a second store and a store still building."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.explorer.synthstore import build_plan, build_store  # noqa: E402


@pytest.fixture(scope="session")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("explorer") / "store"
    build_store(root, k=5)
    return root


@pytest.fixture(scope="session")
def artifact(store) -> dict:
    return json.loads((store / "store.json").read_text())


@pytest.fixture(scope="session")
def plan_file(store) -> Path:
    path = store.parent / "plan.json"
    build_plan(path, store)
    return path


@pytest.fixture(scope="session")
def store_b(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("explorer_b") / "store"
    build_store(root, k=6, seed=1, centroids=False)
    return root


@pytest.fixture(scope="session")
def building_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("explorer_building") / "store"
    build_store(root, k=3, building=True)
    return root


@pytest.fixture
def app_env(monkeypatch, store, plan_file):
    """Point the app at the synthetic store and plan (the way `mixture explore` does: environment variables)."""
    monkeypatch.setenv("MIXTURE_STORE", str(store))
    monkeypatch.setenv("MIXTURE_PLAN", str(plan_file))
    monkeypatch.delenv("MIXTURE_STORE_B", raising=False)
    monkeypatch.setenv("MIXTURE_SHARE", "0")  # local use: free store and plan inputs (the server is on loopback)
    return store
