"""Every path and name inside a store, and the cNNqQ <-> cluster=NN/quality=Q mapping (drop folders: `drops`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mixture.store.drops import DROPPED_DIR as DROPPED_DIR
from mixture.store.drops import DROPPED_REASONS
from mixture.store.drops import QUARANTINE_DIR as QUARANTINE_DIR
from mixture.store.drops import dropped_dir as dropped_dir

STORE_JSON = "store.json"
LEDGER = "_ledger.json"
SAMPLES_DIR = "_samples"
UNIFORM_SAMPLES = f"{SAMPLES_DIR}/uniform.parquet"
EXEMPLAR_SAMPLES = f"{SAMPLES_DIR}/exemplars.parquet"
MODEL_DIR = "_model"
BUILD_DIR = "_build"
WORK_DIR = f"{BUILD_DIR}/work"
LOCK_FILE = f"{BUILD_DIR}/LOCK"
DROP_REASONS = DROPPED_REASONS  # the folders under _dropped/ (mixture.store.drops defines every reason)
QUALITY_NAMES = ("junk", "poor", "usable", "good", "excellent")  # the names of five quality buckets

_CELL_RE = re.compile(r"^c(\d{2,3})q(\d)$")
_PATH_RE = re.compile(r"cluster=(\d+)/quality=(\d+)")


def bucket_names(levels: int, names: Sequence[str] = ()) -> list[str]:
    """The name of each of `levels` quality buckets: `names` (store.json's `partition.quality_names`), and for the
    buckets they do not name, QUALITY_NAMES when there are five buckets, else `Q<n>` (what the build writes)."""
    default = list(QUALITY_NAMES) if levels == len(QUALITY_NAMES) else [f"Q{q}" for q in range(levels)]
    return (list(names) + default[len(names):])[:levels]


def cluster_width(k: int) -> int:
    """Digits used for cluster ids: 2, or 3 once k exceeds 100."""
    return 3 if k > 100 else 2


def cell_name(cluster: int, quality: int, k: int = 100) -> str:
    return f"c{cluster:0{cluster_width(k)}d}q{quality}"


def cell_path(cluster: int, quality: int, k: int = 100) -> str:
    return f"cluster={cluster:0{cluster_width(k)}d}/quality={quality}"


def parse_cell(name: str) -> tuple[int, int]:
    """`c07q3` -> (7, 3); raises ValueError naming the expected form."""
    m = _CELL_RE.match(name)
    if not m:
        raise ValueError(f"{name!r} is not a cell name: expected cNNqQ, e.g. c07q3")
    return int(m.group(1)), int(m.group(2))


def parse_cell_path(path: str) -> tuple[int, int]:
    """`.../cluster=07/quality=3/...` -> (7, 3)."""
    m = _PATH_RE.search(path)
    if not m:
        raise ValueError(f"{path!r} holds no cluster=NN/quality=Q partition")
    return int(m.group(1)), int(m.group(2))


def stage_dir(stage: str) -> str:
    return f"{BUILD_DIR}/{stage}"
