"""The spec's references resolved against its folder: the tokenizer, the models, and the locations of the sources,
benchmarks and store. The one place that reads the `tiktoken:`, `hf:` and `fasttext:` prefixes."""

from __future__ import annotations

import os
from functools import cached_property
from typing import TYPE_CHECKING

from mixture.store.formats import TokenizerRef
from mixture.tokenizer import file_sha256

if TYPE_CHECKING:
    from mixture.spec.models import Spec


def resolve_uri(uri: str, folder: str) -> str:
    """A relative local path is taken relative to `folder` (the spec file's); URIs and absolute paths stay as they
    are."""
    if "://" in uri or os.path.isabs(uri):
        return uri
    return os.path.normpath(os.path.join(folder, uri))


def resolve_tokenizer(tokenizer: str, folder: str) -> TokenizerRef:
    """`tiktoken:<encoding>`; `hf:<path>` or `<path>.json`: a local tokenizer.json, relative to the spec's folder
    (a path that exists there, ends in .json or is absolute); else `hf:<org/name>`: a hub tokenizer."""
    if tokenizer.startswith("tiktoken:"):
        return TokenizerRef(kind="tiktoken", name=tokenizer.removeprefix("tiktoken:"), sha256=None)
    path = tokenizer.removeprefix("hf:")
    local = resolve_uri(path, folder)
    if os.path.isfile(local):
        return TokenizerRef(kind="file", name=local, sha256=file_sha256(local))
    if os.path.exists(local) or path.endswith(".json") or os.path.isabs(path):
        return TokenizerRef(kind="file", name=local, sha256=None)  # not found: preflight reports it
    return TokenizerRef(kind="hub", name=path, sha256=None)


class References:
    """What a spec names outside itself, resolved against its folder, each on first use and then kept: the stage-key
    test reads a spec through a recorder, so a reference reads only the spec fields it needs, when it is used."""

    def __init__(self, spec: Spec, folder: str):
        self.spec, self.folder = spec, folder

    def _resolve(self, uri: str) -> str:
        return resolve_uri(uri, self.folder)

    @cached_property
    def tokenizer(self) -> TokenizerRef:
        return resolve_tokenizer(self.spec.tokenizer, self.folder)

    @cached_property
    def sources(self) -> tuple[str, ...]:
        """Each source's location, in the spec's order."""
        return tuple(self._resolve(s.uri) for s in self.spec.sources)

    @cached_property
    def benchmarks(self) -> tuple[str, ...]:
        """Each decontamination benchmark's location, in the spec's order."""
        return tuple(self._resolve(b.uri) for b in self.spec.processing.decontamination.benchmarks)

    @cached_property
    def store(self) -> str:
        return self._resolve(self.spec.store.uri).rstrip("/")

    @cached_property
    def quality_model(self) -> str | None:
        """The fastText quality model (`partition.quality.fasttext_model`), whatever the scorer."""
        path = self.spec.partition.quality.fasttext_model
        return self._resolve(path) if path else path

    @cached_property
    def sentence_model(self) -> str | None:
        """The sentence-transformers model folder (`partition.clusters.sentence_model`), whatever the embedder."""
        path = self.spec.partition.clusters.sentence_model
        return self._resolve(path) if path else path

    @cached_property
    def language_model(self) -> str | None:
        """The fastText language-identification model; None: cld2."""
        model = self.spec.processing.language.model
        return None if model == "cld2" else self._resolve(model.removeprefix("fasttext:"))

    @property
    def language_id(self) -> str:
        """The language identifier as `mixture.text.language.LanguageIdentifier` takes it: cld2 or fasttext:<path>."""
        return "cld2" if self.language_model is None else f"fasttext:{self.language_model}"
