"""Stores and pages for the overview tests: the session's real built store (with a plan) and a synthetic store of
40 domains x 5 buckets whose sampled documents are long Python sources and hostile HTML."""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT_DOC = "Before <script>alert('script ran')</script> and <b>bold</b> after."
ONERROR_DOC = 'An image <img src="missing.png" onerror="alert(\'onerror ran\')"> and a link <a href="https://example.com/">x</a>.'
HOSTILE = (SCRIPT_DOC, ONERROR_DOC)


@dataclass
class Written:
    store: Path
    page: Path
    plan: Path | None = None


def cli(*args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from mixture.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def python_sources(min_chars: int = 30_000) -> list[str]:
    """Real, long, quote- and bracket-heavy text: the standard library's larger modules."""
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.glob("*.py"))[:400]]
    return [t for t in texts if len(t) >= min_chars]


@pytest.fixture(scope="session")
def built_plan(built_store, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("overview_plan") / "plan.json"
    code, text = cli("plan", str(built_store.spec_path), "--out", str(out), "--scale", "0.1")
    assert code in (0, 1) and out.exists(), text  # 1: the plan has warnings
    return out


@pytest.fixture(scope="session")
def built_page(built_store, built_plan, tmp_path_factory) -> Written:
    out = tmp_path_factory.mktemp("overview_built")
    code, text = cli("overview", str(built_store.store), "--out", str(out), "--plan", str(built_plan))
    assert code == 0, text
    return Written(built_store.store, out / "index.html", built_plan)


@pytest.fixture(scope="session")
def hostile_store(tmp_path_factory) -> Path:
    """k = 40 (200 cells), 4 uniform samples per cell, every sample a long Python source, except the first two of
    c00q0: a <script> and an onerror document."""
    import pyarrow as pa

    from mixture.accounting import synthetic_documents, write_synthetic_store

    docs = synthetic_documents(k=40, docs_per_cell=10, seed=3)
    sources = python_sources()
    text = [sources[i % len(sources)] for i in range(docs.num_rows)]
    first = [i for i, (c, q) in enumerate(zip(docs.column("cluster").to_pylist(), docs.column("quality").to_pylist(),
                                              strict=True)) if (c, q) == (0, 0)][:len(HOSTILE)]
    for i, hostile in zip(first, HOSTILE, strict=True):
        text[i] = hostile
    docs = docs.set_column(docs.schema.get_field_index("text"), "text", pa.array(text, pa.string()))
    store = tmp_path_factory.mktemp("overview_hostile") / "store"
    write_synthetic_store(str(store), docs, samples_per_cell=4)
    return store


@pytest.fixture(scope="session")
def hostile_page(hostile_store, tmp_path_factory) -> Written:
    out = tmp_path_factory.mktemp("overview_hostile_page")
    code, text = cli("overview", str(hostile_store), "--out", str(out))
    assert code == 0, text
    return Written(hostile_store, out / "index.html")
