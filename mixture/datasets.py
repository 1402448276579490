"""A store or a materialized mixture as a Hugging Face `datasets.Dataset` (or `IterableDataset` when streaming).

    from mixture.datasets import load_store, load_mixture

    ds = load_store("gs://bucket/store", cells=["c07q3", (2, 4)], columns=["id", "text", "n_tokens"])
    train = load_mixture("gs://bucket/mixture", phase="pretrain", streaming=True)  # in training order

Only what the store's ledgers (the mixture's manifest) list is read: never `_samples/`, `_quarantine/`, `_dropped/`,
`_build/` or a Parquet file that no ledger lists (the partial output of a failed task). Every file is checked
against the size and xxh64 its ledger (manifest) recorded before it is read: `CorruptShard` (a ValueError) names a
file whose bytes changed and says what to do (`verify=False` skips the check)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from fsspec import AbstractFileSystem
from fsspec.core import url_to_fs

from mixture.accounting.reader import StoreReader, is_local
from mixture.accounting.verify import verify_mixture_shards, verify_store_shards
from mixture.store import layout
from mixture.store.formats import PartitionInfo
from mixture.store.schema import DOCUMENTS

Cell = str | tuple[int, int]
MIXTURE_SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()), ("n_tokens", pa.int64()), ("source", pa.string()),
                            ("cell", pa.string()), ("cluster", pa.int16()), ("quality", pa.int8()), ("pass", pa.int32())])


def load_store(store: str, cells: Cell | Iterable[Cell] | None = None, columns: Sequence[str] | None = None,
               streaming: bool = False, storage_options: dict[str, Any] | None = None, cache_dir: str | None = None,
               verify: bool = True):
    """The documents of a finished store (local path or fsspec URI): every ledger-listed shard, or those of `cells`
    (`c07q3` names or (cluster, quality) pairs), in the store's cell order. `streaming=False` prepares an Arrow copy
    in the Hugging Face cache (`cache_dir`, default HF_DATASETS_CACHE); `streaming=True` reads the Parquet files
    as they are (for a large store). Raises StoreNotReady while the store is building, ValueError for a cell
    the store cannot have or a column it does not hold, CorruptShard when a shard's bytes are not those its
    ledger recorded (`verify`: every shard read whole once and hashed before the dataset is made)."""
    reader = StoreReader(store, **(storage_options or {}))
    partition = reader.store_info.partition  # StoreNotReady while building, FormatError when it does not match
    rels = reader.shard_files()
    if cells is not None:
        wanted = _cells(cells, partition, store)
        rels = [r for r in rels if layout.parse_cell_path(r) in wanted]
    if verify:
        verify_store_shards(reader, rels)
    paths = [_url(reader.fs, reader.path(r)) for r in rels]
    return _parquet_dataset(reader.fs, paths, DOCUMENTS, columns, streaming, storage_options, cache_dir, store)


def load_mixture(folder: str, phase: str | Sequence[str] | None = None, columns: Sequence[str] | None = None,
                 streaming: bool = False, storage_options: dict[str, Any] | None = None, cache_dir: str | None = None,
                 verify: bool = True):
    """A mixture written by `mixture materialize` (local folder or fsspec URI): the shards its manifest.json lists,
    phase after phase (or only `phase`, a name or a list of names), in manifest order, which is the training
    order. `streaming`, `cache_dir` and `verify` (each shard against the manifest's size and xxh64) as in
    `load_store`."""
    from mixture.pipelines.materialize.run import phase_dir
    from mixture.planner.formats import MANIFEST, read_manifest

    fs, root = url_to_fs(str(folder), **(storage_options or {}))
    root = root.rstrip("/")
    if not fs.exists(f"{root}/{MANIFEST}"):
        raise FileNotFoundError(f"{folder}: no {MANIFEST}: not a materialized mixture, or `mixture materialize` has "
                                f"not finished (it writes {MANIFEST} last)")
    phases = read_manifest(root, fs=fs).phases  # FormatError (a ValueError) names the file and field
    if phase is not None:
        names = [phase] if isinstance(phase, str) else list(phase)
        known = [p.name for p in phases]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"{folder}: no phase {', '.join(map(repr, unknown))}; its phases are {', '.join(known)}")
        phases = [p for n in names for p in phases if p.name == n]
    paths = [f"{root}/{phase_dir(p.name)}/{s.path}" for p in phases for s in p.shards]
    missing = [p for p in paths if not fs.exists(p)]
    if missing:
        raise FileNotFoundError(f"{folder}: {len(missing)} shard(s) the manifest lists are missing, e.g. {missing[0]}; "
                                "run `mixture materialize` again")
    if verify:
        verify_mixture_shards(fs, root, str(folder).rstrip("/"), phases)
    return _parquet_dataset(fs, [_url(fs, p) for p in paths], MIXTURE_SCHEMA, columns, streaming, storage_options,
                            cache_dir, str(folder))


def _cells(cells: Cell | Iterable[Cell], partition: PartitionInfo, store: str) -> set[tuple[int, int]]:
    """(cluster, quality) of each cell asked for; an error names a cell outside the store's k × levels grid."""
    k, levels = partition.k, partition.quality_levels
    if isinstance(cells, str) or (isinstance(cells, tuple) and len(cells) == 2 and all(isinstance(x, int) for x in cells)):
        cells = [cells]
    out = set()
    for cell in cells:
        try:
            cl, ql = layout.parse_cell(cell) if isinstance(cell, str) else (int(cell[0]), int(cell[1]))
        except (ValueError, TypeError, IndexError):
            raise ValueError(f"{store}: {cell!r} is not a cell: give cNNqQ names (e.g. c07q3) or (cluster, quality) "
                             "pairs") from None
        if not (0 <= cl < k and 0 <= ql < levels):
            raise ValueError(f"{store}: no cell {cell!r}; this store has clusters 0-{k - 1} and quality levels "
                             f"0-{levels - 1} ({layout.cell_name(0, 0, k)} … {layout.cell_name(k - 1, levels - 1, k)})")
        out.add((cl, ql))
    return out


def _url(fs: AbstractFileSystem, path: str) -> str:
    return path if is_local(fs) else fs.unstrip_protocol(path)


def _parquet_dataset(fs: AbstractFileSystem, paths: list[str], schema: pa.Schema, columns: Sequence[str] | None,
                     streaming: bool, storage_options: dict[str, Any] | None, cache_dir: str | None, what: str):
    from datasets import Dataset, Features, load_dataset

    if paths:
        with fs.open(paths[0], "rb") as f:
            schema = pq.read_schema(f)
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise ValueError(f"{what}: no column {', '.join(map(repr, unknown))}; columns: {', '.join(schema.names)}")
        schema = pa.schema([schema.field(c) for c in columns])
    if not paths:  # nothing listed (an empty cell): an empty dataset of the same columns
        ds = Dataset.from_dict({name: [] for name in schema.names}, features=Features.from_arrow_schema(schema))
        return ds.to_iterable_dataset() if streaming else ds
    return load_dataset("parquet", data_files={"train": paths}, split="train", streaming=streaming,
                        columns=list(columns) if columns is not None else None, cache_dir=cache_dir,
                        storage_options=storage_options)
