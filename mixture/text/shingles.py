"""Word n-gram hashes of a batch of texts and one-permutation MinHash signatures (words, n-grams and MinHash bins
computed by the text kernel, or vectorised with numpy without it).

Words are lower-cased runs of word characters (`\\w`, any script; ASCII digits read as `0`); every other character
separates words. A word hash mixes the word's bytes 8 at a time (splitmix64 finaliser), an n-gram hash mixes its
words' hashes with position constants. Everything is a pure function of the text: stable across runs and machines."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mixture.text.kernel import kernel

# how the words of the near-duplicate measure are read (said in every near-duplicate drop and in store.json)
WORD_RULE = "lower-cased words, digits read as 0"

_U64 = np.uint64
_M1, _M2 = _U64(0xBF58476D1CE4E5B9), _U64(0x94D049BB133111EB)
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_ASCII_WORD = bytes(  # UTF-8 bytes >= 128 (parts of non-ASCII characters) are kept as they are
    b if b >= 128 else ord("0") if chr(b).isdigit() else b if chr(b).isalnum() or chr(b) == "_" else 32 for b in range(256)
)
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")
_NON_WORD = re.compile(r"\W+")
_TAIL_MASKS = np.array([(1 << (8 * r)) - 1 if r < 8 else (1 << 64) - 1 for r in range(9)], dtype=_U64)
EMPTY = np.iinfo(np.uint64).max  # a MinHash bin no shingle fell into


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64 with full avalanche (x is modified in place and returned)."""
    x ^= x >> _U64(30)
    x *= _M1
    x ^= x >> _U64(27)
    x *= _M2
    x ^= x >> _U64(31)
    return x


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending: np.unique's result by one sort. numpy >= 2.3 answers a bare np.unique of
    integers from a hash table, several times the cost of this sort on a document's shingles (the shingle sets'
    table of bench/verify_jaccard_bench.py) and ~60x on 1M distinct hashes."""
    out = np.sort(values)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def simplified_bytes(text: str) -> bytes:
    """UTF-8 of the lower-cased text with every non-word character made a space and ASCII digits made `0`."""
    text = text.lower()
    if not text.isascii():  # only the non-ASCII runs need the (slower) Unicode-aware class
        text = _NON_ASCII_RUN.sub(lambda m: _NON_WORD.sub(" ", m.group()), text)
    return text.encode("utf-8", "surrogatepass").translate(_ASCII_WORD)


@dataclass
class WordHashes:
    """The words of a batch of texts: `hashes[offsets[i]:offsets[i + 1]]` are text i's, in order."""

    hashes: np.ndarray  # uint64
    offsets: np.ndarray  # int64, len(texts) + 1

    @classmethod
    def of(cls, texts: list[str]) -> WordHashes:
        if kernel:  # the same words and hashes, in one pass over each text
            hashes, offsets = kernel.word_hashes(texts if isinstance(texts, list) else list(texts))
            return cls(np.frombuffer(hashes, dtype=_U64), np.frombuffer(offsets, dtype=np.int64))
        return cls.of_py(texts)

    @classmethod
    def of_py(cls, texts: list[str]) -> WordHashes:
        """`of` in numpy: the reference for the compiled `word_hashes`."""
        parts = [simplified_bytes(t) for t in texts]
        buf = b" ".join(parts)  # the separator keeps words of two texts apart
        starts_of_text = np.cumsum([0] + [len(p) + 1 for p in parts])[:-1]
        a = np.frombuffer(buf, dtype=np.uint8)
        edges = np.diff((a != 32).view(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        offsets = np.append(np.searchsorted(starts, starts_of_text), len(starts)).astype(np.int64)
        return cls(_hash_words(buf, starts, ends - starts), offsets)

    def doc_of(self) -> np.ndarray:
        """The text index of every word."""
        return np.repeat(np.arange(len(self.offsets) - 1), np.diff(self.offsets))

    def ngrams(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Hashes of every run of n consecutive words inside one text, and the text index of each."""
        if kernel:
            grams, doc = kernel.ngram_hashes(self.hashes, self.offsets, n)
            return np.frombuffer(grams, dtype=_U64), np.frombuffer(doc, dtype=np.int64)
        return self.ngrams_py(n)

    def ngrams_py(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """`ngrams` in numpy: the reference for the compiled `ngram_hashes`."""
        h, doc = self.hashes, self.doc_of()
        m = len(h) - n + 1
        if m <= 0:
            return np.empty(0, _U64), np.empty(0, np.int64)
        acc = h[:m].copy()
        for t in range(1, n):
            acc *= _U64((0x9E3779B97F4A7C15 * (2 * t + 1)) & (2**64 - 1) | 1)
            acc += h[t : t + m]
        inside = doc[:m] == doc[n - 1 :]
        return mix64(acc[inside] ^ _U64(n)), doc[:m][inside]


def _hash_words(buf: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """One 64-bit hash per word: its bytes read 8 at a time (the last read masked) and mixed into the length."""
    padded = buf + bytes(8)
    at = np.ndarray((len(buf) + 1,), dtype="<u8", buffer=padded, strides=(1,))  # 8 bytes from every offset
    acc = lengths.astype(_U64) * _GOLDEN
    idx, pos, rem = np.arange(len(starts)), starts.astype(np.int64), lengths.astype(np.int64)
    while idx.size:
        chunk = at[pos] & _TAIL_MASKS[np.minimum(rem, 8)]
        acc[idx] = mix64(acc[idx] ^ chunk)
        more = rem > 8
        idx, pos, rem = idx[more], pos[more] + 8, rem[more] - 8
    return acc


def minhash_signatures(shingles: np.ndarray, doc: np.ndarray, n_docs: int, k: int, seed: int) -> np.ndarray:
    """One-permutation MinHash with optimal densification (Shrivastava 2017): (n_docs, k) uint64 signatures.

    A shingle's seeded hash picks one of k bins (its high bits) and competes for that bin's minimum; an empty bin
    takes the value of the first non-empty bin in a fixed seeded order of bins, so two documents agree on each
    position with probability equal to their Jaccard similarity, at O(shingles) cost instead of O(shingles × k).
    Values are below 2**60: datatrove's bucket stage reads 64-bit signatures only up to its Mersenne prime
    2**61 - 1 (its own values are taken modulo it) and silently skips larger ones. Rows of documents without
    shingles are all EMPTY."""
    out = minhash_bins(shingles, doc, n_docs, k, seed).reshape(n_docs, k)
    empty = out == EMPTY
    partial = np.flatnonzero(empty.any(axis=1) & ~empty.all(axis=1))
    if partial.size:
        order = _probe_order(k, seed)
        for i in partial:
            row, holes = out[i], np.flatnonzero(empty[i])
            filled = ~empty[i][order[holes]]  # (holes, k): is the probed bin non-empty
            row[holes] = row[order[holes, filled.argmax(axis=1)]]
    return out


def minhash_bins(shingles: np.ndarray, doc: np.ndarray, n_docs: int, k: int, seed: int) -> np.ndarray:
    """Every (document, bin)'s minimum (n_docs * k, writable) before densification; EMPTY where no shingle fell."""
    seed_mix = mix64(np.array([seed], dtype=_U64) + _GOLDEN)[0]
    if kernel:
        bins = kernel.minhash_bins(np.ascontiguousarray(shingles, dtype=_U64),
                                   np.ascontiguousarray(doc, dtype=np.int64), n_docs, k, int(seed_mix))
        return np.frombuffer(bins, dtype=_U64).copy()
    return minhash_bins_py(shingles, doc, n_docs, k, seed_mix)


def minhash_bins_py(shingles: np.ndarray, doc: np.ndarray, n_docs: int, k: int, seed_mix: np.uint64) -> np.ndarray:
    """`minhash_bins` in numpy: the reference for the compiled one."""
    h = mix64(shingles ^ seed_mix)
    bins = ((h >> _U64(32)) * _U64(k)) >> _U64(32)
    out = np.full(n_docs * k, EMPTY, dtype=_U64)
    np.minimum.at(out, doc.astype(_U64) * _U64(k) + bins, h >> _U64(4))
    return out


_PROBES: dict[tuple[int, int], np.ndarray] = {}


def _probe_order(k: int, seed: int) -> np.ndarray:
    """For every bin, a seeded permutation of all bins: where an empty bin looks for a value."""
    if (k, seed) not in _PROBES:
        rng = np.random.default_rng([seed, k])
        _PROBES[(k, seed)] = np.stack([rng.permutation(k) for _ in range(k)])
    return _PROBES[(k, seed)]
