"""Fixtures on real multilingual text: the Debian corpus (translated man pages and fortunes, labelled by language)
and stores built from it by the real pipeline. Tests skip, naming the packages to install, where it is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import BuiltStore


@pytest.fixture(scope="session")
def multilingual_corpus(tmp_path_factory) -> Path:
    from mixture.demo_corpus.debian_text import missing_reason, write_multilingual_corpus

    if reason := missing_reason():
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("debian") / "corpus"
    write_multilingual_corpus(out, seed=0, scale=1.0)
    return out


def build_multilingual(root: Path, corpus: Path, **quality) -> BuiltStore:
    from mixture.demo_corpus.debian_text import multilingual_spec
    from mixture.pipelines.build import build

    root.mkdir(parents=True, exist_ok=True)
    spec = multilingual_spec(str(corpus), "store")
    spec["partition"]["quality"] = quality
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(root / "spec.yaml"), progress=False)
    return BuiltStore(root, root / "spec.yaml", root / "store", corpus)


@pytest.fixture(scope="session")
def multilingual_store(tmp_path_factory, multilingual_corpus) -> BuiltStore:
    """Built with the defaults: quality calibrated per (content type, language)."""
    return build_multilingual(tmp_path_factory.mktemp("ml_store"), multilingual_corpus)
