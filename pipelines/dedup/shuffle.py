"""Work files between two stages: a shuffle (one file per writer task, a byte range per partition and their index at
its end; reader task q fetches range q of each) and the one-row counts a task leaves for a later stage to sum."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import struct
from collections.abc import Callable, Iterable, Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import xxhash

from mixture.store.io import open_atomic
from mixture.store.schema import short_column_options

PART = "part"  # the column that names a row's partition in the streams given to `write_partitions`
# A shuffle file: the partitions' ranges one after the other, each an Arrow IPC stream (schema, record batches, end)
# in one zstd frame (RANGE_CODEC: ~40 µs to write and to read a small range, where a Parquet file of its own took
# ~250 µs to write and ~180 µs for DuckDB to open, and a shuffle has T × P of them), then the index, an entry
# (ENTRY: partitions, partition, offset, length, rows; little-endian uint64) per partition in reverse order, so that
# the entry of partition q lies at `size - TRAILER.size - ENTRY.size * (q + 1)` whatever the number of partitions,
# then TRAILER (the number of partitions and MAGIC). A reader needs the file's size (from the listing) and q only.
ENTRY = struct.Struct("<5Q")
TRAILER = struct.Struct("<Q8s")
MAGIC = b"MXSHUF02"  # 01: Parquet ranges
RANGE_CODEC = "zstd"
# A reader's fetched partition: one local Arrow IPC file, its ranges' batches gathered into batches of at least
# LOCAL_ROWS rows or LOCAL_BYTES bytes (DuckDB scans the file through an Arrow dataset: `register`); past
# LOCAL_PLAIN_BELOW fetched bytes their buffers in LZ4, which costs ~160 ns a key row but keeps a task's scratch
# near what it fetched, where plain buffers of gathered texts take ~3×
LOCAL_ROWS = 65_536
LOCAL_BYTES = 16 << 20
LOCAL_CODEC = "lz4"
LOCAL_PLAIN_BELOW = 256 << 20
FETCH_BYTES = 64 << 20  # a reader fetches its ranges this many bytes at a time (concurrent requests on object stores)
# A combined file (pipelines/dedup/combine.py: a group of writer files regrouped by partition, in `COMBINED/` beside
# them): the same layout, but each partition's range packs the writers' ranges (PACKED: their count, then their
# lengths and their writers' positions, then the ranges) and each entry (CENTRY) adds the writers the file covers:
# the first, how many and their bytes.
COMBINED = "_combined"
CENTRY = struct.Struct("<8Q")
CMAGIC = b"MXSHUFC1"
PACKED = struct.Struct("<Q")
# A combined shuffle's merged index (`write_merged_index`, the round after the combine round; in `COMBINED/` beside
# the combined files, named so that their glob does not match it): for each partition q in order, a slice of
# ISLICE (IMAGIC, the combined files C, the partitions, q, the stamp of the listings it was made from) then IRANGE
# (offset, length) of q's range in each combined file: a reader fetches where its ranges are in one request, where
# the combined files' own entries take one request a file.
ISLICE = struct.Struct("<8sQQQ16s")
IRANGE = struct.Struct("<QQ")
IMAGIC = b"MXSHUFI1"
INDEX_SUFFIX = ".index"


def prefix_partition(hashes: np.ndarray, n: int) -> np.ndarray:
    """The partition (0 … n-1) of each 64-bit hash: its top 32 bits scaled to n, so partition q holds the hashes
    whose prefix lies in [q/n, (q+1)/n) of the range."""
    top = np.asarray(hashes, dtype=np.uint64) >> np.uint64(32)
    return ((top * np.uint64(n)) >> np.uint64(32)).astype(np.int32)


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a stable 64-bit hash of each integer (documents' spec positions, numbered in order,
    would otherwise fill the partitions in runs)."""
    z = np.asarray(values).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def document_partition(g: np.ndarray, n: int) -> np.ndarray:
    """A document's partition of n (its spec position g hashed): where `minhash_buckets` sends its bucket
    membership and its candidate pairs as the later document, and `minhash_verify` its verified pairs as the later
    document, for the components' rounds."""
    return prefix_partition(mix64(g), n)


def _partition_of(nodes: pa.Array, partitions: pa.Array) -> pa.Array:
    return pa.array(document_partition(nodes.to_numpy(), partitions[0].as_py() if len(partitions) else 1))


def with_partition_function(con) -> None:
    """SQL function `mixture_partition(node, n)`: a document's partition of n (`document_partition`), so that a
    task of the components' rounds holds the edges of its own documents. Vectorised: numpy over each Arrow batch."""
    import duckdb
    from duckdb import sqltypes

    with contextlib.suppress(duckdb.CatalogException):  # made by an earlier task of this process (one instance)
        con.create_function("mixture_partition", _partition_of, [sqltypes.BIGINT, sqltypes.INTEGER],
                            sqltypes.INTEGER, type="arrow")


def string_hashes(values: Iterable[str]) -> np.ndarray:
    """xxh3-64 of each string's UTF-8 bytes (lone surrogates kept), as uint64."""
    return np.fromiter((xxhash.xxh3_64_intdigest(v.encode("utf-8", "surrogatepass")) for v in values),
                       dtype=np.uint64)


def matching_files(pattern: str) -> list[str]:
    """The files a glob matches (any fsspec URI; e.g. every writer's file of one partition, TaskFile.every), sorted;
    none when their folder does not exist (no writer had rows for the partition)."""
    fs, path = fsspec.core.url_to_fs(pattern)
    parts = path.split("/")
    wild = next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), len(parts) - 1)
    fs.invalidate_cache("/".join(parts[:wild]))  # written by other processes: a cached listing would be stale
    return [fs.unstrip_protocol(p) for p in sorted(fs.glob(path))]


def register(con, name: str, files: list[str], schema: pa.Schema) -> None:
    """View `name` over `files` (streamed, only the columns a query uses are read); an empty table of `schema`
    when there are none. A fetched partition (`fetch_partition`: one local Arrow IPC file) is scanned through an
    Arrow dataset; other local files by DuckDB's own Parquet reader; other filesystems through fsspec."""
    import pyarrow.dataset as pads

    if not files:
        con.register(name, schema.empty_table())
        return
    fs, _ = fsspec.core.url_to_fs(files[0])
    paths = [fsspec.core.url_to_fs(f)[1] for f in files]
    columns = ", ".join(f'"{f.name}"' for f in schema)
    if all(p.endswith(".arrow") for p in paths):  # a fetched partition (`fetch_partition`)
        con.register(f"{name}__arrow", pads.dataset(paths, filesystem=fs, format="ipc"))
        con.sql(f'SELECT {columns} FROM "{name}__arrow"').create_view(name)
        return
    if "file" in fs.protocol:
        con.read_parquet(paths).select(columns).create_view(name)
        return
    con.register(name, pads.dataset(paths, filesystem=fs, format="parquet", schema=schema))


class _Range:
    """One partition's range of the open shuffle file: an Arrow IPC stream of `schema` in a zstd frame, written
    through this write-only view of the file, which counts its bytes (`finish` closes the stream and the frame;
    the file stays open)."""

    def __init__(self, sink, schema: pa.Schema) -> None:
        self.sink, self.written, self.closed = sink, 0, False
        self.frame = pa.CompressedOutputStream(self, RANGE_CODEC)
        self.writer = ipc.new_stream(self.frame, schema)

    def write(self, data) -> int:
        self.sink.write(data)
        self.written += len(data)
        return len(data)

    def tell(self) -> int:
        return self.written

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def finish(self) -> int:
        """The range's length, once its stream and frame are closed."""
        self.writer.close()
        self.frame.close()
        return self.written


def _split(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(partition, rows without the `part` column) of each run of one partition in `batches`, sorted by partition."""
    current = None
    for batch in batches:
        if not batch.num_rows:
            continue
        parts = batch.column(PART).to_numpy()
        rows = batch.drop_columns([PART])
        cuts = np.flatnonzero(parts[1:] != parts[:-1]) + 1
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(parts)], strict=True):
            part = int(parts[lo])
            if current is not None and part < current:
                raise ValueError(f"write_partitions: rows not sorted by partition ({part} after {current})")
            current = part
            yield part, rows.slice(lo, hi - lo)


def write_partitions(batches: Iterable[pa.RecordBatch], path_of: str | Callable[[int], str], parts: int | None = None,
                     compression: str = "zstd") -> dict[int, int]:
    """Rows sorted by their `part` column (left out of what is written), a partition after the other. `path_of` a
    path (a shuffle file, `parts` partitions 0 … parts-1): one file holding each partition's rows as an Arrow IPC
    stream in a zstd frame of its own (a byte range) and the index of the ranges (ENTRY), written even without rows,
    so that a shuffle is one object per writer task; `read_partition` / `fetch_partition` read a partition back.
    `path_of` a function: one Parquet file per partition with rows, `path_of(part)` (`compression` is theirs).
    Each file is published atomically once written; memory holds one batch whatever the number of partitions.
    Returns {partition: rows written}."""
    if not isinstance(path_of, str):
        return _write_files(batches, path_of, compression)
    if parts is None or parts < 1:
        raise ValueError("write_partitions: a shuffle file needs its number of partitions (parts >= 1)")
    written: dict[int, int] = {}
    ranges: dict[int, tuple[int, int]] = {}
    fs, path = fsspec.core.url_to_fs(path_of)
    with open_atomic(fs, path) as sink:
        at, current, out = 0, None, None
        for part, rows in _split(batches):
            if part >= parts:
                raise ValueError(f"write_partitions: partition {part} of a shuffle of {parts} partitions")
            if part != current:
                if out is not None:
                    ranges[current] = (at, out.finish())
                    at += out.written
                out, current = _Range(sink, rows.schema), part
            out.writer.write_batch(rows)
            written[part] = written.get(part, 0) + rows.num_rows
        if out is not None:
            ranges[current] = (at, out.finish())
        index = b"".join(ENTRY.pack(parts, q, *ranges.get(q, (0, 0)), written.get(q, 0))
                         for q in range(parts - 1, -1, -1))
        sink.write(index + TRAILER.pack(parts, MAGIC))
    return written


def write_partition(path: str, table: pa.Table, part: int, parts: int) -> None:
    """A shuffle file of `parts` partitions whose rows (`table`) all lie in partition `part` (made-up work for tests
    and benchmarks, as a writer task would have written it)."""
    write_partitions(table.append_column(PART, pa.array(np.full(table.num_rows, part, np.int32))).to_batches(),
                     path, parts)


def _write_files(batches: Iterable[pa.RecordBatch], path_of: Callable[[int], str], compression: str) -> dict[int, int]:
    written: dict[int, int] = {}
    with contextlib.ExitStack() as stack:
        writer, current = None, None
        for part, rows in _split(batches):
            if part != current:
                stack.close()  # publish the previous partition's file
                fs, path = fsspec.core.url_to_fs(path_of(part))
                sink = stack.enter_context(open_atomic(fs, path))
                writer = stack.enter_context(pq.ParquetWriter(sink, rows.schema, compression=compression,
                                                                  **short_column_options(rows.schema)))
                current = part
            writer.write_batch(rows)
            written[part] = written.get(part, 0) + rows.num_rows
    return written


def listing(pattern: str) -> tuple[fsspec.AbstractFileSystem, list[tuple[str, int]]]:
    """(filesystem, [(path, size)]) of the files `pattern` matches, sorted: one listing, sizes included."""
    fs, path = fsspec.core.url_to_fs(pattern)
    fs.invalidate_cache(path.rsplit("/", 1)[0])  # written by other processes: a cached listing would be stale
    found = fs.glob(path, detail=True)
    return fs, sorted((p, int(info["size"])) for p, info in found.items())


def partition_ranges(pattern: str, part: int, parts: int | None = None) -> tuple[fsspec.AbstractFileSystem,
                                                                                  list[tuple[str, int, int]]]:
    """Where partition `part` is in every shuffle file `pattern` matches (the writers' files): (filesystem,
    [(path, offset, length)]) of the files with rows for it. One listing and one small range read per file (the
    index entry, fetched concurrently on object stores). `parts`: the number of partitions the reader expects
    (checked against the writers')."""
    fs, files = listing(pattern)
    return fs, _entries(fs, files, part, parts)


def _entries(fs, files: list[tuple[str, int]], part: int, parts: int | None,
             entry: struct.Struct = ENTRY) -> list[tuple]:
    """(path, offset, length, *the entry's other fields after rows) of partition `part` in each of `files`
    (path, size) that has rows for it: one range read per file."""
    return [(path, *found[0][1:]) for path, found in _range_entries(fs, files, range(part, part + 1), parts, entry)
            if found[0][2] or found[0][3:]]


def _range_entries(fs, files: list[tuple[str, int]], parts_wanted: range, parts: int | None,
                   entry: struct.Struct = ENTRY) -> list[tuple[str, list[tuple]]]:
    """(path, [(partition, offset, length, *the entry's other fields after rows) of each partition of
    `parts_wanted`, in order]) of each of `files` (path, size): one range read per file (the entries of consecutive
    partitions lie side by side, in reverse order, before the trailer)."""
    if not files or not len(parts_wanted):
        return []
    last = parts_wanted[-1]
    starts = [size - TRAILER.size - entry.size * (last + 1) for _, size in files]
    bad = [p for (p, _), s in zip(files, starts, strict=True) if s < 0]
    if bad:
        raise ValueError(f"{fs.unstrip_protocol(bad[0])}: no partition {last} (not a shuffle file of that many "
                         "partitions); remove the build's work folder and rebuild")
    raw = fs.cat_ranges([p for p, _ in files], starts, [s + entry.size * len(parts_wanted) for s in starts])
    out: list[tuple[str, list[tuple]]] = []
    for (path, size), data in zip(files, raw, strict=True):
        if isinstance(data, Exception):
            raise data
        found = []
        for part in parts_wanted:
            n, q, offset, length, _rows, *more = entry.unpack_from(data, entry.size * (last - part))
            if q != part or (parts is not None and n != parts) or offset + length > size - TRAILER.size - entry.size * n:
                why = f"written for {n} partitions" if q == part else "not a shuffle file of that many partitions"
                raise ValueError(f"{fs.unstrip_protocol(path)}: no index entry of partition {part}"
                                 + (f" of {parts}" if parts is not None else "") + f" ({why}): the work was written "
                                 "with another partition count (execution.partitions changed since?); put the "
                                 "setting back, or remove the store's _build/ folder and build again")
            found.append((part, offset, length, *more))
        out.append((path, found))
    return out


def combined_folder(pattern: str) -> str:
    """Where the combined files of the shuffle whose writer files `pattern` matches are: `COMBINED/` beside them."""
    folder, name = pattern.rsplit("/", 1)
    return f"{folder}/{COMBINED}/{name}"


def merged_index_name(pattern: str) -> str:
    """The file name of the merged index of the shuffle whose writer files `pattern` matches (in its `COMBINED/`)."""
    return pattern.rsplit("/", 1)[1].replace("*", "_merged") + INDEX_SUFFIX


def combined_listing(pattern: str) -> tuple[list[tuple[str, int]], tuple[str, int] | None]:
    """([(path, size)] of the combined files of the shuffle whose writer files `pattern` matches, sorted; (path,
    size) of their merged index or None): one listing of their folder."""
    folder = combined_folder(pattern)
    name, index = folder.rsplit("/", 1)[1], merged_index_name(pattern)
    found = listing(f"{folder.rsplit('/', 1)[0]}/*")[1]
    combined = [(p, s) for p, s in found if fnmatch.fnmatchcase(p.rsplit("/", 1)[1], name)]
    return combined, next(((p, s) for p, s in found if p.rsplit("/", 1)[1] == index), None)


def listing_stamp(files: list[tuple[str, int]], combined: list[tuple[str, int]]) -> bytes:
    """xxh3-128 of the names and sizes of a shuffle's writer files and combined files as listed: what a merged
    index was made from, checked by its readers against their own listings."""
    h = xxhash.xxh3_128()
    for group in (files, combined):
        for path, size in group:
            h.update(f"{path.rsplit('/', 1)[1]}\t{size}\n".encode())
        h.update(b"\n")
    return h.digest()


def write_merged_index(pattern: str) -> dict[str, int]:
    """The merged index of the combined files of the shuffle whose writer files `pattern` matches, once they are
    checked to cover every writer file once (their trailers, then their entries: two requests a combined file),
    published atomically. Returns what it read and wrote."""
    fs, files = listing(pattern)
    combined, _ = combined_listing(pattern)
    if not combined:
        raise ValueError(f"{pattern}: no combined files to index (the combine round did not run?); rerun the build")
    tails = fs.cat_ranges([p for p, _ in combined], [s - TRAILER.size for _, s in combined], [s for _, s in combined])
    counts = set()
    for (path, _), tail in zip(combined, tails, strict=True):
        n, magic = (None, None) if isinstance(tail, Exception) or len(tail) != TRAILER.size else TRAILER.unpack(tail)
        if magic != CMAGIC:
            raise ValueError(f"{fs.unstrip_protocol(path)}: not a combined shuffle file; remove the store's _build/ "
                             "folder and build again")
        counts.add(n)
    if len(counts) != 1:
        raise ValueError(f"{pattern}: combined files of different partition counts; remove the store's _build/ folder "
                         "and build again")
    parts = counts.pop()
    found = _range_entries(fs, combined, range(parts), parts, CENTRY)
    _check_tiles(fs, pattern, files, combined, [(path, *entries[0][1:]) for path, entries in found])
    stamp = listing_stamp(files, combined)
    out = fsspec.core.url_to_fs(f"{combined_folder(pattern).rsplit('/', 1)[0]}/{merged_index_name(pattern)}")[1]
    with open_atomic(fs, out) as sink:
        for q in range(parts):
            sink.write(ISLICE.pack(IMAGIC, len(combined), parts, q, stamp)
                       + b"".join(IRANGE.pack(*entries[q][1:3]) for _, entries in found))
    return {"combined_files": len(combined), "index_bytes": parts * (ISLICE.size + IRANGE.size * len(combined))}


def _indexed_entries(fs, files: list[tuple[str, int]], combined: list[tuple[str, int]], index: tuple[str, int],
                     wanted: range, parts: int | None) -> list[tuple[str, list[tuple]]]:
    """(combined file, [(partition, offset, length)] of each partition of `wanted`) from the merged `index`, in one
    request, once its slices are checked to be those of the files listed now."""
    where = fs.unstrip_protocol(index[0])
    stale = ValueError(f"{where}: the combined files and their merged index do not cover the {len(files)} writer files "
                       "listed now (a combination left from another run): remove that folder and rerun the build")
    width = ISLICE.size + IRANGE.size * len(combined)
    if index[1] % width:
        raise stale  # made for another number of combined files
    if wanted.stop * width > index[1]:
        raise ValueError(f"{where}: no partition {wanted[-1]} in the merged index of {index[1] // width} partitions (the "
                         "work was written with another partition count: execution.partitions changed since?); put "
                         "the setting back, or remove the store's _build/ folder and build again")
    data = fs.cat_file(index[0], start=wanted.start * width, end=wanted.stop * width)
    stamp = listing_stamp(files, combined)
    out: list[list[tuple]] = [[] for _ in combined]
    for k, part in enumerate(wanted):
        magic, n, count, q, made_from = ISLICE.unpack_from(data, k * width)
        if (magic, n, q, made_from) != (IMAGIC, len(combined), part, stamp):
            raise stale
        if parts is not None and count != parts:
            raise ValueError(f"{where}: written for {count} partitions, read as {parts} (execution.partitions changed "
                             "since?); put the setting back, or remove the store's _build/ folder and build again")
        ranges = np.frombuffer(data, dtype="<u8", count=2 * n, offset=k * width + ISLICE.size).reshape(n, 2)
        for entries, (offset, length) in zip(out, ranges.tolist(), strict=True):
            entries.append((part, offset, length))
    return [(path, entries) for (path, _), entries in zip(combined, out, strict=True)]


def shuffle_ranges(pattern: str, part: int, parts: int | None = None) -> tuple[fsspec.AbstractFileSystem,
                                                                                list[tuple[str, int, int]], bool]:
    """Where partition `part` of the shuffle whose writer files `pattern` matches is: (filesystem, ranges, packed).
    Where the shuffle was combined, the ranges are the combined files' (packed: each holds several writers'
    ranges), from their merged index (one request) or, without one, their own entries (one request a file), after
    a check that they cover every writer file once, as listed now (a stale or partial combination is refused,
    naming it); otherwise `partition_ranges`."""
    fs, files = listing(pattern)
    combined, index = combined_listing(pattern)
    if not combined:
        return fs, _entries(fs, files, part, parts), False
    return fs, _combined_ranges(fs, pattern, files, combined, index, part, parts), True


def _combined_ranges(fs, pattern: str, files: list[tuple[str, int]], combined: list[tuple[str, int]],
                     index: tuple[str, int] | None, part: int, parts: int | None) -> list[tuple[str, int, int]]:
    """Where partition `part` is in the `combined` files of the shuffle whose writer `files` (as listed now)
    `pattern` matches, once they are checked to cover every writer file once (by their merged `index`'s stamp, or
    their own entries)."""
    if index is not None:
        return [(path, offset, length) for path, entries in
                _indexed_entries(fs, files, combined, index, range(part, part + 1), parts)
                for _, offset, length in entries if length]
    found = _entries(fs, combined, part, parts, CENTRY)
    _check_tiles(fs, pattern, files, combined, found)
    return [(path, offset, length) for path, offset, length, *_ in found if length]


def _check_tiles(fs, pattern: str, files: list[tuple[str, int]], combined: list[tuple[str, int]],
                 found: list[tuple]) -> None:
    """That the `combined` files' index entries `found` (path, offset, length, first writer, writers, their bytes)
    cover every one of the writer `files` listed now once, else the error that names the stale combination."""
    tiles = sorted((first, count, size) for _, _, _, first, count, size in found)
    at, size = 0, 0
    for first, count, covered in tiles:
        if first != at:
            break
        at, size = at + count, size + covered
    if len(found) != len(combined) or at != len(files) or size != sum(s for _, s in files):
        where = fs.unstrip_protocol(combined_folder(pattern).rsplit("/", 1)[0])
        raise ValueError(f"{where}: the combined files do not cover the {len(files)} writer files listed now (a "
                         "combination left from another run): remove that folder and rerun the build")


def _unpacked(data: bytes) -> Iterator[tuple[int, memoryview]]:
    """(writer position, range) of each writer's range packed in one range of a combined file (PACKED: their count,
    their lengths, their writers' positions in the listing of the writer files, then the ranges)."""
    (k,) = PACKED.unpack_from(data)
    lengths = struct.unpack_from(f"<{k}Q", data, PACKED.size)
    positions = struct.unpack_from(f"<{k}Q", data, PACKED.size * (k + 1))
    at, view = PACKED.size * (2 * k + 1), memoryview(data)
    for n, position in zip(lengths, positions, strict=True):
        yield position, view[at:at + n]
        at += n


def _raw(fs, ranges: list[tuple[str, int, int]]) -> Iterator[bytes]:
    """The bytes of each range, fetched FETCH_BYTES at a time (concurrent requests on object stores)."""
    i = 0
    while i < len(ranges):
        j, size = i, 0
        while j < len(ranges) and (j == i or size + ranges[j][2] <= FETCH_BYTES):
            size += ranges[j][2]
            j += 1
        chunk = ranges[i:j]
        for data in fs.cat_ranges([p for p, _, _ in chunk], [o for _, o, _ in chunk], [o + n for _, o, n in chunk]):
            if isinstance(data, Exception):
                raise data
            yield data
        i = j


def _fetched(fs, ranges: list[tuple[str, int, int]], packed: bool = False) -> Iterator[bytes | memoryview]:
    """The bytes of each range, or of each writer's range packed in it (`packed`)."""
    for data in _raw(fs, ranges):
        if packed:
            yield from (blob for _, blob in _unpacked(data))
        else:
            yield data


def fetch_runs(pattern: str, part: int, dest: str, parts: int | None = None) -> list[tuple[int, int, int]] | None:
    """Partition `part` of a combined shuffle (e.g. a band's signature files, a partition per slice), every
    writer's range one after the other in local file `dest`: [(writer position, offset in `dest`, length)] in
    writer order; None when the shuffle was not combined."""
    combined, index = combined_listing(pattern)
    if not combined:
        return None  # the caller lists the writer files itself
    fs, files = listing(pattern)
    ranges = _combined_ranges(fs, pattern, files, combined, index, part, parts)
    runs, at = [], 0
    with open(dest, "wb") as f:
        for data in _raw(fs, ranges):
            for position, blob in _unpacked(data):
                f.write(blob)
                runs.append((position, at, len(blob)))
                at += len(blob)
    return runs


def _batches(blobs: Iterable[bytes | memoryview], pattern: str) -> Iterator[pa.RecordBatch]:
    """The record batches of each range in `blobs` (ranges of the shuffle `pattern` names), in order."""
    for blob in blobs:
        try:
            yield from ipc.open_stream(pa.CompressedInputStream(pa.BufferReader(blob), RANGE_CODEC))
        except (pa.ArrowInvalid, OSError) as e:
            raise ValueError(f"{pattern}: a range that is not an Arrow stream in a {RANGE_CODEC} frame ({e}): work "
                             "written by another version of mixture? Remove the store's _build/ folder and build "
                             "again") from e


def _gathered(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`batches` gathered into batches of at least LOCAL_ROWS rows or LOCAL_BYTES bytes, of the first's schema
    (a writer whose types differ, e.g. a column of nulls only, is cast to it)."""
    held: list[pa.RecordBatch] = []
    rows = size = 0
    first = None
    for batch in batches:
        if first is None:
            first = batch.schema
        held.append(batch)
        rows, size = rows + batch.num_rows, size + batch.nbytes
        if rows >= LOCAL_ROWS or size >= LOCAL_BYTES:
            yield _concat(held, first)
            held, rows, size = [], 0, 0
    if held:
        yield _concat(held, first)


def _concat(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    try:
        out = pa.concat_batches(batches)  # checks that the schemas are one: cheaper than comparing each batch's
        if out.schema.equals(schema):
            return out
    except pa.ArrowInvalid:
        pass
    return pa.concat_batches([b if b.schema.equals(schema) else b.cast(schema) for b in batches])


def _write_local(scratch: str, batches: Iterable[pa.RecordBatch], fetched: int) -> list[str]:
    """[the local Arrow IPC file in folder `scratch` holding `batches` (decoded from `fetched` bytes)], or [] when
    they hold no row."""
    path = os.path.join(scratch, f"{len(os.listdir(scratch)):06d}.arrow")  # a task fetches several into one folder
    options = ipc.IpcWriteOptions(compression=LOCAL_CODEC if fetched >= LOCAL_PLAIN_BELOW else None)
    writer = None
    try:
        for batch in _gathered(b for b in batches if b.num_rows):
            if writer is None:
                writer = ipc.new_file(path, batch.schema, options=options)
            writer.write_batch(batch)
    finally:
        if writer is not None:
            writer.close()
    return [path] if writer is not None else []


def fetch_partition(pattern: str, part: int, scratch: str, parts: int | None = None) -> list[str]:
    """Partition `part` of every shuffle file `pattern` matches, as one local Arrow IPC file in folder `scratch`
    (`register` makes it a DuckDB view): [its path], or [] when no writer had rows for it. A combined shuffle is
    read from its combined files (`shuffle_ranges`)."""
    fs, ranges, packed = shuffle_ranges(pattern, part, parts)
    return _write_local(scratch, _batches(_fetched(fs, ranges, packed), pattern), sum(n for _, _, n in ranges))


def fetch_partitions(pattern: str, wanted: range, scratch: str, parts: int | None = None) -> list[str]:
    """Partitions `wanted` (consecutive) of every shuffle file `pattern` matches, as one local file in folder
    `scratch` as `fetch_partition` makes, with two requests per file whatever the number of partitions: their
    index entries, then the bytes from the first's range to the end of the last's (a shuffle file's partitions lie
    one after the other); a combined shuffle's entries from its merged index, in one request, when it has one. What
    a reader of a range of another stage's partitions makes (`minhash_cluster`'s P_c tasks over `minhash_verify`'s
    P) instead of two requests per file and partition."""
    fs, files = listing(pattern)
    combined, index = combined_listing(pattern)
    if combined and index is not None:
        found = _indexed_entries(fs, files, combined, index, wanted, parts)
    elif combined:
        found = _range_entries(fs, combined, wanted, parts, CENTRY)
        # a combined file covers the same writers in every partition: checked on the first, as a reader of one
        _check_tiles(fs, pattern, files, combined, [(path, *entries[0][1:]) for path, entries in found])
    else:
        found = _range_entries(fs, files, wanted, parts)
        combined = []
    spans = []  # (path, offset, length, [(start in the span, length) of each partition with rows])
    for path, entries in found:
        rows = [(offset, length) for _, offset, length, *_ in entries if length]
        if rows:
            lo, hi = rows[0][0], rows[-1][0] + rows[-1][1]
            spans.append((path, lo, hi - lo, [(offset - lo, length) for offset, length in rows]))

    def blobs() -> Iterator[memoryview]:
        for (_, _, _, pieces), data in zip(spans, _raw(fs, [(p, o, n) for p, o, n, _ in spans]), strict=True):
            for at, length in pieces:
                blob = memoryview(data)[at:at + length]
                yield from ((b for _, b in _unpacked(blob)) if combined else (blob,))

    return _write_local(scratch, _batches(blobs(), pattern), sum(n for _, _, n, _ in spans))


def read_partition(pattern: str, part: int, schema: pa.Schema, parts: int | None = None) -> pa.Table:
    """Partition `part` of every shuffle file `pattern` matches, as one table of `schema` (a small partition: it is
    held in memory; see `fetch_partition` otherwise)."""
    fs, ranges, packed = shuffle_ranges(pattern, part, parts)
    batches = list(_gathered(b for b in _batches(_fetched(fs, ranges, packed), pattern) if b.num_rows))
    return pa.Table.from_batches(batches).select(schema.names).cast(schema) if batches else schema.empty_table()


def shuffle_partitions(uri: str) -> int | None:
    """The number of partitions of the shuffle file at `uri` (its trailer), None when it is not one."""
    fs, path = fsspec.core.url_to_fs(uri)
    size = fs.size(path)
    if size < TRAILER.size:
        return None
    parts, magic = TRAILER.unpack(fs.cat_file(path, start=size - TRAILER.size, end=size))
    return int(parts) if magic == MAGIC else None


def read_shuffle_file(uri: str, schema: pa.Schema) -> pa.Table:
    """Every partition of one writer's shuffle file, in partition order (for checks and tools: a reader task
    reads its own partition with `read_partition` or `fetch_partition`)."""
    parts = shuffle_partitions(uri)
    if parts is None:
        raise ValueError(f"{uri}: not a shuffle file (no {MAGIC.decode()} trailer)")
    return pa.concat_tables([read_partition(uri, q, schema, parts) for q in range(parts)])


def sorted_batches(con, sql: str, rows: int = 65_536) -> Iterator[pa.RecordBatch]:
    """The result of `sql` (which orders its rows by `part`) as Arrow batches, streamed."""
    yield from con.sql(sql).to_arrow_reader(rows)


def read_small(uri: str, schema: pa.Schema) -> pa.Table:
    """A small Parquet file (e.g. a task's counts) at any fsspec URI, read through fsspec (a `gs://` string given to
    pyarrow itself would go to Arrow's own GCS client and its credentials)."""
    fs, path = fsspec.core.url_to_fs(uri)
    with fs.open(path, "rb") as f:
        return pq.read_table(f, schema=schema)


def write_rows(uri: str, table: pa.Table, compression: str = "zstd") -> None:
    """A small table (e.g. a task's counts) as one Parquet file, published atomically."""
    fs, path = fsspec.core.url_to_fs(uri)
    with open_atomic(fs, path) as f:
        pq.write_table(table, f, compression=compression)


def write_counts(uri: str, schema: pa.Schema, counts: dict[str, int]) -> None:
    """A task's counts (the fields of `schema`) as a one-row Parquet file, published atomically."""
    write_rows(uri, pa.table({k: [int(counts[k])] for k in schema.names}, schema=schema))


def summed_counts(pattern: str, schema: pa.Schema) -> dict[str, int]:
    """The counts of every task that wrote one (`write_counts`; `pattern`: a glob of their files), summed field by
    field."""
    total = dict.fromkeys(schema.names, 0)
    for path in matching_files(pattern):
        for k, v in read_small(path, schema).to_pylist()[0].items():
            total[k] += int(v)
    return total
