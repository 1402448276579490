"""The canonical spec: what a store's content depends on, with every relative path resolved (the stage keys and
store.json's `spec.hash` are hashes of it)."""

from __future__ import annotations

from typing import Any

from mixture.spec.locations import resolve_uri
from mixture.spec.models import Spec
from mixture.spec.preflight import tokenizer_ref


def canonical_spec(spec: Spec, spec_dir: str) -> dict[str, Any]:
    """The spec without `execution` (where and how fast a build runs does not change the store), without `mixture`
    (the planner's section) and without `store.uri` (a store's location is not part of what it holds), its
    relative paths resolved (two spec files in different folders that name the same files are the same spec), and
    without `processing.max_loss` (the threshold of the loss verdict judges the store, it does not change it)."""
    content = spec.model_dump(mode="json", exclude={"execution", "mixture"})
    for item in [*content["sources"], *content["processing"]["decontamination"]["benchmarks"]]:
        item["uri"] = resolve_uri(item["uri"], spec_dir)
    del content["store"]["uri"]
    del content["processing"]["max_loss"]
    content["tokenizer"] = tokenizer_ref(spec.tokenizer, spec_dir)
    for section, key in (("quality", "fasttext_model"), ("clusters", "sentence_model")):
        if content["partition"][section][key]:
            content["partition"][section][key] = resolve_uri(content["partition"][section][key], spec_dir)
    return content
