"""The single-task dedup the build ran before issue 15, kept as the reference the partitioned stages must equal
(`assert_same_as_reference`):
`find_duplicates` as one DuckDB query over every prepared document, `minhash_cluster` as one task (candidate
pairs from every band, verification, greedy keep). Copied from the build's dedup code as it was then (only its
file outputs replaced by return values)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mixture.pipelines.dedup.minhash_buckets import ANCHORS, band_buckets
from mixture.pipelines.dedup.minhash_verify import (
    PAIRS_PER_FETCH,
    Segments,
    jaccard,
    signature_margin,
    unique_shingles,
)
from mixture.store.formats import NearDuplicateReport, read_model
from mixture.text.shingles import WORD_RULE, WordHashes


def _row_groups(pf: pq.ParquetFile, idx: np.ndarray, tags: np.ndarray, column: str, most: int = 256
                ) -> Iterator[tuple[np.ndarray, pa.Array]]:
    """(tags, values of `column`) of the rows `idx` (ascending positions in the file), each row group read once,
    at most `most` rows at a time (how verification read the prepared files before stage minhash_gather)."""
    ends = np.cumsum([pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)])
    group = np.searchsorted(ends, idx, side="right")
    for g in np.unique(group):
        sel = group == g
        col = pf.read_row_group(int(g), columns=[column]).column(0).combine_chunks()
        rows = idx[sel] - (ends[g - 1] if g else 0)
        for lo in range(0, len(rows), most):
            yield tags[sel][lo:lo + most], col.take(pa.array(rows[lo:lo + most]))


@contextmanager
def prepared_docs(prepared: str):
    import duckdb
    import pyarrow.dataset as pads

    from mixture.pipelines.schemas import WORK

    fs, root = fsspec.core.url_to_fs(prepared)
    spill = tempfile.mkdtemp(prefix="mixture-duckdb-")
    con = duckdb.connect(config={"temp_directory": spill, "preserve_insertion_order": False})
    try:
        con.register("prepared", pads.dataset(sorted(fs.glob(f"{root}/*.parquet")), filesystem=fs, format="parquet",
                                              schema=WORK))
        con.sql("""CREATE TEMP TABLE docs AS SELECT rank, idx, id, source, source_order, exact_hash,
                   regexp_extract(origin, '^(.*):[0-9]+$', 1) AS file,
                   CAST(regexp_extract(origin, ':([0-9]+)$', 1) AS BIGINT) AS record FROM prepared""")
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


_LATER = """
    WITH rep AS (SELECT * FROM {table} WHERE {key} IN (SELECT {key} FROM {table} GROUP BY {key} HAVING count(*) > 1))
    SELECT rank, idx, first_id, first_source, first_file, first_record FROM (
        SELECT rank, idx, row_number() OVER w AS n, first_value(id) OVER w AS first_id,
               first_value(source) OVER w AS first_source, first_value(file) OVER w AS first_file,
               first_value(record) OVER w AS first_record
        FROM rep WINDOW w AS (PARTITION BY {key} ORDER BY source_order, file, record, rank, idx))
    WHERE n > 1"""


def exact_drops(prepared: str, exact: bool = True) -> list[tuple]:
    """(rank, idx, reason, detail) of the old FindDuplicates, sorted."""
    with prepared_docs(prepared) as con:
        con.sql(f"CREATE TEMP TABLE later_id AS {_LATER.format(key='id', table='docs')}")
        out = [(r, i, "duplicate_id", f"id {id_!r} is already used by source {src!r} ({file}:{rec})")
               for r, i, id_, src, file, rec in con.sql("SELECT * FROM later_id").fetchall()]
        if exact:
            con.sql("CREATE TEMP TABLE kept AS SELECT * FROM docs ANTI JOIN later_id USING (rank, idx)")
            out += [(r, i, "exact_duplicate", f"same text as {id_!r} ({src}, {file}:{rec})")
                    for r, i, id_, src, file, rec in con.sql(_LATER.format(key="exact_hash", table="kept")).fetchall()]
    return sorted(out)


def _scalar(con, sql: str) -> int:
    return int(con.execute(sql).fetchall()[0][0])


class _Reference:
    """The old single-task `minhash_cluster` step, step for step."""

    def __init__(self, pairs_folder: str, prepared: str, *, threshold: float, ngram: int, permutations: int,
                 anchors: int = ANCHORS):
        self.pairs_folder, self.prepared = pairs_folder, prepared
        self.threshold, self.ngram, self.permutations, self.anchors = threshold, ngram, permutations, anchors

    def run(self) -> tuple[list[tuple], dict]:
        with prepared_docs(self.prepared) as con, tempfile.TemporaryDirectory(prefix="mixture-neardup-") as tmp:
            counts = self._candidates(con)
            counts.update(self._verify(con, tmp))
            out, kept_similar = self._greedy(con)
        counts.update(drops=len(out), kept_similar=kept_similar,
                      pairs_rejected=counts["pairs_considered"] - counts["pairs_verified"])
        return sorted(out), counts

    def _candidates(self, con) -> dict[str, int]:
        con.sql("CREATE TABLE members (bucket BIGINT, rank INTEGER, idx BIGINT)")
        fs, root = fsspec.core.url_to_fs(self.pairs_folder)
        band_pairs = 0
        for path in sorted(fs.glob(f"{root}/*.dups")):
            band = int(path.rsplit("/", 1)[-1].split("_")[0])
            band_pairs += fs.size(path) // 16
            for chunk in band_buckets(path, fs, band):
                con.register("chunk", chunk)
                con.sql("INSERT INTO members SELECT * FROM chunk")
                con.unregister("chunk")
        con.sql("""CREATE TABLE cand AS SELECT rank, idx,
                   row_number() OVER (ORDER BY source_order, file, record, rank, idx) - 1 AS prio
                   FROM docs SEMI JOIN members USING (rank, idx)""")
        con.sql("""CREATE TABLE ranked AS SELECT bucket, prio,
                   row_number() OVER (PARTITION BY bucket ORDER BY prio) - 1 AS pos
                   FROM members JOIN cand USING (rank, idx)""")
        con.sql(f"""CREATE TABLE pairs AS SELECT DISTINCT x.prio AS a, y.prio AS b
                    FROM (SELECT * FROM ranked WHERE pos < {int(self.anchors)}) x
                    JOIN ranked y ON x.bucket = y.bucket AND x.pos < y.pos""")
        return {"band_pairs": int(band_pairs), "buckets": _scalar(con, "SELECT count(DISTINCT bucket) FROM members"),
                "documents": _scalar(con, "SELECT count(*) FROM cand"),
                "pairs_considered": _scalar(con, "SELECT count(*) FROM pairs")}

    def _load(self, con, tmp: str, column: str, docs: np.ndarray | None = None) -> Segments:
        rows = con.execute("SELECT rank, idx, prio FROM cand ORDER BY rank, idx").fetchnumpy()
        if docs is not None:
            mask = np.isin(rows["prio"], docs)
            rows = {k: np.asarray(v)[mask] for k, v in rows.items()}
        n = _scalar(con, "SELECT count(*) FROM cand")
        start, length = np.zeros(n, np.int64), np.zeros(n, np.int64)
        fs, root = fsspec.core.url_to_fs(self.prepared)
        written = 0
        with open(f"{tmp}/{column}", "wb") as out:
            ranks = np.asarray(rows["rank"])
            for r in np.unique(ranks):
                sel = ranks == r
                with fs.open(f"{root}/{int(r):05d}.parquet", "rb") as f:
                    for prio, col in _row_groups(pq.ParquetFile(f), np.asarray(rows["idx"])[sel],
                                                 np.asarray(rows["prio"])[sel], column):
                        values, counts = self._values(col, column)
                        out.write(values.astype("<u8").tobytes())
                        start[prio] = written + np.cumsum(counts) - counts
                        length[prio] = counts
                        written += len(values)
        values = np.memmap(f"{tmp}/{column}", dtype="<u8", mode="r") if written else np.empty(0, np.uint64)
        return Segments(values, start, length)

    def _values(self, col: pa.Array, column: str) -> tuple[np.ndarray, np.ndarray]:
        if column == "minhash":
            sigs = col.to_pylist()
            return np.frombuffer(b"".join(sigs), dtype="<u8"), np.array([len(s) // 8 for s in sigs], np.int64)
        texts = col.to_pylist()
        grams, doc = WordHashes.of(texts).ngrams(self.ngram)
        return unique_shingles(grams, doc, len(texts))

    def _verify(self, con, tmp: str) -> dict[str, int]:
        con.sql("CREATE TABLE verified (a BIGINT, b BIGINT, sim DOUBLE)")
        sigs = self._load(con, tmp, "minhash")
        k = self.permutations
        floor = self.threshold - signature_margin(self.threshold, k)
        con.sql("CREATE TABLE plausible (a BIGINT, b BIGINT)")
        ruled_out = 0
        for batch in con.cursor().sql("SELECT a, b FROM pairs").to_arrow_reader(PAIRS_PER_FETCH):
            a, b = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            va, _ = sigs.gather(a)
            vb, _ = sigs.gather(b)
            agree = (va.reshape(-1, k) == vb.reshape(-1, k)).mean(axis=1)
            keep = agree >= floor
            ruled_out += int((~keep).sum())
            con.register("batch", pa.table({"a": a[keep], "b": b[keep]}))
            con.sql("INSERT INTO plausible SELECT * FROM batch")
            con.unregister("batch")
        needed = con.execute("SELECT a FROM plausible UNION SELECT b FROM plausible").fetchnumpy()["a"]
        shingles = self._load(con, tmp, "text", np.asarray(needed))
        compared = verified = 0
        for batch in con.cursor().sql("SELECT a, b FROM plausible").to_arrow_reader(PAIRS_PER_FETCH):
            a, b = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            sim = jaccard(shingles, a, b)
            ok = sim >= self.threshold
            compared += len(a)
            verified += int(ok.sum())
            con.register("batch", pa.table({"a": a[ok], "b": b[ok], "sim": sim[ok]}))
            con.sql("INSERT INTO verified SELECT * FROM batch")
            con.unregister("batch")
        return {"pairs_ruled_out": ruled_out, "pairs_compared": compared, "pairs_verified": verified}

    def _greedy(self, con) -> tuple[list[tuple], int]:
        n = _scalar(con, "SELECT count(*) FROM cand")
        dropped = np.zeros(n, dtype=bool)
        decided: list[tuple[int, int, float]] = []
        kept_similar, current, done = 0, -1, False
        for batch in con.cursor().sql("SELECT a, b, sim FROM verified ORDER BY b, sim DESC, a").to_arrow_reader(
                PAIRS_PER_FETCH):
            for a, b, sim in zip(*(batch.column(i).to_pylist() for i in range(3)), strict=True):
                if b != current:
                    kept_similar += current >= 0 and not done
                    current, done = b, False
                if not done and not dropped[a]:
                    dropped[b], done = True, True
                    decided.append((b, a, sim))
        kept_similar += current >= 0 and not done
        con.register("decided", pa.table({"b": pa.array([d[0] for d in decided], pa.int64()),
                                          "a": pa.array([d[1] for d in decided], pa.int64()),
                                          "sim": pa.array([d[2] for d in decided], pa.float64())}))
        rows = con.sql("""
            SELECT l.rank, l.idx, k.id, k.source, k.file, k.record, d.sim FROM decided d
            JOIN cand lc ON lc.prio = d.b JOIN docs l ON l.rank = lc.rank AND l.idx = lc.idx
            JOIN cand kc ON kc.prio = d.a JOIN docs k ON k.rank = kc.rank AND k.idx = kc.idx""").fetchall()
        measure = f"word {self.ngram}-gram Jaccard"
        out = [(r, i, "fuzzy_duplicate", f"near duplicate of {id_!r} ({src}, {file}:{rec}): {measure} {sim:.3f} ({WORD_RULE})")
               for r, i, id_, src, file, rec, sim in rows]
        return out, int(kept_similar)


def near_drops(pairs_folder: str, prepared: str, *, threshold: float, ngram: int, permutations: int
               ) -> tuple[list[tuple], dict]:
    """(rank, idx, reason, detail) of the old single-task `minhash_cluster`, sorted, and its report's counts."""
    return _Reference(pairs_folder, prepared, threshold=threshold, ngram=ngram, permutations=permutations).run()


def drop_rows(files: list[Path]) -> list[tuple]:
    """(rank, idx, reason, detail) of DROPS files (Parquet, or shuffle files: every partition), sorted."""
    from mixture.pipelines.dedup.shuffle import read_shuffle_file, shuffle_partitions
    from mixture.pipelines.schemas import DROPS

    def table(f: Path) -> pa.Table:
        return read_shuffle_file(str(f), DROPS) if shuffle_partitions(str(f)) else pq.read_table(f)
    return sorted(tuple(r.values()) for f in files for r in table(f).to_pylist())


def exact_drop_rows(work: Path) -> list[tuple]:
    return drop_rows(sorted(work.glob("drops/*/*.parquet")))


def fuzzy_drop_rows(work: Path) -> list[tuple]:
    return drop_rows(sorted(work.glob("fuzzy_drops/*.parquet")))


def assert_same_as_reference(work: Path, threshold: float, ngram: int, permutations: int) -> None:
    """The drops of the partitioned stages in `work` are the old single-task stages' on the same prepared files,
    and so is the near-duplicate report."""
    want = exact_drops(str(work / "prepared"))
    assert want and exact_drop_rows(work) == want
    want, counts = near_drops(str(work / "mh_buckets"), str(work / "prepared"), threshold=threshold, ngram=ngram,
                              permutations=permutations)
    assert want and fuzzy_drop_rows(work) == want
    report = read_model(NearDuplicateReport, str(work / "near_duplicates.json")).model_dump()
    assert {k: report[k] for k in counts} == counts
    assert_cluster_as_single_task(work, threshold, ngram, permutations)


def assert_cluster_as_single_task(work: Path, threshold: float, ngram: int, permutations: int) -> None:
    """The drops (by prepared file) and the report the build's `minhash_cluster` rounds wrote in `work` are those of
    the single task it replaced (tests/dedup/cluster_reference.py) over the same verified pairs."""
    from tests.dedup.cluster_reference import MinhashCluster, drops_by_file

    with tempfile.TemporaryDirectory() as tmp:
        list(MinhashCluster(str(work / "near_dups"), f"{tmp}/drops", f"{tmp}/report.json", threshold=threshold,
                            ngram=ngram, permutations=permutations).run(None, 0, 1) or ())
        want = drops_by_file(Path(tmp) / "drops")
        assert want and drops_by_file(work / "fuzzy_drops") == want
        assert read_model(NearDuplicateReport, str(work / "near_duplicates.json")) == read_model(
            NearDuplicateReport, f"{tmp}/report.json")
