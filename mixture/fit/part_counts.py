"""Term counts of one part of the fit sample (what a `sample` task counts of its share) and their merge into the
counts of the whole sample, equal to what `TermCounts.of` gives for every sample text, without tokenising again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from mixture.fit.embed import TermCounts


@dataclass(frozen=True)
class PartCounts:
    """A part's distinct terms (stop words left out, in code point order: `TermCounts`' columns), each term's
    document frequency and total count over the part's rows, and each row's (term, count) pairs."""

    terms: pa.Array  # string, distinct, sorted
    df: np.ndarray  # (terms,) int64: rows that hold the term
    tf: np.ndarray  # (terms,) int64: occurrences over the rows
    indptr: np.ndarray  # (rows + 1,) int64: row r's pairs are [indptr[r], indptr[r + 1])
    term_ids: np.ndarray  # (pairs,) int32 index into terms, increasing within a row
    counts: np.ndarray  # (pairs,) int32, > 0

    @classmethod
    def of(cls, texts: Sequence[str]) -> PartCounts:
        """The counts of the texts' heads (`TermCounts.of`: the first EMBED_CHARS characters, lowercased)."""
        counted = TermCounts.of(texts)
        m = counted.counts
        term_ids = m.indices.astype(np.int32)
        counts = m.data.astype(np.int32)  # whole numbers held as float32: exact, a head holds < 2^24 tokens
        n = len(counted.terms)
        return cls(pa.array(counted.terms, pa.string()), np.bincount(term_ids, minlength=n).astype(np.int64),
                   np.bincount(term_ids, weights=counts, minlength=n).astype(np.int64), m.indptr.astype(np.int64),
                   term_ids, counts)

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    def row_columns(self) -> dict[str, pa.Array]:
        """Each row's pairs as two list columns (`term_ids`, `term_counts`), one entry per row."""
        offsets = pa.array(self.indptr, pa.int32())
        return {"term_ids": pa.ListArray.from_arrays(offsets, pa.array(self.term_ids, pa.int32())),
                "term_counts": pa.ListArray.from_arrays(offsets, pa.array(self.counts, pa.int32()))}

    def term_table(self) -> pa.Table:
        """The part's dictionary: one row per term (`term`, `df`, `tf`), in term order."""
        return pa.table({"term": self.terms, "df": pa.array(self.df, pa.int64()), "tf": pa.array(self.tf, pa.int64())})

    @classmethod
    def from_tables(cls, rows: pa.Table, terms: pa.Table) -> PartCounts:
        """The counts `row_columns` and `term_table` wrote (rows: a table with those two columns)."""
        ids, counts = (rows.column(c).combine_chunks() for c in ("term_ids", "term_counts"))
        lengths = pc.list_value_length(ids).to_numpy(zero_copy_only=False)
        indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        return cls(terms.column("term").combine_chunks(), terms.column("df").to_numpy(), terms.column("tf").to_numpy(),
                   indptr, ids.flatten().to_numpy().astype(np.int32), counts.flatten().to_numpy().astype(np.int32))


def merged_terms(parts: Sequence[PartCounts], docs: Sequence[np.ndarray]) -> pa.Table:
    """(term, df, tf) of the sample, one row per term with df > 0, in code point order: the parts' dictionaries
    summed, less the rows that are not sample documents (docs[i][r] < 0 for row r of part i). Integer sums and a
    sort by term: the same table for any number and order of parts."""
    tables = []
    for part, doc in zip(parts, docs, strict=True):
        df, tf = part.df, part.tf
        if (doc < 0).any():  # rows left out: take their pairs off the part's totals
            pairs = np.repeat(doc < 0, np.diff(part.indptr))
            ids = part.term_ids[pairs]
            df = df - np.bincount(ids, minlength=len(df))
            tf = tf - np.bincount(ids, weights=part.counts[pairs], minlength=len(tf)).astype(np.int64)
        tables.append(pa.table({"term": part.terms, "df": pa.array(df, pa.int64()), "tf": pa.array(tf, pa.int64())}))
    if not tables:
        return pa.table({"term": pa.array([], pa.string()), "df": pa.array([], pa.int64()), "tf": pa.array([], pa.int64())})
    summed = pa.concat_tables(tables).group_by("term", use_threads=False).aggregate([("df", "sum"), ("tf", "sum")])
    summed = summed.select(["term", "df_sum", "tf_sum"]).rename_columns(["term", "df", "tf"])
    summed = summed.filter(pc.greater(summed["df"], 0))
    return summed.take(pc.sort_indices(summed, sort_keys=[("term", "ascending")]))


def merge_counts(parts: Sequence[PartCounts], docs: Sequence[np.ndarray], n_docs: int, min_df: int) -> TermCounts:
    """The `TermCounts` of the sample's n_docs documents, row r of part i being document docs[i][r] (< 0: not in
    the sample), over the terms in at least `min_df` of them: `TermCounts.of(texts)` with the rarer terms' columns
    left out, which changes nothing `select(max_features, min_df)` returns (it drops them first, and ranks the
    others by the same column sums in the same order)."""
    merged = merged_terms(parts, docs)
    vocabulary = merged.filter(pc.greater_equal(merged["df"], min_df))["term"].combine_chunks()
    if len(merged) and not len(vocabulary):
        raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
    # every part's terms looked up at once (one hash table of the vocabulary, whatever the number of parts)
    every = pa.chunked_array([p.terms for p in parts], pa.string())
    columns = pc.index_in(every, value_set=vocabulary).fill_null(-1).to_numpy().astype(np.int64)
    first = np.cumsum([0, *(len(p.terms) for p in parts)])
    rows, cols, vals = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int32)]
    for i, (part, doc) in enumerate(zip(parts, docs, strict=True)):
        col = columns[first[i]:first[i + 1]][part.term_ids]
        row = np.repeat(doc.astype(np.int64), np.diff(part.indptr))
        keep = (col >= 0) & (row >= 0)
        rows.append(row[keep])
        cols.append(col[keep])
        vals.append(part.counts[keep])
    data = np.concatenate(vals).astype(np.float32)
    counts = sp.csr_matrix((data, (np.concatenate(rows), np.concatenate(cols))), shape=(n_docs, len(vocabulary)))
    counts.sort_indices()
    return TermCounts(vocabulary.to_pylist(), counts)
