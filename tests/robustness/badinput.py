"""A small corpus with every kind of bad input planted, one source or file per case, and its spec."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard
from fsspec.implementations.local import LocalFileSystem

HUGE_CHARS = 50 * 2**20  # the 50 MB document
WORDS = ["river", "mountain", "engine", "theory", "garden", "market", "signal", "protocol", "harvest", "library", "canvas", "orbit", "ledger", "compiler", "voyage", "mineral", "lantern", "harbor", "cipher", "meadow", "thread", "kernel", "glacier", "festival", "archive", "beacon", "quarry", "violin", "summit", "tunnel", "orchard", "circuit"]


class DeniedFileSystem(LocalFileSystem):
    """A bucket whose objects can be listed but not read (an IAM policy without storage.objects.get)."""

    protocol = ("denied",)

    def _open(self, path, mode="rb", **kwargs):
        raise PermissionError(13, "Permission denied: the caller lacks storage.objects.get", path)


class UnlistableFileSystem(LocalFileSystem):
    """A bucket the caller may not even list."""

    protocol = ("nolist",)

    def ls(self, path, detail=False, **kwargs):
        raise PermissionError(13, "Permission denied: the caller lacks storage.objects.list", path)

    def isdir(self, path):
        self.ls(path)

    def exists(self, path, **kwargs):
        self.ls(path)

    def glob(self, path, **kwargs):
        self.ls(path)

    def find(self, path, **kwargs):
        self.ls(path)


def register_test_filesystems() -> None:
    fsspec.register_implementation("denied", DeniedFileSystem, clobber=True)
    fsspec.register_implementation("nolist", UnlistableFileSystem, clobber=True)


def sentence_text(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    sentences = [" ".join(words[i : i + 12]).capitalize() + "." for i in range(0, len(words), 12)]
    return " ".join(sentences)


def jsonl(records: list) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)


def write_bad_corpus(root: Path) -> dict:
    """Writes corpus/<source>/... and returns the ground truth: {case: expectation}."""
    rng = random.Random(6)
    c = root / "corpus"

    def put(rel: str, data: bytes) -> Path:
        p = c / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return p

    shared_text = sentence_text(rng, 60)
    good = [{"id": f"good-{i}", "text": sentence_text(rng, rng.randint(40, 160))} for i in range(60)]
    good += [{"id": "shared-1", "text": sentence_text(rng, 50)}, {"id": "shared-2", "text": shared_text},
             {"id": "twice", "text": sentence_text(rng, 50)}, {"id": "twice", "text": sentence_text(rng, 50)}]
    put("good/part-0.jsonl", jsonl(good))

    ok = lambda i, p: {"id": f"{p}-{i}", "text": sentence_text(rng, 40)}  # noqa: E731
    put("broken/malformed.jsonl", jsonl([ok(0, "m"), b'{"id": "m-1", "text": "an unterminated string', ok(2, "m")]))
    put("broken/utf8.jsonl", jsonl([ok(0, "u"), b'{"id": "u-1", "text": "caf\xe9 au lait, ' + b"x" * 60 + b'"}', ok(2, "u")]))
    put("broken/missing.jsonl", jsonl([{"id": "x-1", "body": sentence_text(rng, 30)}]))
    put("broken/wrongtype.jsonl", jsonl([{"id": "w-1", "text": 12345}, {"id": "w-2", "text": ["a", "list"]}]))
    put("broken/emptydoc.jsonl", jsonl([{"id": "e-1", "text": ""}, {"id": "e-2", "text": "  \n\t \r\n "}]))
    put("broken/empty.jsonl", b"")
    huge = " ".join(["lorem"] * (HUGE_CHARS // 6 + 1))[:HUGE_CHARS]
    put("broken/huge.jsonl", jsonl([{"id": "huge-1", "text": huge}, ok(1, "h")]))

    stream = jsonl([ok(i, "gz") for i in range(40)])
    gz = gzip.compress(stream)
    put("gz/truncated.jsonl.gz", gz[: len(gz) // 2])
    put("gz/notgzip.jsonl.gz", bytes(rng.randrange(256) for _ in range(300)))
    zc = zstandard.ZstdCompressor()
    frames = zc.compress(jsonl([ok(i, "zst") for i in range(20)])) + zc.compress(jsonl([ok(i, "zst") for i in range(20, 40)]))
    put("zst/truncated.jsonl.zst", frames[: len(frames) * 3 // 4])

    (c / "pq").mkdir(parents=True)
    pq.write_table(pa.table({"text": [sentence_text(rng, 50) for _ in range(20)]}), c / "pq" / "good.parquet")
    pq.write_table(pa.table({"body": ["a", "b", "c"], "n": [1, 2, 3]}), c / "pq" / "other_schema.parquet")
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), c / "pq" / "no_rows.parquet")
    put("pq/not_parquet.parquet", b"PAR1 this is not a parquet file")

    put("dup/part-0.jsonl", jsonl([{"id": "shared-1", "text": sentence_text(rng, 50)},
                                   {"id": "shared-2", "text": shared_text},
                                   {"id": "dup-own", "text": sentence_text(rng, 50)}]))
    put("denied/part-0.jsonl", jsonl([ok(i, "den") for i in range(3)]))
    return {"good_docs": len(good)}


def bad_spec(root: Path) -> dict:
    c = root / "corpus"
    return {
        "name": "bad-input",
        "seed": 0,
        "sources": [
            {"name": "good", "uri": str(c / "good"), "format": "jsonl", "id_field": "id"},
            {"name": "broken", "uri": str(c / "broken"), "format": "jsonl", "id_field": "id"},
            {"name": "gz", "uri": str(c / "gz"), "format": "jsonl.gz", "id_field": "id"},
            {"name": "zst", "uri": str(c / "zst"), "format": "jsonl.zst", "id_field": "id"},
            {"name": "pq", "uri": str(c / "pq"), "format": "parquet"},
            {"name": "dup", "uri": str(c / "dup"), "format": "jsonl", "id_field": "id"},
            {"name": "denied", "uri": f"denied://{c / 'denied'}", "format": "jsonl", "id_field": "id"},
        ],
        "processing": {"decontamination": {"enabled": False}},
        "partition": {"clusters": {"k": 2, "fine_k": 6, "min_share": 0.05, "embedding_dim": 8}},
        "store": {"uri": str(root / "store"), "samples_per_cell": 2, "exemplars_per_cell": 1},
        "execution": {"executor": "local", "tasks": 2, "workers": 1},  # in this process, two tasks
    }
