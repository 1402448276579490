"""Shared fixtures: one small demo corpus per seed, written once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from mixture.demo_corpus import write_demo_corpus

SCALE = 0.02


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "corpus"
    write_demo_corpus(out, seed=0, scale=SCALE, progress=False)
    return out


@pytest.fixture(scope="session")
def corpus_seed1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo1") / "corpus"
    write_demo_corpus(out, seed=1, scale=SCALE, progress=False)
    return out


@pytest.fixture(scope="session")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Variants 1 and 2 of the seed-0 corpus (mixture/demo_corpus/variants.py), written in one call."""
    from mixture.demo_corpus.corpus import write_demo_variants

    root = tmp_path_factory.mktemp("variants")
    outs = {v: root / f"v{v}" for v in (1, 2)}
    write_demo_variants(outs, seed=0, scale=SCALE, progress=False)
    return outs
