"""Everything the build takes from datatrove's private API (and loguru's and tqdm's), in one module: the file to
check when datatrove is upgraded. tests/runtime/test_datatrove_compat.py pins what it relies on.

The rest of pipelines/ uses datatrove's public API only (PipelineStep, Document, stat_update, the executors'
constructors, `run` and `get_incomplete_ranks`) and the classes below."""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import os
import signal
import sys
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import multiprocess
from datatrove.data import Document, DocumentsPipeline
from datatrove.executor import LocalPipelineExecutor
from datatrove.executor.slurm import SlurmPipelineExecutor, default_job_id_retriever
from datatrove.pipeline.filters.base_filter import BaseFilter, get_filter_result
from datatrove.pipeline.writers.parquet import ParquetWriter
from datatrove.utils.logging import logger
from datatrove.utils.stats import PipelineStats
from datatrove.utils.typeshelper import StatHints

from mixture.pipelines.runtime import shared_workers
from mixture.pipelines.runtime.memory import configure_memory
from mixture.pipelines.runtime.preload import preload
from mixture.pipelines.runtime.scratch import scratch_root
from mixture.pipelines.runtime.task_usage import record_usage
from mixture.pipelines.runtime.threads import task_threads

DATATROVE_VERSION = "0.10.1"  # the version pyproject pins and the tests check this module against


class ExecutorError(RuntimeError):
    """A stage's executor could not finish it. `stage`: the stage that failed when it is not the one the build was
    running (a Slurm chain fails at its barrier, naming an earlier stage); `logs`: that stage's log folders that exist."""

    def __init__(self, message: str, stage: str | None = None, logs: list[str] | None = None):
        super().__init__(message)
        self.stage, self.logs = stage, None if logs is None else list(logs)  # None: the message names no logs


# ------------------------------------------------------------------------------------------- console: tqdm, loguru


@contextlib.contextmanager
def silence_tqdm() -> Iterator[None]:
    """datatrove's per-task tqdm bars off while a stage runs (the build draws one bar per stage).

    Worker processes read TQDM_DISABLE when they import tqdm; tasks run in this process need `tqdm.__init__`
    patched (tqdm has no switch for bars already imported)."""
    from tqdm import tqdm

    os.environ["TQDM_DISABLE"] = "1"
    original = tqdm.__init__
    tqdm.__init__ = functools.partialmethod(original, disable=True)
    try:
        yield
    finally:
        tqdm.__init__ = original
        os.environ.pop("TQDM_DISABLE", None)


def quiet_datatrove_console(level: str = "WARNING") -> None:
    """datatrove logs every step to the console; keep warnings there (full logs stay in _build/<stage>/logs).

    Called again after each task: datatrove's task logger (`add_task_logger`) removes every loguru handler."""
    logger.remove()
    logger.add(sys.stderr, level=level, format=console_line)
    cache_loguru_lib_dirs()


def console_line(record: dict) -> str:
    """One line per record on the console: the level and the message's first line; a traceback (a failed task's)
    stays in the task's log file, where datatrove's own handler writes it in full."""
    lines = str(record["message"]).splitlines() or [""]
    more = " (more in the task log)" if len(lines) > 1 or record["exception"] is not None else ""
    text = (lines[0][:400] + more).replace("{", "{{").replace("}", "}}").replace("<", "\\<")
    return f"<level>{{level}}</level> {text}\n"


@contextlib.contextmanager
def one_line_task_console() -> Iterator[None]:
    """While a local task runs: datatrove's task logger (`add_task_logger`, looked up in datatrove.executor.base)
    writes the task's log file as it does, but the console gets `console_line` at ERROR instead of every record
    with its traceback (a failed task printed hundreds of lines before the build's one-line message)."""
    import datatrove.executor.base as base
    from datatrove.utils.logging import DATATROVE_COLORIZE_LOG_FILES

    original = base.add_task_logger

    def add_task_logger(logging_dir, rank: int, local_rank: int = 0, node_rank: int = -1):
        # datatrove's own, but for the handlers: its file handler would print loguru's "Logging error" on a full disk
        logger.remove()
        logfile = logging_dir.open(f"logs/task_{rank:05d}.log", "w")
        prefix = f"[NODE {node_rank}] " if node_rank != -1 else ""
        logger.add(log_file_sink(logfile), colorize=DATATROVE_COLORIZE_LOG_FILES, level="DEBUG",
                   format=f"{prefix}{{time:YYYY-MM-DD HH:mm:ss.SSS}} | <level>{{level: <8}}</level> | "
                          "{name}:{function}:{line} - <level>{message}</level>")
        logger.add(sys.stderr, level="ERROR", format=console_line)
        logger.info(f"Launching pipeline for {rank=}")
        return logfile

    base.add_task_logger = add_task_logger
    try:
        yield
    finally:
        base.add_task_logger = original


@contextlib.contextmanager
def unraisable_to_log(logging_dir, rank: int) -> Iterator[None]:
    """Errors Python cannot raise (a writer closed on a full disk by a failed task's generator, when it is collected)
    appended to the task's log, not printed on the console as "Exception ignored in" with a traceback."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        text = "".join(traceback.format_exception(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback))
        with contextlib.suppress(OSError, ValueError), logging_dir.open(f"logs/task_{rank:05d}.log", "a") as f:
            f.write(f"ignored in {unraisable.object!r}:\n{text}")

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def log_file_sink(logfile) -> Callable[[str], None]:
    """A task's log file as a loguru sink that drops what cannot be written: on a full disk loguru printed ~45
    lines per record ("Logging error in Loguru Handler") before the build's one-line message."""

    def write(message: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # ENOSPC, EIO; ValueError: the file is closed
            logfile.write(message)
            logfile.flush()

    return write


def cache_loguru_lib_dirs() -> None:
    """datatrove adds two loguru handlers per task; each builds an exception formatter that asks sysconfig for
    ~70 library paths (~20 ms). Computing them once per process (loguru's private
    `ExceptionFormatter._get_lib_dirs`, a staticmethod without arguments) takes that off every task."""
    from loguru._better_exceptions import ExceptionFormatter

    if not hasattr(ExceptionFormatter._get_lib_dirs, "cache_info"):
        ExceptionFormatter._get_lib_dirs = staticmethod(functools.cache(ExceptionFormatter._get_lib_dirs))


# ---------------------------------------------------------------------------------------------------- filters


class CountedFilter(BaseFilter):
    """datatrove's `BaseFilter.run` (one document at a time) that adds its counts (total, forwarded, dropped,
    dropped_<reason>) to the stats once per task rather than four stats updates per document; dropped documents go
    to `exclusion_writer` with `filter_reason` set, as datatrove's."""

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        counts: Counter = Counter()
        with self.exclusion_writer if self.exclusion_writer else contextlib.nullcontext() as writer:
            try:
                for doc in data:
                    counts[StatHints.total] += 1
                    keep, reason = get_filter_result(self.filter(doc))
                    if keep:
                        counts[StatHints.forwarded] += 1
                        yield doc
                        continue
                    counts[StatHints.dropped] += 1
                    if reason:
                        counts[f"dropped_{reason}"] += 1
                    if writer:
                        if reason:
                            doc.metadata["filter_reason"] = reason
                        writer.write(doc, rank)
            finally:
                for label, n in counts.items():
                    self.stat_update(label, value=n)


# ----------------------------------------------------------------------------------------------------- writers


class ParquetWriterBase(ParquetWriter):
    """datatrove's ParquetWriter with its private write path redone: `write` fills the file name template once per
    file rather than twice per document (same names, same switch to a new file at max_file_size, same counts in the
    stats, added once per file name at close); `_write` / `_write_batch` / `close_file` call hooks that subclasses
    fill in:

    - `open_parquet(name, file)`: the pyarrow writer of a new output file;
    - `row_buffered(name, row)`: a row is about to join its file's pending batch;
    - `rows_buffered()`: after each row (a full batch is written by then); `flush(name)` writes a pending batch;
    - `batch_flushed(name)`: a file's pending batch was written (or there was none);
    - `record_batch(rows)`: the rows of a batch as a pyarrow RecordBatch;
    - `file_bytes(name)`: what an output file holds so far, against `max_file_size`;
    - `file_closed(name)`: a file's footer is written, the file is complete."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # ours, not datatrove's:
        self._fields = [f for f in self.output_filename.get_identifiers() if f != "rank"]  # metadata in the name
        self._names: dict[tuple, tuple[str, str]] = {}  # those fields' values -> (file name, its stats label)
        self._written: Counter = Counter()  # documents per stats label, added to the stats at close
        self._with_id: dict[tuple[str, int], str] = {}  # (file name, file id) -> the name with its id

    def _get_filename_with_file_id(self, filename: str) -> str:
        """datatrove's name with the file id, made once per (name, id): it was asked for every document."""
        key = (filename, self.file_id_counter[filename])
        name = self._with_id.get(key)
        if name is None:
            name = self._with_id[key] = super()._get_filename_with_file_id(filename)
        return name

    # ---- hooks
    def open_parquet(self, name: str, file_handler):
        import pyarrow.parquet as pq

        return pq.ParquetWriter(file_handler, schema=self.schema, compression=self.compression,
                                use_content_defined_chunking=self.use_content_defined_chunking,
                                write_page_index=self.write_page_index)

    def row_buffered(self, name: str, row: dict) -> None:
        pass

    def rows_buffered(self) -> None:
        pass

    def batch_flushed(self, name: str) -> None:
        pass

    def record_batch(self, rows: list[dict]):
        import pyarrow as pa

        return pa.RecordBatch.from_pylist(rows, schema=self.schema)

    def file_closed(self, name: str) -> None:
        pass

    def file_bytes(self, name: str) -> int:
        """How much output file `name` holds so far, against `max_file_size` (its bytes written)."""
        return self._get_output_file_with_retry(name).tell()

    def flush(self, name: str) -> None:
        """Write the pending batch of output file `name` (a name with its file id when files rotate)."""
        self._write_batch(name)

    # ---- datatrove's write path
    def write(self, document: Document, rank: int = 0, **kwargs):
        """datatrove's `DiskWriter.write`, the file name of each (rank, name fields) filled once."""
        if kwargs:
            return super().write(document, rank, **kwargs)
        key = (rank, *map(document.metadata.get, self._fields))
        if key not in self._names:
            self._names[key] = (self._get_output_filename(document, rank), self._get_output_filename(document, "XXXXX"))
        original, label = self._names[key]
        output = original
        if self.max_file_size > 0:
            output = self._get_filename_with_file_id(original)
            if self.file_bytes(output) >= self.max_file_size:
                self.file_id_counter[original] += 1
                new_output = self._get_filename_with_file_id(original)
                self._on_file_switch(original, output, new_output)
                output = new_output
        self._write(self.adapter(document), self._get_output_file_with_retry(output), original, output)
        self._written[label] += 1

    def run(self, data, rank: int = 0, world_size: int = 1):
        with self:
            for document in data:
                self.write(document, rank)
                yield document

    def close(self):
        for label, n in self._written.items():
            self.stat_update(label, value=n)
        if self._written:
            self.stat_update(StatHints.total, value=sum(self._written.values()))
        self._written.clear()
        super().close()

    def _write(self, document: dict, file_handler, filename: str, name: str | None = None):
        """datatrove calls `_write(row, file, original name)`; `write` above passes the name with its file id too."""
        if name is None:
            name = self._get_filename_with_file_id(filename) if self.max_file_size > 0 else filename
        if name not in self._writers:
            self._writers[name] = self.open_parquet(name, file_handler)
        self.row_buffered(name, document)
        batch = self._batches[name]
        batch.append(document)
        if len(batch) == self.batch_size:
            self._write_batch(name)
        self.rows_buffered()

    def _write_batch(self, filename: str):
        rows = self._batches.pop(filename, None)
        self.batch_flushed(filename)
        if rows:
            self._writers[filename].write_batch(self.record_batch(rows))

    def close_file(self, filename: str):
        """datatrove's ParquetWriter.close_file writes the pending batch (`_write_batch`), closes the pyarrow writer
        and then the file; `filename` may lack the file id, which datatrove adds as below."""
        name = self._get_filename_with_file_id(filename) if self.max_file_size > 0 and filename not in self._writers \
            else filename
        super().close_file(filename)
        self.file_closed(name)


# --------------------------------------------------------------------------------------------------- executors


class TaskSetup:
    """Mixin for datatrove's executors: every task runs through their private `_run_for_rank(rank, local_rank,
    node_rank)`; around it, the task's memory settings, native thread pools sized to its `cpus_per_task` and its
    usage record (pipelines/runtime/task_usage.py)."""

    def _run_for_rank(self, rank: int, local_rank: int = 0, node_rank: int = -1):
        configure_memory()
        with task_threads(self.cpus_per_task):
            run = functools.partial(super()._run_for_rank, rank, local_rank, node_rank)
            return record_usage(self.logging_dir, rank, run)


@dataclass
class FailedTask:
    """What a failed local task hands back instead of raising, so that the stage's other tasks run to the end (a
    rerun then redoes only the failed ones). datatrove sums every task's stats once all have ended
    (`PipelineStats.__add__` reads `.stats` of each); reading `stats` here raises the first failure."""

    rank: int
    error: str

    @property
    def stats(self):
        raise ExecutorError(f"task {self.rank} failed: {self.error}")


class LocalExecutor(LocalPipelineExecutor):
    """datatrove's local executor: task logs go to _build/<stage>/logs only, the console keeps errors (the build
    shows progress bars); a failed task does not stop the others (see FailedTask). With a `worker_group`, inside a
    shared_workers scope, its tasks run on the pool that the group's stages share."""

    def __init__(self, *args, worker_group: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.worker_group = worker_group

    def _run_for_rank(self, rank: int, local_rank: int = 0, node_rank: int = -1):
        configure_memory()
        try:
            with task_threads(1), one_line_task_console():  # a local worker is one core
                # datatrove logs a task to the console at INFO only when its local_rank is 0: never here
                run = functools.partial(super()._run_for_rank, rank, local_rank + 1, node_rank)
                return record_usage(self.logging_dir, rank, run)
        finally:
            quiet_datatrove_console()

    def run_task(self, rank: int):
        with unraisable_to_log(self.logging_dir, rank):
            try:
                return self._run_for_rank(rank)
            except Exception as exc:  # noqa: BLE001 - reported once every task has ended
                failed = FailedTask(rank, f"{type(exc).__name__}: {exc}")
            gc.collect()  # the failed task's generators are closed now, while their errors go to its log
            return failed

    def _ranked_task(self, rank: int) -> tuple[int, object]:
        return rank, self.run_task(rank)

    def _fork_pool(self, size: int):
        """A pool of `size` workers forked from this driver once it loaded what they would each load."""
        preload(self.pipeline)  # inherited by the workers instead of loaded by each
        scratch_root()  # the workers' scratch folders inside the driver's, removed at its exit
        with sigint_held() as held:  # Ctrl-C reaches the whole process group: only this driver answers
            pool = multiprocess.get_context(self.start_method).Pool(size, initializer=pool_worker_setup)
        if held:
            pool.terminate()
            raise KeyboardInterrupt
        return pool

    def _run_on_pool(self, ranks: list[int]) -> list:
        """Each rank's result, on the group's shared pool or on a pool of this stage's own."""
        scope, size = shared_workers.current(), min(self.workers, len(ranks))
        if scope is None or self.worker_group is None:
            with self._fork_pool(size) as pool:  # left on Ctrl-C: its workers are terminated
                return results_while_workers_live(pool, self._ranked_task, ranks)
        pool = scope.get((self.worker_group, self.start_method), size, self._fork_pool)
        try:
            return results_while_workers_live(pool, self._ranked_task, ranks)
        except BaseException:
            scope.discard()
            raise

    def run(self):
        """datatrove's local run without its multiprocess Manager: a server process started and stopped per
        stage (~50 ms each) only to hand out the local ranks that choose which task logs to the console, and
        these tasks never do."""
        ranks = self.get_incomplete_ranks(range(self.local_rank_offset, self.local_rank_offset + self.local_tasks))
        if not ranks:
            return PipelineStats()
        self.save_executor_as_json()
        shared_workers.end_other_groups(self.worker_group)  # their workers go before this stage's run
        try:
            with silence_tqdm():
                if self.workers == 1:
                    pipeline, stats = self.pipeline, []
                    for rank in ranks:
                        self.pipeline = copy.deepcopy(pipeline)  # every task starts from unused steps
                        stats.append(self.run_task(rank))
                    self.pipeline = pipeline
                else:
                    stats = self._run_on_pool(ranks)
        finally:
            quiet_datatrove_console()
        merged = sum(stats, start=PipelineStats())  # a FailedTask raises here, once every task has ended
        with self.logging_dir.open("stats.json", "wt") as f:
            merged.save_to_disk(f)
        return merged


def ignore_sigint() -> None:
    """A pool worker ignores SIGINT: a Ctrl-C at the terminal goes to every process of the group, and a worker's
    KeyboardInterrupt would print its traceback; the driver stops the pool instead."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def pool_worker_setup() -> None:
    """A forked pool worker ignores SIGINT (ignore_sigint) and freezes what it inherited from the driver: a
    collection in the worker (run_task collects a failed task's generators) would otherwise also collect the
    driver's garbage cycles, whose finalizers (a Ray client's, an event loop's) may not survive a fork and
    crashed the worker (SIGSEGV in gc.collect, seen in the test suite)."""
    ignore_sigint()
    gc.freeze()


WORKER_POLL_S = 1.0  # how often the driver checks that no pool worker died while it waits for the next result


def results_while_workers_live(pool, task: Callable[[int], tuple[int, object]], ranks: list[int]) -> list:
    """Each rank's result of `task` (rank -> (rank, result)) run on `pool`, or ExecutorError as soon as a worker
    process died: a pool replaces a dead worker but never hands back the task it ran, so waiting would hang the
    stage forever (the out-of-memory killer, a crash in a native library, a kill by hand). The tasks that finished
    keep their completion markers, so a rerun redoes only the others."""
    seen: dict[int, object] = {}  # pid -> worker process, every worker the pool has had
    results: dict[int, object] = {}
    pending = pool.imap_unordered(task, ranks)
    while len(results) < len(ranks):
        seen.update((p.pid, p) for p in pool._pool)
        try:
            rank, result = pending.next(timeout=WORKER_POLL_S)
        except multiprocess.TimeoutError:
            dead = [p for p in seen.values() if p.exitcode is not None]
            if dead:
                code = dead[0].exitcode
                how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
                unfinished = [r for r in ranks if r not in results]
                hint = ": most often the kernel's out-of-memory killer" if code == -signal.SIGKILL else ""
                raise ExecutorError(
                    f"a worker process died ({how}{hint}) while {_ranks_text(unfinished)} had not finished; the "
                    "finished tasks are kept: rerun the same command to redo the others") from None
            continue
        results[rank] = result
    return [results[r] for r in ranks]


def _ranks_text(ranks: list[int], shown: int = 10) -> str:
    """'task 3', or 'tasks 1, 2' with at most `shown` numbers ('and 5 more')."""
    text = ("task " if len(ranks) == 1 else "tasks ") + ", ".join(map(str, ranks[:shown]))
    return text + (f" and {len(ranks) - shown} more" if len(ranks) > shown else "")


@contextlib.contextmanager
def sigint_held() -> Iterator[list[int]]:
    """SIGINT held back while the pool's workers are forked (a worker forked meanwhile inherits the holding handler
    until its initializer ignores SIGINT); the list it yields holds a Ctrl-C that came meanwhile, for the caller
    to raise once the pool is in its `with`. Only the main thread may set a signal handler: elsewhere the list
    stays empty."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)


class JobIdRecorder:
    """Job id retriever for datatrove's `sbatch` calls that also remembers every id, in submission order."""

    def __init__(self):
        self.ids: list[str] = []

    def __call__(self, output: str) -> str:
        job_id = default_job_id_retriever(output, -1)
        self.ids.append(job_id)
        return job_id


class SlurmArrays(TaskSetup, SlurmPipelineExecutor):
    """datatrove's Slurm executor as the build submits it: `submit(after)` runs datatrove's `launch_job` (one job
    array per `max_array_size` elements, then the `merge_stats` job) and returns the job ids, split into arrays and
    helpers. Needs `job_id_retriever=JobIdRecorder()`."""

    job_id_retriever: JobIdRecorder

    @property
    def extra_sbatch_args(self) -> dict:
        """The `sbatch_args` given to the constructor (datatrove keeps them private)."""
        return self._sbatch_args

    def launch_merge_stats(self):
        self.submitted_arrays = list(self.job_id_retriever.ids)  # launch_job calls this once the arrays are queued
        super().launch_merge_stats()

    def submit(self, after: str | None) -> tuple[list[str], list[str]]:
        """Submit the stage's tasks left to run, `afterok` on the job ids `after` (":"-joined) if any."""
        self.depends_job_id = after
        self.job_id_retriever.ids.clear()
        self.submitted_arrays = None
        self.launch_job()
        ids = list(self.job_id_retriever.ids)
        arrays = self.submitted_arrays if self.submitted_arrays is not None else ids
        return arrays, ids[len(arrays):]
