"""Every task of a build writes what it used (wall and CPU seconds, peak memory) to `_build/<stage>/usage/`."""

from __future__ import annotations

import json
import os

from datatrove.io import get_datafolder
from datatrove.utils.stats import PipelineStats

from mixture.pipelines.runtime.task_usage import peak_rss, record_usage
from mixture.stages import registry as stage_registry


def test_every_task_of_every_stage_has_a_usage_record(built_store):
    assert built_store.artifact.counters.records_out > 0  # the build finished: every stage ran
    for name in stage_registry.names():
        stage = built_store.store / "_build" / name
        runs = [stage] if (stage / "completions").is_dir() else sorted(p.parent for p in stage.glob("*/completions"))
        assert runs, name  # a stage run in rounds: each round's folder
        for run in runs:
            _check_usage(run, name)


def _check_usage(stage, name: str) -> None:
    """Each finished task of a stage (or round) folder left its usage record."""
    done = sorted(p.name for p in (stage / "completions").iterdir())
    usage = sorted((stage / "usage").glob("*.json"))
    assert [p.stem for p in usage] == done, name
    for p in usage:
        u = json.loads(p.read_text())
        assert u["rank"] == int(p.stem) and u["peak_rss_scope"] == "task", (name, u)
        assert u["cpu_seconds"] >= 0 and u["wall_seconds"] > 0 and u["peak_rss_bytes"] > 20 * 2**20, (name, u)
        assert abs(u["cpu_seconds"] - u["user_seconds"] - u["system_seconds"]) < 1e-3


def test_the_peak_is_the_tasks_own(tmp_path):
    """A process that held 300 MiB more before a task reports the task's peak (its 50 MiB), not its own earlier
    one; a task skipped as finished writes no record."""
    from mixture.pipelines.runtime.task_usage import _status_kb

    big = bytearray(300 * 2**20)
    big[::4096] = b"x" * len(big[::4096])  # touch every page
    del big
    before = _status_kb("VmRSS:") * 1024
    assert peak_rss() > before + 250 * 2**20
    folder = get_datafolder(str(tmp_path))

    def task():
        held = bytearray(50 * 2**20)
        held[::4096] = b"y" * len(held[::4096])
        stats = PipelineStats()
        stats.stats = ["a step"]  # what datatrove returns for a task that ran
        return stats

    record_usage(folder, 3, task)
    u = json.loads((tmp_path / "usage" / "00003.json").read_text())
    assert u["peak_rss_scope"] == "task" and u["pid"] == os.getpid()
    assert before + 45 * 2**20 < u["peak_rss_bytes"] < before + 150 * 2**20
    record_usage(folder, 4, PipelineStats)
    assert not (tmp_path / "usage" / "00004.json").exists()
