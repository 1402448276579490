"""Pins what pipelines/runtime/datatrove_compat.py takes from datatrove's private API (and loguru's and tqdm's): the pinned
version, the private methods' signatures and attributes, and the behaviour of datatrove's write path, task logger,
filters and stats that the module's classes are built on. A datatrove upgrade that breaks one of these fails here."""

from __future__ import annotations

import importlib.metadata
import inspect
import io
import json
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datatrove.data import Document
from datatrove.executor import LocalPipelineExecutor
from datatrove.executor.base import PipelineExecutor
from datatrove.executor.ray import RayPipelineExecutor
from datatrove.executor.slurm import SlurmPipelineExecutor, default_job_id_retriever
from datatrove.pipeline.filters.base_filter import BaseFilter, get_filter_result
from datatrove.pipeline.writers.disk_base import DiskWriter
from datatrove.pipeline.writers.jsonl import JsonlWriter
from datatrove.pipeline.writers.parquet import ParquetWriter
from datatrove.utils.logging import add_task_logger, logger
from datatrove.utils.stats import PipelineStats
from loguru._better_exceptions import ExceptionFormatter
from tqdm import tqdm

from mixture.pipelines.runtime import datatrove_compat as compat
from mixture.pipelines.writers import BoundedParquetWriter
from tests.conftest import REPO

SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()), ("group", pa.string())])


def _params(fn) -> str:
    """A callable's signature without annotations: names, kinds and defaults."""
    sig = inspect.signature(fn)
    return str(sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()],
                           return_annotation=inspect.Signature.empty))


def test_the_pinned_datatrove_version():
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"datatrove[io,processing]=={compat.DATATROVE_VERSION}" in deps
    assert importlib.metadata.version("datatrove") == compat.DATATROVE_VERSION


@pytest.mark.parametrize(("fn", "params"), [
    # the write path ParquetWriterBase redoes and calls
    (DiskWriter.write, "(self, document, rank=0, **kwargs)"),
    (DiskWriter._get_output_filename, "(self, document, rank=0, **kwargs)"),
    (DiskWriter._get_filename_with_file_id, "(self, filename)"),
    (DiskWriter._get_output_file_with_retry, "(self, output_filename)"),
    (DiskWriter._on_file_switch, "(self, _original_name, old_filename, _new_filename)"),
    (ParquetWriter._write, "(self, document, file_handler, filename)"),
    (ParquetWriter._write_batch, "(self, filename)"),
    (ParquetWriter.close_file, "(self, filename)"),
    (ParquetWriter.close, "(self)"),
    # the executors' per-task entry point (TaskSetup, LocalExecutor) and what the build calls
    (PipelineExecutor._run_for_rank, "(self, rank, local_rank=0, node_rank=-1)"),
    (RayPipelineExecutor._run_for_rank, "(self, rank, local_rank=0, node_rank=-1)"),
    (PipelineExecutor.get_incomplete_ranks, "(self, ranks=None, skip_completed=None)"),
    (SlurmPipelineExecutor.launch_job, "(self)"),
    (SlurmPipelineExecutor.launch_merge_stats, "(self)"),
    (SlurmPipelineExecutor.get_sbatch_args, "(self, max_array=1)"),
    (default_job_id_retriever, "(process_output, job_id_position)"),
    (add_task_logger, "(logging_dir, rank, local_rank=0, node_rank=-1)"),
    # filters
    (BaseFilter.__init__, "(self, exclusion_writer=None, batch_size=1)"),
    (get_filter_result, "(res)"),
    # loguru and tqdm
    (ExceptionFormatter._get_lib_dirs, "()"),
], ids=lambda x: getattr(x, "__qualname__", None))
def test_private_signatures(fn, params):
    assert _params(fn) == params


def test_private_attributes(tmp_path):
    w = ParquetWriter(str(tmp_path), schema=SCHEMA)
    assert w._writers == {} and isinstance(w._batches, defaultdict) and w._batches.default_factory is list
    assert isinstance(w.file_id_counter, Counter)
    assert isinstance(inspect.getattr_static(ExceptionFormatter, "_get_lib_dirs"), staticmethod)
    assert "disable" in inspect.signature(tqdm.__init__).parameters
    recorder = compat.JobIdRecorder()
    ex = SlurmPipelineExecutor([], tasks=1, time=None, partition=None, sbatch_args={"account": "x"},
                               job_id_retriever=recorder, logging_dir=str(tmp_path / "logs"))
    assert ex._sbatch_args == {"account": "x"} and ex.job_id_retriever is recorder and ex.depends_job_id is None
    assert LocalPipelineExecutor([], tasks=3, logging_dir=str(tmp_path / "l")).local_tasks == 3


def _docs(n: int) -> list[Document]:
    return [Document(text=f"document {i} " + "x" * (i * 37 % 200), id=f"d{i}", metadata={"group": "ab"[i % 2]})
            for i in range(n)]


def _row(self, doc: Document) -> dict:
    return {"id": doc.id, "text": doc.text, "group": doc.metadata["group"]}


class SpyWriter(ParquetWriter):
    """datatrove's own ParquetWriter, recording the private calls ParquetWriterBase's overrides stand in for."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[tuple] = []

    def _write(self, document, file_handler, filename):
        self.calls.append(("_write", filename))
        return super()._write(document, file_handler, filename)

    def _write_batch(self, filename):
        self.calls.append(("_write_batch", filename, len(self._batches[filename]), filename in self._writers))
        return super()._write_batch(filename)

    def _on_file_switch(self, original_name, old_filename, new_filename):
        self.calls.append(("_on_file_switch", original_name, old_filename, new_filename))
        return super()._on_file_switch(original_name, old_filename, new_filename)


A, B = "a/part-00003.parquet", "b/part-00003.parquet"
WRITE_PATHS = {
    # batches of 2 fill and are written; the rest at close
    5000: [("_write", A), ("_write", B), ("_write", A), ("_write_batch", f"a/000_{A[2:]}", 2, True), ("_write", B),
           ("_write_batch", f"b/000_{B[2:]}", 2, True), ("_write", A), ("_write", B),
           ("_write_batch", f"a/000_{A[2:]}", 1, True), ("_write_batch", f"b/000_{B[2:]}", 1, True)],
    # every file is full after one row (pyarrow wrote the magic bytes): each write switches files first
    1: [("_write", A), ("_write", B),
        ("_on_file_switch", A, f"a/000_{A[2:]}", f"a/001_{A[2:]}"), ("_write_batch", f"a/000_{A[2:]}", 1, True),
        ("_write", A),
        ("_on_file_switch", B, f"b/000_{B[2:]}", f"b/001_{B[2:]}"), ("_write_batch", f"b/000_{B[2:]}", 1, True),
        ("_write", B),
        ("_on_file_switch", A, f"a/001_{A[2:]}", f"a/002_{A[2:]}"), ("_write_batch", f"a/001_{A[2:]}", 1, True),
        ("_write", A),
        ("_on_file_switch", B, f"b/001_{B[2:]}", f"b/002_{B[2:]}"), ("_write_batch", f"b/001_{B[2:]}", 1, True),
        ("_write", B),
        ("_write_batch", f"a/002_{A[2:]}", 1, True), ("_write_batch", f"b/002_{B[2:]}", 1, True)],
}


@pytest.mark.parametrize("max_file_size", sorted(WRITE_PATHS))
def test_datatrove_write_path_calls_as_our_writer_assumes(tmp_path, max_file_size):
    """`_write(row, file, original name)`; `_write_batch(name with file id)` when a batch is full, and from
    close_file (at a file switch and at close) while the file's pyarrow writer is still open; a full file switches
    through `_on_file_switch(original, old, new)` before the row is written."""
    w = SpyWriter(str(tmp_path), "${group}/part-${rank}.parquet", adapter=_row, schema=SCHEMA, batch_size=2,
                  max_file_size=max_file_size, use_content_defined_chunking=False)
    with w:
        for doc in _docs(6):
            w.write(doc, rank=3)
    assert w.calls == WRITE_PATHS[max_file_size]


def _stats(step) -> dict:
    return {k: v.total for k, v in step.stats.stats.items() if not k.startswith("doc_len")}


def _files(root: Path) -> dict[str, list[dict]]:
    return {str(p.relative_to(root)): pq.read_table(p).to_pylist() for p in sorted(root.rglob("*.parquet"))}


@pytest.mark.parametrize("writer", [compat.ParquetWriterBase, BoundedParquetWriter])
@pytest.mark.parametrize("max_file_size", [-1, 1, 1200])
def test_our_writers_write_what_datatrove_writes(tmp_path, writer, max_file_size):
    """Same files (names, rotation), same rows, same counts in the stats as datatrove's ParquetWriter."""
    docs = _docs(100)
    outputs = {}
    for name, cls in (("datatrove", ParquetWriter), ("ours", writer)):
        w = cls(str(tmp_path / name), "${group}/part-${rank}.parquet", adapter=_row, schema=SCHEMA, batch_size=4,
                max_file_size=max_file_size, use_content_defined_chunking=False)
        list(w.run(iter(docs), rank=1))
        outputs[name] = (_files(tmp_path / name), _stats(w))
    assert outputs["ours"] == outputs["datatrove"]
    files, stats = outputs["ours"]
    assert sum(map(len, files.values())) == 100 and stats["total"] == 100 and stats["a/part-XXXXX.parquet"] == 50
    assert len(files) > 2 if max_file_size > 0 else len(files) == 2


def test_the_bounded_writer_measures_what_it_wrote(tmp_path):
    """`facts` of every file, taken when datatrove's close_file has written its footer."""
    import xxhash

    w = BoundedParquetWriter(str(tmp_path), "${group}/part-${rank}.parquet", adapter=_row, schema=SCHEMA,
                             batch_size=4, max_file_size=1200, measure=True, use_content_defined_chunking=False)
    list(w.run(iter(_docs(100)), rank=0))
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.parquet"))
    assert sorted(w.facts) == files and len(files) > 2
    for name, facts in w.facts.items():
        data = (tmp_path / name).read_bytes()
        assert facts == {"rows": pq.read_metadata(tmp_path / name).num_rows, "tokens": 0, "bytes": len(data),
                         "xxh64": xxhash.xxh64_hexdigest(data)}


@pytest.mark.parametrize("held", [None, 0, 3000])  # every file's batches in memory, every file spooled, a small budget
@pytest.mark.parametrize("max_file_size", [-1, 1200])
def test_the_spooled_writer_writes_the_same_rows_in_fewer_row_groups(tmp_path, max_file_size, held, monkeypatch):
    """With `spool`, a file's batches wait (in memory within the writer's budget, else in a local stream) and the
    file is written at close: the same files and rows as the unspooled writer without rotation (rotation goes by
    the waiting batches' size: every row still in one file in order), row groups regrouped by size, the facts of
    what was written, the spool folder removed, nothing left counted as held."""
    import xxhash

    from mixture.pipelines import spooled_parquet

    if held is not None:
        monkeypatch.setattr(spooled_parquet, "HELD_BYTES", held)
    spooled: list[spooled_parquet.SpooledParquet] = []
    monkeypatch.setattr(spooled_parquet.SpooledParquet, "_spool", lambda self, f=spooled_parquet.SpooledParquet._spool:
                        (spooled.append(self), f(self))[1])
    docs = _docs(100)
    plain = BoundedParquetWriter(str(tmp_path / "plain"), "${group}/part-${rank}.parquet", adapter=_row,
                                 schema=SCHEMA, batch_size=4, max_file_size=-1, use_content_defined_chunking=False)
    list(plain.run(iter(docs), rank=1))
    monkeypatch.setattr(spooled_parquet, "ROW_GROUP_BYTES", 2000)
    w = BoundedParquetWriter(str(tmp_path / "spooled"), "${group}/part-${rank}.parquet", adapter=_row, schema=SCHEMA,
                             batch_size=4, max_file_size=max_file_size, measure=True, spool=True,
                             use_content_defined_chunking=False)
    list(w.run(iter(docs), rank=1))
    files = _files(tmp_path / "spooled")
    if max_file_size < 0:
        assert files == _files(tmp_path / "plain")
    else:
        assert len(files) > 2
        for group in ("a", "b"):
            rows = [r for name in sorted(files) if name.startswith(group) for r in files[name]]
            assert rows == _files(tmp_path / "plain")[f"{group}/part-00001.parquet"]
    for name, facts in w.facts.items():
        data = (tmp_path / "spooled" / name).read_bytes()
        meta = pq.read_metadata(tmp_path / "spooled" / name)
        assert facts == {"rows": meta.num_rows, "tokens": 0, "bytes": len(data), "xxh64": xxhash.xxh64_hexdigest(data)}
        assert meta.num_row_groups == 1 or meta.num_row_groups < -(-meta.num_rows // 4)  # fewer than the batches
    assert sorted(w.facts) == sorted(files) and w._spool_dir is None
    assert w._held.used == 0
    assert len(spooled) == {None: 0, 0: len(files)}.get(held, len(spooled)) and (held != 3000 or spooled)
    if max_file_size < 0 and held is not None:  # the same bytes whichever way the batches waited
        unspooled = tmp_path / "held"
        monkeypatch.setattr(spooled_parquet, "HELD_BYTES", 1 << 30)
        again = BoundedParquetWriter(str(unspooled), "${group}/part-${rank}.parquet", adapter=_row, schema=SCHEMA,
                                     batch_size=4, max_file_size=-1, spool=True, use_content_defined_chunking=False)
        list(again.run(iter(docs), rank=1))
        for name in files:
            assert (unspooled / name).read_bytes() == (tmp_path / "spooled" / name).read_bytes()


def test_a_spooled_file_without_rows_is_a_valid_empty_file(tmp_path):
    from mixture.pipelines.spooled_parquet import SpooledParquet

    with open(tmp_path / "empty.parquet", "wb") as sink:
        spooled = SpooledParquet(sink, SCHEMA, str(tmp_path))
        spooled.close()
        spooled.close()  # a second close does nothing
    assert pq.read_table(tmp_path / "empty.parquet").schema.equals(SCHEMA)
    assert [p.name for p in tmp_path.iterdir()] == ["empty.parquet"]  # the spool is gone


class _Odd:
    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return (False, "odd") if int(doc.id[1:]) % 2 else True


class DatatroveOdd(_Odd, BaseFilter):
    name = "odd"


class CountedOdd(_Odd, compat.CountedFilter):
    name = "odd"


def test_counted_filter_counts_and_excludes_like_base_filter(tmp_path):
    out = {}
    for name, cls in (("datatrove", DatatroveOdd), ("ours", CountedOdd)):
        f = cls(exclusion_writer=JsonlWriter(str(tmp_path / name), compression=None))
        kept = [d.id for d in f.run(iter(_docs(9)), rank=0)]
        excluded = [json.loads(line) for line in (tmp_path / name / "00000.jsonl").read_text().splitlines()]
        out[name] = kept, [(e["id"], e["metadata"]["filter_reason"]) for e in excluded], _stats(f)
    assert out["ours"] == out["datatrove"]
    assert out["ours"][2] == {"total": 9, "forwarded": 5, "dropped": 4, "dropped_odd": 4}


def test_a_failed_task_raises_when_the_stats_are_summed():
    """datatrove's PipelineStats.__add__ reads `.stats` of each task's result."""
    with pytest.raises(compat.ExecutorError, match="task 3 failed: OSError: disk full"):
        sum([PipelineStats(), compat.FailedTask(3, "OSError: disk full")], start=PipelineStats())


def _log_and_fail_on_rank_0(data, rank: int, world_size: int):
    logger.info(f"task {rank} says hello")
    if rank == 0:
        raise OSError("disk full")
    return data


def test_local_tasks_log_to_their_files_only_and_one_failure_stops_no_other(tmp_path, capfd):
    """datatrove's task logger (local_rank ≠ 0: ERROR to the console) and our console handler put back after."""
    compat.quiet_datatrove_console()
    ex = compat.LocalExecutor([_log_and_fail_on_rank_0], tasks=2, workers=1, logging_dir=str(tmp_path))
    with pytest.raises(compat.ExecutorError, match="task 0 failed: OSError: disk full"):
        ex.run()
    assert ex.get_incomplete_ranks() == [0]
    assert "task 1 says hello" in (tmp_path / "logs" / "task_00001.log").read_text()
    logger.warning("after the stage")
    err = capfd.readouterr().err
    assert "says hello" not in err and "WARNING after the stage" in err
    # the failure: one line on the console, its traceback in the task's log only
    assert [line for line in err.splitlines() if "disk full" in line] == [
        "ERROR disk full (more in the task log)"], err
    assert "Traceback" not in err and "Traceback" in (tmp_path / "logs" / "task_00000.log").read_text()


def _yields_then_closes_on_a_full_disk(data, rank: int, world_size: int):
    try:
        for i in range(3):
            yield Document(text="x", id=str(i))
    finally:  # a writer's close on a full disk, run when the failed task's generator is collected
        raise OSError(28, "No space left on device")


def _fails_on_a_full_disk(data, rank: int, world_size: int):
    for _ in data:
        raise OSError(28, "No space left on device")
    yield


def test_a_full_disk_under_the_task_log_prints_one_line(tmp_path, capfd):
    """The disk that fills holds the task log too: loguru printed ~45 lines per record it could not write
    ("Logging error in Loguru Handler"), and the failed task's generator, closed when collected, printed
    "Exception ignored in" and a traceback. Now: one line for the failure, nothing else."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "task_00000.log").symlink_to("/dev/full")  # every write: ENOSPC
    compat.quiet_datatrove_console()
    ex = compat.LocalExecutor([_yields_then_closes_on_a_full_disk, _fails_on_a_full_disk], tasks=1, workers=1,
                              logging_dir=str(tmp_path))
    with pytest.raises(compat.ExecutorError, match="task 0 failed: OSError: .*No space left on device"):
        ex.run()
    err = capfd.readouterr().err
    assert err.splitlines() == ["ERROR [Errno 28] No space left on device (more in the task log)"], err


def test_silence_tqdm_and_the_cached_lib_dirs():
    before = ExceptionFormatter._get_lib_dirs()
    compat.cache_loguru_lib_dirs()
    compat.cache_loguru_lib_dirs()  # once only
    assert ExceptionFormatter._get_lib_dirs() == before and hasattr(ExceptionFormatter._get_lib_dirs, "cache_info")
    with compat.silence_tqdm():
        assert tqdm(range(3), file=io.StringIO()).disable
    assert not tqdm(range(3), file=io.StringIO()).disable
