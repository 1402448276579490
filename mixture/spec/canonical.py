"""The canonical spec: what a store's content depends on, with every relative path resolved (the stage keys and
store.json's `spec.hash` are hashes of it)."""

from __future__ import annotations

from typing import Any

from mixture.fit.implementation import fit_implementation
from mixture.spec.resolve import References
from mixture.tokenizer import implementation


def canonical_spec(refs: References) -> dict[str, Any]:
    """The spec without `execution` (where and how fast a build runs does not change the store), without `mixture`
    (the planner's section) and without `store.uri` (a store's location is not part of what it holds), its
    relative paths resolved (two spec files in different folders that name the same files are the same spec), and
    without `processing.max_loss` (the threshold of the loss verdict judges the store, it does not change it)."""
    content = refs.spec.model_dump(mode="json", exclude={"execution", "mixture"})
    for item, uri in zip(content["sources"], refs.sources, strict=True):
        item["uri"] = uri
    for item, uri in zip(content["processing"]["decontamination"]["benchmarks"], refs.benchmarks, strict=True):
        item["uri"] = uri
    del content["store"]["uri"]
    del content["processing"]["max_loss"]
    content["tokenizer"] = refs.tokenizer.spec_form
    content["tokenizer_implementation"] = implementation(refs.tokenizer)  # what counts: the keys cover it
    content["fit_implementation"] = fit_implementation()  # label and calibration methods: fit's key covers them
    # processing.language.model stays as written: resolving it would change the key of every store built with it
    if refs.quality_model:
        content["partition"]["quality"]["fasttext_model"] = refs.quality_model
    if refs.sentence_model:
        content["partition"]["clusters"]["sentence_model"] = refs.sentence_model
    return content
