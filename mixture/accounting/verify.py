"""Check a shard against what was recorded when it was written (size and xxh64 of its bytes) before any of its
text is used: a store's shards against their ledger, a mixture's against its manifest."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import xxhash
from fsspec import AbstractFileSystem

from mixture.accounting.reader import StoreReader, is_local
from mixture.store.formats import LedgerShard

HASH_CHUNK = 8 << 20


class CorruptShard(ValueError):
    """A shard whose bytes are not those recorded when it was written (the message names it and what to do)."""


def file_xxh64(fs: AbstractFileSystem, path: str) -> tuple[int, str]:
    """(size, hex xxh64) of a file's bytes, read in 8 MiB chunks (local files without fsspec's wrapper)."""
    h, size = xxhash.xxh64(), 0
    opener = open(path, "rb") if is_local(fs) else fs.open(path, "rb")  # noqa: SIM115
    with opener as f:
        while chunk := f.read(HASH_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def check_file(fs: AbstractFileSystem, path: str, size: int, xxh64: str, shown: str, record: str,
               fix: str) -> None:
    """Raise CorruptShard naming `shown` when the file at `path` is not `size` bytes of xxh64 `xxh64` (the values
    `record` holds); `fix` says what to do."""
    try:
        got_size, got = file_xxh64(fs, path)
    except FileNotFoundError:
        raise CorruptShard(f"{shown}: missing, though {record} lists it; {fix}") from None
    if got_size != size:
        raise CorruptShard(f"{shown}: {got_size:,} bytes, {record} says {size:,}: the file changed after it was "
                           f"written; nothing was read from it. {fix}")
    if got != xxh64:
        raise CorruptShard(f"{shown}: xxh64 {got}, {record} says {xxh64}: the file's bytes changed after it was "
                           f"written (a flipped bit, an edit, a bad copy); nothing was read from it. {fix}")


def ledger_entries(reader: StoreReader) -> dict[str, LedgerShard]:
    """{store-relative shard path: its ledger entry} over every readable ledger."""
    return {f"{cell_dir}/{s.path}": s for cell_dir, ledger in reader.ledger_models().items() for s in ledger.shards}


def store_fix(reader: StoreReader) -> str:
    return (f"Run `mixture audit {reader.uri} --checksums all` to list every damaged shard, then restore them or "
            "rebuild the store.")


def verify_store_file(reader: StoreReader, rel: str, size: int, xxh64: str) -> None:
    """Check the store's shard `rel` against its ledger's `size` and `xxh64`; CorruptShard names it."""
    check_file(reader.fs, reader.path(rel), size, xxh64, f"{reader.uri.rstrip('/')}/{rel}",
               f"its ledger ({rel.rpartition('/')[0]}/_ledger.json)", store_fix(reader))


def verify_store_shards(reader: StoreReader, rels: Iterable[str], threads: int = 4) -> None:
    """Check each of the store's shards `rels` against its ledger entry (size, xxh64); CorruptShard names the first
    that differs. A shard checked once by `reader` is not checked again (until `reader.refresh()`)."""
    done = reader.verified
    todo = [r for r in dict.fromkeys(rels) if r not in done]
    if not todo:
        return
    entries = ledger_entries(reader)
    unlisted = [r for r in todo if r not in entries]
    if unlisted:
        raise CorruptShard(f"{reader.uri}/{unlisted[0]}: no ledger lists it; {store_fix(reader)}")

    def one(rel: str) -> None:
        verify_store_file(reader, rel, entries[rel].bytes, entries[rel].xxh64)

    with ThreadPoolExecutor(max(1, min(threads, len(todo)))) as ex:
        for rel, _ in zip(todo, ex.map(one, todo), strict=True):
            done.add(rel)


def mixture_shard_problems(fs: AbstractFileSystem, root: str, shown: str, phases: Iterable[Any],
                           threads: int = 4, fix: str | None = None) -> list[str]:
    """Each shard a materialized mixture's manifest lists (`phases`: its PhaseManifest entries; `root` the folder on
    `fs`, `shown` as the user named it) checked against the manifest's size and xxh64: a message per shard that is
    missing or differs, in manifest order, ending with `fix` (default: delete and materialize again)."""
    if fix is None:
        fix = f"Delete {shown} and run `mixture materialize` again, or restore the folder."
    todo = [(f"phase={p.name}/{s.path}", s.bytes, s.xxh64) for p in phases for s in p.shards]

    def one(item: tuple[str, int, str]) -> str | None:
        rel, size, xxh64 = item
        try:
            check_file(fs, f"{root}/{rel}", size, xxh64, f"{shown}/{rel}", "its manifest.json", fix)
        except CorruptShard as exc:
            return str(exc)
        return None

    if not todo:
        return []
    with ThreadPoolExecutor(max(1, min(threads, len(todo)))) as ex:
        return [m for m in ex.map(one, todo) if m]


def verify_mixture_shards(fs: AbstractFileSystem, root: str, shown: str, phases: Iterable[Any]) -> None:
    """`mixture_shard_problems`, raising CorruptShard with the first (and how many more)."""
    problems = mixture_shard_problems(fs, root, shown, phases)
    if problems:
        more = f" ({len(problems) - 1} more shard(s) differ)" if len(problems) > 1 else ""
        raise CorruptShard(problems[0] + more)
