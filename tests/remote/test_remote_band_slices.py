"""The bucket stage's first-hash slices read from gs:// (the GCS emulator): each task's run of every signature file,
from its `.minhash.slices` index or by binary search over range reads, gives the pairs of the local run."""

from __future__ import annotations

import numpy as np
import pytest

from mixture.pipelines.dedup.minhash_buckets import BandCollisions
from tests.dedup.test_band_collisions import BANDS, ROWS, write_sig_files, write_slice_index
from tests.remote.conftest import Remote, upload

pytestmark = pytest.mark.slow
SLICES = 3


def _run(sigs: str, out: str) -> None:
    n = BANDS * SLICES
    for r in range(n):
        list(BandCollisions(sigs, out, ROWS, slices=SLICES, memory=1).run(None, r, n) or ())


@pytest.mark.parametrize("index", [False, True])
def test_slices_read_from_gcs_give_the_local_pairs(gcs: Remote, tmp_path, index: bool) -> None:
    write_sig_files(tmp_path / "sigs", np.random.default_rng(5), files=3, docs=600, shared=20, run=300,
                    top=2**64 - 1)
    if index:
        write_slice_index(tmp_path / "sigs", SLICES)
    _run(str(tmp_path / "sigs"), str(tmp_path / "local"))
    url = gcs.url(f"slices-{index}")
    upload(tmp_path / "sigs", gcs.fs, f"{url}/sigs")
    _run(f"{url}/sigs", f"{url}/out")
    local = sorted(tmp_path.glob("local/*.dups"))
    assert len(local) == BANDS * SLICES and sum(p.stat().st_size for p in local) > 0
    fs = gcs.fs
    for path in local:
        assert fs.cat(f"{url}/out/{path.name}") == path.read_bytes(), path.name
