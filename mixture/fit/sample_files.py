"""The fit sample as the `sample` tasks write it and the fit reads it back: `<rank>.parquet` (the task's rows with
their term counts) and `terms/<rank>.parquet` (the task's term dictionary: document frequencies and totals)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mixture.fit.embed import TermCounts
from mixture.fit.part_counts import PartCounts, merge_counts
from mixture.store.io import write_parquet_atomic

TERMS_DIR = "terms"  # under the sample folder: one dictionary per sample file, of the same name
FILL = "fill"  # a row not drawn, the lowest draw of a source the task drew nothing of (kept if no task drew one)
TERM_COLUMNS = ("term_ids", "term_counts")
# what the fit reads of a sample file (those it holds; the text only where it needs it)
ROW_COLUMNS = ("id", "source", "content_type", "language", "raw_score", "u", "n_tokens", FILL)
READERS = 16  # files read at once: the fit reads one file per sample task, thousands of them on a cluster


def part_file(rank: int) -> str:
    """The name of sample task `rank`'s file (its rows, its term dictionary under `terms/`), and of the fit's
    assignments of those rows (`_build/work/fit_assignments/`), which assign task `rank` reads."""
    return f"{rank:05d}.parquet"


def write_part(folder: str, rank: int, rows: pa.Table) -> PartCounts:
    """Writes a sample task's rows (which hold `text`) with each one's term counts, and the task's term dictionary
    (first: a sample file is never there without its dictionary). Not compressed: the files are bounded by
    sample_docs and read once, by the fit (zstd took longer than the read). Returns the counts."""
    part = PartCounts.of(rows.column("text").to_pylist())
    root = folder.rstrip("/")
    write_parquet_atomic(f"{root}/{TERMS_DIR}/{part_file(rank)}", part.term_table(), compression=None)
    for name, column in part.row_columns().items():
        rows = rows.append_column(name, column)
    write_parquet_atomic(f"{root}/{part_file(rank)}", rows, compression=None)
    return part


@dataclass
class FitSample:
    """The sample documents, ordered by (draw, id): `rows` holds their columns as lists (`part`: the index of
    the file each comes from, `text` only when asked for); `docs[i][r]` is the document of row r of file
    `names[i]` (-1: a fill candidate left out: its source was drawn, or another candidate of it drew lower)."""

    rows: dict[str, list]
    names: list[str]
    parts: list[PartCounts]
    docs: list[np.ndarray]

    def __len__(self) -> int:
        return len(self.rows["id"])

    def term_counts(self, min_df: int) -> TermCounts:
        """The documents' term counts over the terms in at least min_df of them, merged from the files' counts."""
        return merge_counts(self.parts, self.docs, len(self), min_df)


def _read_file(fs, path: str, text: bool) -> tuple[pa.Table, PartCounts | None]:
    """(the rows' columns, the file's counts: None when it was written without them)."""
    with fs.open(path, "rb") as f:
        pf = pq.ParquetFile(f)
        names = pf.schema_arrow.names
        counted = all(c in names for c in TERM_COLUMNS)
        wanted = [c for c in (*ROW_COLUMNS, *(["text"] if text or not counted else [])) if c in names]
        table = pf.read(columns=[*wanted, *(TERM_COLUMNS if counted else ())])
    folder, _, name = path.rpartition("/")
    if not counted:
        return table, None
    terms_path = f"{folder}/{TERMS_DIR}/{name}"
    with fs.open(terms_path, "rb") as f:
        terms = pq.read_table(f)
    return table.drop_columns(list(TERM_COLUMNS)), PartCounts.from_tables(table, terms)


def _documents(table: pa.Table) -> np.ndarray:
    """Per row: True when it is a sample document. A drawn row is; a fill row is when its source has no drawn row
    in any file and it has that source's lowest (draw, id): one document of every source, for any task count."""
    source = table["source"].to_numpy(zero_copy_only=False)
    fill = table[FILL].to_numpy(zero_copy_only=False)
    keep = ~fill
    candidates = np.flatnonzero(fill & ~np.isin(source, np.unique(source[~fill])))
    best: dict[str, tuple[float, str, int]] = {}
    for s, u, doc_id, row in zip(source[candidates].tolist(), table["u"].take(candidates).to_pylist(),
                                 table["id"].take(candidates).to_pylist(), candidates.tolist(), strict=True):
        if s not in best or (u, doc_id) < best[s][:2]:
            best[s] = (u, doc_id, row)
    keep[[row for _, _, row in best.values()]] = True
    return keep


def read_sample(sample_folder: str, text: bool = False) -> FitSample:
    """The sample folder's files (those the sample stage wrote, or any with the same row columns): the documents
    ordered by (u, id); each file's term counts (counted here for a file written without them: a hand-made
    sample); `text` in the rows when asked for, or when a file lacks `n_tokens` (the fit then estimates tokens
    from the text; `n_tokens` is left out unless every file has it)."""
    fs, root = fsspec.core.url_to_fs(sample_folder)
    paths = sorted(fs.glob(f"{root}/*.parquet"))
    if not paths:
        raise ValueError(f"the fit sample {sample_folder} holds no file; rerun the sample stage")
    with ThreadPoolExecutor(min(READERS, len(paths))) as pool:
        read = list(pool.map(lambda p: _read_file(fs, p, text), paths))
    tokens = all("n_tokens" in t.column_names for t, _ in read)
    if not tokens and not text:
        return read_sample(sample_folder, text=True)
    parts = [c if c is not None else PartCounts.of(t["text"].to_pylist()) for t, c in read]
    tables = []
    for i, (t, _) in enumerate(read):
        t = t.drop_columns([c for c in t.column_names if (c == "n_tokens" and not tokens) or (c == "text" and not text)])
        tables.append(t.append_column("part", pa.array(np.full(t.num_rows, i, dtype=np.int32))))
    table = pa.concat_tables(tables)
    rows = np.flatnonzero(_documents(table))
    # the documents' rows of the table in (u, id) order, applied to the Python lists (Table.sort_by copies the text)
    order = rows[pc.sort_indices(table.select(["u", "id"]).take(pa.array(rows)),
                                 sort_keys=[("u", "ascending"), ("id", "ascending")]).to_numpy()]
    doc_of_row = np.full(table.num_rows, -1, dtype=np.int64)
    doc_of_row[order] = np.arange(len(order))
    bounds = np.cumsum([0, *(t.num_rows for t in tables)])
    docs = [doc_of_row[bounds[i]:bounds[i + 1]] for i in range(len(tables))]
    picked = order.tolist()
    columns = {name: [values[i] for i in picked] for name, values in table.drop_columns([FILL]).to_pydict().items()}
    return FitSample(columns, [p.rsplit("/", 1)[-1] for p in paths], parts, docs)


def read_texts(sample_folder: str, sample: FitSample, wanted: np.ndarray, head: int) -> dict[int, str]:
    """{document: the first `head` characters of its text} of the sample documents `wanted`, read a file at a time
    (the text column of one file in memory at once); none of a file written without its text."""
    want = np.zeros(len(sample), dtype=bool)
    want[np.asarray(wanted, dtype=np.int64)] = True
    fs, root = fsspec.core.url_to_fs(sample_folder)
    out: dict[int, str] = {}
    for name, docs in zip(sample.names, sample.docs, strict=True):
        rows = np.flatnonzero((docs >= 0) & want[np.maximum(docs, 0)])
        if not len(rows):
            continue
        with fs.open(f"{root.rstrip('/')}/{name}", "rb") as f:
            pf = pq.ParquetFile(f)
            if "text" not in pf.schema_arrow.names:  # a sample written without its text: labels without phrases
                continue
            texts = pf.read(columns=["text"]).column("text").take(pa.array(rows))
        for r, text in zip(rows.tolist(), texts.to_pylist(), strict=True):
            out[int(docs[r])] = text[:head]
    return out
