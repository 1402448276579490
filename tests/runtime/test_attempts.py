"""The attempt markers: a rerun task removes what an earlier attempt of it left, a first attempt lists nothing."""

from __future__ import annotations

from mixture.pipelines.runtime.attempts import ClearTaskFiles


def test_a_rerun_task_removes_its_earlier_attempts_files_and_a_first_attempt_lists_nothing(tmp_path):
    """A task's first attempt leaves a marker and searches no folder (a search per task lists every partition or
    cell: T × T listings over a stage); a rerun finds the marker and removes what the killed attempt wrote."""
    cell = tmp_path / "store" / "cluster=00" / "quality=0"
    cell.mkdir(parents=True)
    step = ClearTaskFiles([f"{tmp_path}/store/cluster=*/quality=*/*part-{{rank}}.parquet"], f"{tmp_path}/attempts")
    stale = cell / "001_part-00003.parquet"
    stale.write_bytes(b"PAR1 partial")
    list(step.run(None, rank=3))  # first attempt: the file cannot be its own (a new key clears the stage first)
    assert (tmp_path / "attempts" / "00003").exists() and stale.exists()
    other = cell / "001_part-00004.parquet"
    other.write_bytes(b"PAR1 another task's")
    list(step.run(None, rank=3))  # the rerun of task 3
    assert not stale.exists() and other.exists()
    assert step.stats["removed_files"].total == 1
