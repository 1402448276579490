"""Executors for the build's stages: datatrove's local (quiet console) and Ray executors."""

from __future__ import annotations

import contextlib
import functools
import os
import sys

from mixture.store import layout
from pipelines.stages import BuildContext, Stage


class ExecutorError(RuntimeError):
    pass


@contextlib.contextmanager
def silence_tqdm():
    """datatrove's per-task tqdm bars off while a stage runs (the build draws one bar per stage).

    Worker processes read TQDM_DISABLE when they import tqdm; tasks run in this process need the patch."""
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
    """datatrove logs every step to the console; keep warnings there (full logs stay in _build/<stage>/logs)."""
    from datatrove.utils.logging import logger

    logger.remove()
    logger.add(sys.stderr, level=level, format="<level>{level}</level> {message}")


def _quiet_local_executor():
    from datatrove.executor import LocalPipelineExecutor

    class QuietLocalExecutor(LocalPipelineExecutor):
        """Task logs go to _build/<stage>/logs only; the console keeps errors (the build shows progress bars)."""

        def _run_for_rank(self, rank: int, local_rank: int = 0, node_rank: int = -1):
            try:
                return super()._run_for_rank(rank, local_rank + 1, node_rank)
            finally:
                quiet_datatrove_console()

        def run(self):
            try:
                with silence_tqdm():
                    return super().run()
            finally:
                quiet_datatrove_console()

    return QuietLocalExecutor


def make_executor(ctx: BuildContext, stage: Stage, executor: str, workers: int):
    logging_dir = ctx.at(layout.stage_dir(stage.name))
    ex = ctx.spec.execution
    if executor == "local":
        return _quiet_local_executor()(pipeline=stage.pipeline, tasks=stage.tasks, workers=min(workers, stage.tasks),
                                     logging_dir=logging_dir)
    if executor == "ray":
        from datatrove.executor.ray import RayPipelineExecutor

        return RayPipelineExecutor(pipeline=stage.pipeline, tasks=stage.tasks, workers=min(workers, stage.tasks),
                                   logging_dir=logging_dir, cpus_per_task=ex.cpus_per_task, mem_per_cpu_gb=ex.mem_per_cpu_gb)
    raise ExecutorError(f"executor {executor!r} is not supported by `mixture build` yet; use local or ray")


