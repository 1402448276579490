r"""Lexical document embedder: TF-IDF over a fitted vocabulary, projected by SVD, L2-normalised; frozen as
`_model/embedder.npz` (mixture.store.model_files).

Texts are counted as sklearn's CountVectorizer(tokenizer=terms_of, lowercase=True, stop_words="english") counts
their first EMBED_CHARS characters, with its vocabulary rule, but without a Python step per token. `terms_of` is
TOKEN_PATTERN (the maximal runs of word characters that hold no digit or underscore and are at least 3 long) for
scripts written with spaces, and letter bigrams (as Lucene's CJK analyser) for scripts written without them
(Han, kana, Thai, Lao, Myanmar, Khmer: mixture.text.gates.UNSPACED_RANGES), whose whole phrases would otherwise be
one token each, seen once: a Chinese fortune then had no vocabulary term at all. The text kernel (`term_counts`;
for a fixed vocabulary `vocabulary`/`vocab_counts`) finds, counts and looks up the tokens; without it numpy classes
the characters and finds the tokens, and Arrow hashes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sklearn.preprocessing import normalize

from mixture.store.model_files import EmbedderFile, LexicalEmbedderFile, SentenceEmbedderFile
from mixture.text.gates import UNSPACED_RANGES
from mixture.text.kernel import kernel

TOKEN_PATTERN = r"(?u)\b[^\W\d_][^\W\d_]{2,}\b"  # the terms of text without letters of UNSPACED_RANGES
EMBED_CHARS = 20_000  # documents are embedded from their head; bounds the cost of very long files
CHUNK_CHARS = 500_000  # texts are tokenised in chunks of about this many characters; bounds memory

_WORD, _LETTER = re.compile(r"\w"), re.compile(r"[^\W\d_]")
_RUN = re.compile(r"\w+")
# _OTHER_WORD: a digit or the underscore; _UNSPACED: a letter of a script written without spaces
_NON_WORD, _LETTER_CLASS, _OTHER_WORD, _UNSPACED, _UNSEEN = 0, 1, 2, 3, 255
_classes = np.full(0x110000, _UNSEEN, dtype=np.uint8)  # class of every code point, filled as characters are seen


def min_df_for(n_docs: int) -> int:
    """The minimum document frequency of a fitted vocabulary term."""
    return 2 if n_docs >= 50 else 1


def _classify(ch: str) -> int:
    if _LETTER.match(ch):
        c = ord(ch)
        return _UNSPACED if any(a <= c <= b for a, b in UNSPACED_RANGES) else _LETTER_CLASS
    return _OTHER_WORD if _WORD.match(ch) else _NON_WORD


def terms_of(text: str) -> list[str]:
    r"""The embedder's tokens of a (lowercased) text, in order: the reference definition, one Python step per token.

    Each maximal run of word characters (`\w`) splits into runs of letters of scripts written without spaces and
    runs of other word characters. A run of the first kind gives each pair of adjacent letters (the letter itself
    when it stands alone); one of the second kind is a token when it is all letters and at least 3 long (what
    TOKEN_PATTERN matches in text without the first kind)."""
    out = []
    for run in _RUN.findall(text):
        classes = [_classify(ch) for ch in run]
        i = 0
        while i < len(run):
            j = i + 1
            unspaced = classes[i] == _UNSPACED
            while j < len(run) and (classes[j] == _UNSPACED) == unspaced:
                j += 1
            if unspaced:
                out += [run[i]] if j - i == 1 else [run[a : a + 2] for a in range(i, j - 1)]
            elif j - i >= 3 and all(c == _LETTER_CLASS for c in classes[i:j]):
                out.append(run[i:j])
            i = j
    return out


def _char_classes(cps: np.ndarray) -> np.ndarray:
    """Class of each code point as Python's `re` sees it (not a word character, letter, digit or underscore),
    letters of scripts written without spaces apart."""
    classes = _classes[cps]
    if len(classes) and classes.max() == _UNSEEN:
        unseen = np.unique(cps[classes == _UNSEEN])
        _classes[unseen] = [_classify(chr(c)) for c in unseen.tolist()]
        classes = _classes[cps]
    return classes


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the runs of True in mask[1:-1] (mask is padded with False at either end), as positions
    of mask[1:-1]."""
    edges = np.flatnonzero(mask[1:] != mask[:-1])
    return edges[0::2], edges[1::2]


def _token_spans(cps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the `terms_of` tokens in a text given as code points, by start."""
    classes = np.zeros(len(cps) + 2, dtype=np.uint8)  # a non-word character pads either end
    classes[1:-1] = _char_classes(cps)
    starts, ends = _runs(classes == _LETTER_CLASS)
    # a term is a run of 3 letters or more with no digit or underscore next to it
    keep = (ends - starts >= 3) & (classes[starts] != _OTHER_WORD) & (classes[ends + 1] != _OTHER_WORD)
    starts, ends = starts[keep], ends[keep]
    u_starts, u_ends = _runs(classes == _UNSPACED)
    if len(u_starts):  # each run's bigrams, or its one letter
        n = np.maximum(u_ends - u_starts - 1, 1)
        first = np.repeat(u_starts, n) + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
        last = np.minimum(first + 2, np.repeat(u_ends, n))
        starts, ends = np.concatenate([starts, first]), np.concatenate([ends, last])
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
    return starts, ends


def _utf32(terms: list[str]) -> pa.Array:
    """The terms as an Arrow array of UTF-32 strings, the form `_count_chunk` gives tokens in."""
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum([len(t) * 4 for t in terms], out=offsets[1:])
    chars = "".join(terms).encode("utf-32-le", "surrogatepass")
    return pa.Array.from_buffers(pa.large_binary(), len(terms), [None, pa.py_buffer(offsets), pa.py_buffer(chars)])


def _decode(terms: pa.Array) -> list[str]:
    """The strings of an Arrow array of UTF-32 encoded terms (which hold no whitespace)."""
    if len(terms) == 0:
        return []
    offsets = np.frombuffer(terms.buffers()[1], dtype=np.int64)[terms.offset : terms.offset + len(terms) + 1] // 4
    chars = np.frombuffer(terms.buffers()[2], dtype=np.uint32)[offsets[0] : offsets[-1]]
    return np.insert(chars, offsets[1:-1] - offsets[0], ord(" ")).tobytes().decode("utf-32-le").split()


def _token_runs_py(heads: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`terms_of` tokens of the heads in numpy: (UTF-32 code points of the tokens back to back, their byte
    offsets, the text of each token); the compiled `term_counts` finds the same tokens."""
    # one space between texts keeps tokens from running across them
    cps = np.frombuffer(" ".join(heads).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    starts, ends = _token_spans(cps)
    text_ends = np.cumsum([len(h) + 1 for h in heads])
    rows = np.repeat(np.arange(len(heads)), np.diff(np.searchsorted(starts, text_ends), prepend=0))
    lengths = ends - starts
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    chars = cps[np.arange(offsets[-1]) + np.repeat(starts - offsets[:-1], lengths)]
    return chars, offsets * 4, rows


@dataclass
class _ChunkCounts:
    terms: pa.Array  # the chunk's distinct tokens, UTF-32 encoded
    rows: np.ndarray  # (pairs,) text of each (text, term) pair, within the chunk
    term_ids: np.ndarray  # (pairs,) index into terms
    counts: np.ndarray  # (pairs,) occurrences of the term in the text


def _count_chunk(texts: Sequence[str]) -> _ChunkCounts:
    """Token counts of the texts' heads: cut at EMBED_CHARS, lowercased, `terms_of` tokens."""
    heads = [t[:EMBED_CHARS].lower() for t in texts]
    if kernel:
        chars, offsets, rows, term_ids, counts = kernel.term_counts(heads, 3)
        terms = pa.Array.from_buffers(pa.large_binary(), len(offsets) // 8 - 1, [None, pa.py_buffer(offsets),
                                                                                 pa.py_buffer(chars)])
        return _ChunkCounts(terms, *(np.frombuffer(a, dtype=np.int64) for a in (rows, term_ids, counts)))
    chars, offsets, rows = _token_runs_py(heads)
    # the tokens' characters back to back, as an Arrow binary array that Arrow hashes into distinct terms
    tokens = pa.Array.from_buffers(pa.large_binary(), len(rows), [None, pa.py_buffer(offsets), pa.py_buffer(chars)])
    encoded = pc.dictionary_encode(tokens)
    n_terms = max(len(encoded.dictionary), 1)
    pairs, counts = np.unique(rows * n_terms + encoded.indices.to_numpy(), return_counts=True)
    return _ChunkCounts(encoded.dictionary, pairs // n_terms, pairs % n_terms, counts)


def _chunks(texts: Sequence[str]) -> Iterator[tuple[int, Sequence[str]]]:
    """(index of the first text, texts) in runs of about CHUNK_CHARS characters of heads."""
    start, chars = 0, 0
    for i, t in enumerate(texts):
        chars += min(len(t), EMBED_CHARS)
        if chars >= CHUNK_CHARS:
            yield start, texts[start : i + 1]
            start, chars = i + 1, 0
    if start < len(texts):
        yield start, texts[start:]


def _count(texts: Sequence[str]) -> tuple[list[tuple[int, _ChunkCounts]], pa.Array]:
    """Each chunk's (first text, counts), and every chunk's terms one after the other."""
    counted = [(start, _count_chunk(chunk)) for start, chunk in _chunks(texts)]
    return counted, pa.concat_arrays([c.terms for _, c in counted] or [_utf32([])])


def _csr(counted: list[tuple[int, _ChunkCounts]], columns: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """Float32 CSR counts; columns[i] is the column of the i-th term `_count` lists (-1: not counted)."""
    rows, cols, vals = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    first_term = 0
    for start, c in counted:
        col = columns[first_term + c.term_ids]
        first_term += len(c.terms)
        keep = col >= 0
        rows.append(c.rows[keep] + start)
        cols.append(col[keep])
        vals.append(c.counts[keep])
    data = np.concatenate(vals).astype(np.float32)
    counts = sp.csr_matrix((data, (np.concatenate(rows), np.concatenate(cols))), shape=shape)
    counts.sort_indices()
    return counts


@dataclass(frozen=True)
class Vocabulary:
    """Counts texts over a fixed vocabulary, as CountVectorizer(vocabulary=...).transform does."""

    terms: list[str]

    @cached_property
    def _lookup(self) -> tuple[object, np.ndarray | None]:
        """(the compiled term -> column table, None), or without the kernel (an Arrow value set of the counted
        terms, their columns followed by -1)."""
        # a stop word is never counted, even when a vocabulary holds it
        cols = np.array([i for i, t in enumerate(self.terms) if t not in ENGLISH_STOP_WORDS], dtype=np.int64)
        value_set = _utf32([self.terms[i] for i in cols])
        if kernel:
            _, offsets, chars = value_set.buffers()
            return kernel.vocabulary(chars.to_pybytes(), offsets, cols.tobytes()), None
        return value_set, np.append(cols, -1)

    def __getstate__(self) -> dict:
        return {"terms": self.terms}  # the lookup table is rebuilt where it is needed

    def count(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Float32 counts (texts, terms) of the texts' heads."""
        table, cols = self._lookup
        if cols is None:  # one kernel call: tokens looked up as they are found, no term list in between
            indptr, indices, counts = (np.frombuffer(b, dtype=np.int64)
                                       for b in kernel.vocab_counts(table, list(texts), EMBED_CHARS, 3))
            return sp.csr_matrix((counts.astype(np.float32), indices, indptr), shape=(len(texts), len(self.terms)))
        counted, terms = _count(texts)
        # a term's place in the value set; null for none, filled with -1, which picks the -1 that ends cols
        columns = cols[pc.index_in(terms, value_set=table).fill_null(-1).to_numpy()]
        return _csr(counted, columns, (len(texts), len(self.terms)))


@dataclass(frozen=True)
class TermCounts:
    """Token counts of texts' heads over every term they hold (stop words aside), columns in alphabetical order.

    Texts are tokenised once; `select` then gives any CountVectorizer vocabulary rule's counts."""

    terms: list[str]
    counts: sp.csr_matrix  # (texts, terms) float32

    @classmethod
    def of(cls, texts: Sequence[str]) -> TermCounts:
        counted, terms = _count(texts)
        every = pc.dictionary_encode(terms)
        seen = _decode(every.dictionary)
        # alphabetical as Python orders str: UTF-8 bytes sort in code point order (terms are letters, no surrogate)
        strings = pa.array(seen, pa.string())
        ranked = pc.sort_indices(strings).to_numpy()
        stop = pc.is_in(strings, value_set=pa.array(sorted(ENGLISH_STOP_WORDS), pa.string())).to_numpy(zero_copy_only=False)
        order = ranked[~stop[ranked]]
        column = np.full(len(seen), -1, dtype=np.int64)
        column[order] = np.arange(len(order))
        columns = column[every.indices.to_numpy()]
        return cls([seen[i] for i in order], _csr(counted, columns, (len(texts), len(order))))

    @property
    def n_docs(self) -> int:
        return self.counts.shape[0]

    def select(self, max_features: int | None, min_df: int) -> TermCounts:
        """The terms and counts of CountVectorizer(max_features=..., min_df=...).fit_transform on the same texts."""
        if not self.terms:
            raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
        keep = np.bincount(self.counts.indices, minlength=len(self.terms)) >= min_df
        if max_features is not None and keep.sum() > max_features:
            # CountVectorizer's own expression: the same float32 totals in the same (alphabetical) order, so
            # numpy's default argsort breaks ties between equally frequent terms the same way
            tfs = np.asarray(self.counts.sum(axis=0)).ravel()
            top = np.flatnonzero(keep)[(-tfs[keep]).argsort()[:max_features]]
            keep = np.zeros_like(keep)
            keep[top] = True
        cols = np.flatnonzero(keep)
        if len(cols) == 0:
            raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
        return TermCounts([self.terms[i] for i in cols], self.counts[:, cols])


@dataclass
class LexicalEmbedder:
    vocabulary: list[str]
    idf: np.ndarray  # (V,)
    components: np.ndarray  # (dim, V)

    @classmethod
    def fit(cls, texts: list[str], dim: int, seed: int, max_features: int = 30_000) -> LexicalEmbedder:
        """TF-IDF over the max_features most frequent terms (min_df_for the texts), reduced to dim by SVD."""
        return cls.fit_counts(TermCounts.of(texts), dim, seed, max_features)[0]

    @classmethod
    def fit_counts(
        cls, counted: TermCounts, dim: int, seed: int, max_features: int = 30_000
    ) -> tuple[LexicalEmbedder, np.ndarray]:
        """The embedder fitted on counted texts, and those texts' embeddings (what `transform` gives them)."""
        selected = counted.select(max_features, min_df_for(counted.n_docs))
        counts = selected.counts
        df = np.asarray((counts > 0).sum(axis=0)).ravel()
        idf = (np.log((1 + counted.n_docs) / (1 + df)) + 1).astype(np.float32)
        x = cls._weigh(counts, idf)
        dim = max(2, min(dim, x.shape[1] - 1, x.shape[0] - 1))
        svd = TruncatedSVD(n_components=dim, random_state=seed, algorithm="randomized", n_iter=5)
        svd.fit(x)
        embedder = cls(selected.terms, idf, svd.components_.astype(np.float32))
        return embedder, embedder._project(x)

    @staticmethod
    def _weigh(counts, idf: np.ndarray):
        counts = counts.tocsr(copy=True)
        counts.data = np.log1p(counts.data)
        return normalize(counts.multiply(idf).tocsr())

    def _project(self, weighed) -> np.ndarray:
        return normalize(np.asarray(weighed @ self.components.T, dtype=np.float32))

    @cached_property
    def _vocabulary_counter(self) -> Vocabulary:
        return Vocabulary(self.vocabulary)

    def transform(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (len(texts), dim) of the texts."""
        return self._project(self._weigh(self._vocabulary_counter.count(texts), self.idf))

    def to_file(self) -> LexicalEmbedderFile:
        return LexicalEmbedderFile(self.vocabulary, self.idf, self.components)


@dataclass
class SentenceEmbedder:
    """A sentence-transformers model loaded from a local path (`partition.clusters.embedder: sentence`).

    Needs the `sentence-transformers` package (and torch), which the default install leaves out."""

    model_path: str

    def __post_init__(self) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ModuleNotFoundError as exc:
            raise RuntimeError(
                "partition.clusters.embedder: sentence needs the sentence-transformers package: "
                "pip install sentence-transformers (or use the default lexical embedder)"
            ) from exc
        self._model = SentenceTransformer(self.model_path, device="cpu")

    def transform(self, texts: list[str]) -> np.ndarray:
        x = self._model.encode([t[:EMBED_CHARS] for t in texts], batch_size=32, normalize_embeddings=True)
        return np.asarray(x, dtype=np.float32)

    def to_file(self) -> SentenceEmbedderFile:
        return SentenceEmbedderFile(kind="sentence", model_path=self.model_path)


def embedder_of(file: EmbedderFile) -> LexicalEmbedder | SentenceEmbedder:
    """The embedder `_model/embedder.npz` holds (mixture.store.model_files)."""
    if isinstance(file, SentenceEmbedderFile):
        return SentenceEmbedder(file.model_path)
    return LexicalEmbedder(file.vocabulary, file.idf, file.components)
