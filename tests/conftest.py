"""Shared fixtures: a real small store built by the real pipeline from the embedded demo corpus."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
TEST_SCALE = 0.05


@dataclass
class BuiltStore:
    root: Path  # folder holding corpus/, spec.yaml, store/
    spec_path: Path
    store: Path
    corpus: Path

    @property
    def artifact(self):
        """store.json read through its model (mixture.store.formats.StoreArtifact): every use validates it."""
        from mixture.store.formats import read_store_artifact

        return read_store_artifact(str(self.store / "store.json"))

    @property
    def ground_truth(self) -> dict:
        return json.loads((self.corpus / "ground_truth.json").read_text())


def small_spec(corpus_rel: str = "corpus", store_rel: str = "store", **partition) -> dict:
    """The demo spec pointed at a corpus beside the spec, with a partition sized for a small corpus."""
    from mixture.demo import SMALL_PARTITION, demo_spec

    spec = demo_spec(corpus_rel, store_rel)
    spec["partition"]["clusters"].update({**SMALL_PARTITION, **partition})
    spec["execution"] = {"executor": "local", "tasks": 2, "workers": 2}
    return spec


@pytest.fixture(scope="session")
def demo_corpus(tmp_path_factory) -> Path:
    from mixture.demo_corpus import write_demo_corpus

    root = tmp_path_factory.mktemp("corpus")
    write_demo_corpus(str(root / "corpus"), seed=0, scale=TEST_SCALE, progress=False)
    return root / "corpus"


def build_small(root: Path, corpus: Path, **partition) -> BuiltStore:
    from mixture.pipelines.build import build

    root.mkdir(parents=True, exist_ok=True)
    spec_path = root / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(small_spec(str(corpus), "store", **partition)))
    build(str(spec_path), progress=False)
    return BuiltStore(root, spec_path, root / "store", corpus)


@pytest.fixture(scope="session")
def spec_factory():
    """`spec_factory(corpus_rel, store_rel, **partition)` -> the small test spec as a dict (see `small_spec`)."""
    return small_spec


@pytest.fixture(scope="session")
def store_builder():
    """`store_builder(root, corpus, **partition)` builds another small store with the real pipeline."""
    return build_small


@pytest.fixture(scope="session")
def built_store(tmp_path_factory, demo_corpus) -> BuiltStore:
    """A store built once per test session by `mixture.pipelines.build.build` from the demo corpus at a small scale."""
    return build_small(tmp_path_factory.mktemp("built"), demo_corpus)
