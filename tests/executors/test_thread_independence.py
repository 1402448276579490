"""The fitted model does not depend on the threads its task was given: `fit_and_save` in fresh processes with
task_threads 1 or 2 (cpus_per_task), OMP_NUM_THREADS 1, 2 or unset, or no limit at all, writes the same bytes as
the build's own fit (mixture/fit/one_thread.py)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import small_spec

pytestmark = pytest.mark.slow

FIT = """
import json, sys
from mixture.fit.model_store import fit_and_save
from mixture.pipelines.runtime.threads import task_threads
sample, out, params, threads = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
if threads:
    with task_threads(threads):
        fit_and_save(sample, out, params, out + "_assignments")
else:  # no limit: BLAS and OpenMP on every core
    fit_and_save(sample, out, params, out + "_assignments")
"""


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_fit_writes_the_same_bytes_whatever_its_threads(tmp_path, demo_corpus):
    from mixture.pipelines.build import build
    from mixture.pipelines.context import BuildContext
    from mixture.pipelines.partition import fit as fit_stage
    from mixture.spec.models import Spec

    spec = small_spec(str(demo_corpus), "store")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(tmp_path / "spec.yaml"), progress=False, keep_work=True)
    step = fit_stage.steps(BuildContext(Spec.model_validate(spec), str(tmp_path), str(tmp_path / "store"), 2))[0]
    built = _digests(tmp_path / "store" / "_model")
    assigned = _digests(Path(f"{step.assignments_folder}"))  # the sample's clusters, reused by `assign`
    assert {"embedder.npz", "centroids.npz", "clusters.json"} <= set(built)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    for name, threads, omp in (("one", 1, None), ("two", 2, None), ("two_omp1", 2, "1"), ("free_omp2", 0, "2"),
                               ("free", 0, None)):
        out = tmp_path / name
        subprocess.run([sys.executable, "-c", FIT, step.sample_folder, str(out), json.dumps(step.params), str(threads)],
                       env={**env, **({"OMP_NUM_THREADS": omp} if omp else {})}, check=True)
        assert _digests(out) == built and _digests(Path(f"{out}_assignments")) == assigned, name
