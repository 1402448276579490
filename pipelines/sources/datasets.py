"""Reads one unit of a `format: datasets` source: an Arrow file of a saved (or prepared) dataset, or one shard of a
streaming `IterableDataset`; every record becomes a Document or a quarantine record, values decoded as `datasets`
decodes them (its Features)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import fsspec
import pyarrow as pa
from datatrove.data import Document, DocumentsPipeline

from mixture.pipelines.sources.records import SourceFiles, bad_record, describe_error, to_document

BATCH_ROWS = 256
_SHARD_RE = re.compile(r"^(?P<split>.+)/shard-(?P<index>\d+)-of-(?P<n>\d+)$")


def read_dataset_unit(src: SourceFiles, rel: str) -> DocumentsPipeline:
    """Unit `rel` of the source: a shard of a streaming dataset, or an Arrow file (`src.detail`: its DatasetUnits)."""
    if src.detail.kind == "streaming":
        yield from _read_shard(src, rel)
    else:
        yield from _read_arrow(src, rel)


def _records(src: SourceFiles, rel: str, start: int, n: int, columns: dict[str, list],
             raw: Callable[[int], Callable[[], str]]) -> Iterator[Document]:
    """Documents of one decoded batch of `n` rows (`columns`: its text and id values, those it has); a null text is
    a missing one (a columnar dataset has no other way to lack a field), a dataset without the text column
    quarantines every record."""
    for j in range(n):
        idx = start + j
        if src.text_field not in columns:
            yield bad_record(src, rel, idx, "missing_text", f"the dataset has no column {src.text_field!r}; set "
                                                             "text_field", raw(j))
        elif columns[src.text_field][j] is None:
            yield bad_record(src, rel, idx, "missing_text", f"field {src.text_field!r} is null or absent", raw(j))
        else:
            yield to_document(src, rel, idx, {c: v[j] for c, v in columns.items()}, raw(j))


def _dumps(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, default=str)


def _read_arrow(src: SourceFiles, rel: str) -> DocumentsPipeline:
    """An Arrow file written by `save_to_disk` or `load_dataset`'s cache (the Arrow stream format), batch by batch
    from any fsspec URI: a task reads its files only (datasets.load_from_disk would first copy a remote dataset)."""
    from datasets import Features

    idx = 0
    try:
        with fsspec.open(f"{src.base}/{rel}", "rb") as f:
            reader = pa.ipc.open_stream(f)
            features = Features.from_arrow_schema(reader.schema)
            cols = [c for c in dict.fromkeys((src.text_field, src.id_field)) if c and c in features]
            wanted = Features({c: features[c] for c in cols})
            for batch in reader:
                values = wanted.decode_batch(batch.select(cols).to_pydict()) if cols else {}

                def raw(j: int, batch=batch, values=values) -> Callable[[], str]:
                    return lambda: _dumps({**batch.slice(j, 1).to_pylist()[0], **{c: v[j] for c, v in values.items()}})

                yield from _records(src, rel, idx, batch.num_rows, values, raw)
                idx += batch.num_rows
    except Exception as exc:  # noqa: BLE001 - not Arrow, permission, unreachable: name the file, go on
        yield bad_record(src, rel, idx, "unreadable_file", describe_error(exc), b"")


@functools.lru_cache(maxsize=8)
def _streaming(path: str, name: str | None, split: str, revision: str | None):
    from datasets import load_dataset

    return load_dataset(path, name=name, split=split, revision=revision, streaming=True)


def _read_shard(src: SourceFiles, rel: str) -> DocumentsPipeline:
    """Shard I of N of the streaming dataset, as `IterableDataset.shard(N, I)` gives it (one data file, most often).
    A data error in the shard (a file that does not parse or cast) quarantines the rest of the shard as one record;
    a network error fails the task, and rerunning the build retries it."""
    m = _SHARD_RE.match(rel)
    if m is None:
        raise ValueError(f"source {src.name!r}: {rel!r} is not a shard name (<split>/shard-I-of-N)")
    index, n = int(m["index"]), int(m["n"])
    ds = _streaming(**src.detail.load)
    if ds.num_shards != n:
        raise RuntimeError(f"source {src.name!r}: the dataset has {ds.num_shards} shards now and had {n} when the build "
                           "started; its files changed. Pin `revision`, or start the build again in a new store")
    idx = 0
    try:
        for batch in ds.shard(num_shards=n, index=index).iter(batch_size=BATCH_ROWS):
            cols = {c: batch[c] for c in dict.fromkeys((src.text_field, src.id_field)) if c and c in batch}
            rows = len(next(iter(batch.values()))) if batch else 0

            def raw(j: int, batch=batch) -> Callable[[], str]:
                return lambda: _dumps({c: v[j] for c, v in batch.items()})

            yield from _records(src, rel, idx, rows, cols, raw)
            idx += rows
    except (ValueError, TypeError, KeyError, pa.ArrowException) as exc:
        if isinstance(exc, OSError):
            raise
        yield bad_record(src, rel, idx, "unreadable_file", describe_error(exc), b"")
