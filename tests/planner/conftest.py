"""Fixtures of the planner tests (helpers in planner_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from planner_fixtures import marin_mix, write_store


@pytest.fixture
def synthetic_store(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    cells = {
        (0, 1): rng.integers(20, 200, 60).tolist(),
        (0, 3): rng.integers(20, 200, 40).tolist(),
        (1, 2): rng.integers(50, 400, 30).tolist(),
        (2, 4): rng.integers(10, 60, 8).tolist(),  # small: drawn for several passes
    }
    return write_store(tmp_path / "store", cells)


@pytest.fixture
def marin_file(tmp_path: Path) -> Path:
    path = tmp_path / "mix.json"
    path.write_text(json.dumps(marin_mix(), indent=1))
    return path
