"""Fixtures: synthetic stores in the docs/store.md format (written once per session, copied per test)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from mixture.accounting.synthetic import synthetic_documents, write_synthetic_store


@pytest.fixture(scope="session")
def synth_docs() -> pa.Table:
    return synthetic_documents(k=3, docs_per_cell=24, seed=7)


@pytest.fixture(scope="session")
def template_store(tmp_path_factory: pytest.TempPathFactory, synth_docs: pa.Table) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("template") / "store"
    artifact = write_synthetic_store(str(root), synth_docs, k=3, shards_per_cell=3, seed=7)
    return root, artifact


@pytest.fixture
def store(tmp_path: Path, template_store: tuple[Path, dict]) -> Path:
    """A private, writable copy of the template store (tests tamper with it)."""
    dst = tmp_path / "store"
    shutil.copytree(template_store[0], dst)
    return dst


@pytest.fixture
def memory_store(synth_docs: pa.Table):
    """The same store written to fsspec's in-memory filesystem; yields its memory:// URI."""
    import fsspec

    uri = f"memory://acc-{uuid.uuid4().hex[:8]}/store"
    write_synthetic_store(uri, synth_docs, k=3, shards_per_cell=3, seed=7)
    yield uri
    fs = fsspec.filesystem("memory")
    fs.rm("/" + uri.removeprefix("memory://").split("/")[0], recursive=True)
