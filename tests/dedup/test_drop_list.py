"""DropList: a task's dedup verdicts as sorted arrays give what the per-row dict gave."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from mixture.pipelines.dedup.route_drops import DropList
from mixture.pipelines.schemas import DROPS


def _table(rng: np.random.Generator, n: int) -> pa.Table:
    reasons = ["duplicate_id", "exact_duplicate", "fuzzy_duplicate"]
    return pa.table({"rank": pa.array(np.zeros(n, np.int32)), "idx": pa.array(rng.integers(0, 3 * n + 1, n)),
                     "reason": [reasons[i] for i in rng.integers(0, 3, n)],
                     "detail": [None if i % 7 == 0 else f"of doc-{i} é {i % 13}" for i in range(n)]}, schema=DROPS)


def test_drop_list_answers_as_the_dict_of_its_rows_did() -> None:
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 50, 4_000):
        table = _table(rng, n)
        reference = {r["idx"]: (r["reason"], r["detail"]) for r in table.to_pylist()}  # the last listing wins
        drops = DropList(table)
        assert len(drops) == len(reference)
        probe = np.arange(-1, 3 * n + 3)
        assert drops.dropped(probe).tolist() == [int(i) in reference for i in probe]
        for order in (probe, rng.permutation(probe), probe[::-1]):  # a task asks in its file's order; others not
            for i in order.tolist():
                assert drops.get(i) == reference.get(i)
                assert (i in drops) == (i in reference)


def test_drop_list_of_several_chunks_keeps_the_last_tables_verdict() -> None:
    first = pa.table({"rank": pa.array([0, 0], pa.int32()), "idx": pa.array([4, 8], pa.int64()),
                      "reason": ["exact_duplicate", "exact_duplicate"], "detail": ["a", "b"]}, schema=DROPS)
    second = pa.table({"rank": pa.array([0], pa.int32()), "idx": pa.array([4], pa.int64()),
                       "reason": ["fuzzy_duplicate"], "detail": ["c"]}, schema=DROPS)
    drops = DropList(pa.concat_tables([first, second]))
    assert drops.get(4) == ("fuzzy_duplicate", "c")
    assert drops.get(8) == ("exact_duplicate", "b")
    assert drops.get(5) is None
