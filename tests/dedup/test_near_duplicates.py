"""Near duplicates with evidence (mixture.pipelines.dedup: minhash_buckets, minhash_verify, minhash_cluster):
buckets read back from the bucket stage's pairs, exact Jaccard, the greedy keep in priority order (a chain A~B~C
keeps C), and on real multilingual text and the demo corpus: every drop at or above the threshold against the kept
document it names (recomputed here from the texts), planted near duplicates caught, the same decisions for 2 and 4
tasks."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml

from mixture.pipelines.dedup import minhash_verify
from mixture.pipelines.dedup.minhash_buckets import (
    ANCHORS,
    BAND_BITS,
    MinhashBuckets,
    band_buckets,
    bucket_members,
)
from mixture.pipelines.dedup.minhash_route import MinhashRoute
from mixture.pipelines.dedup.minhash_verify import MinhashVerify
from mixture.store.formats import NearDuplicateReport, read_model, read_store_artifact
from mixture.text.kernel import kernel
from tests.dedup.cluster_reference import drops_by_file, resolve
from tests.dedup.dedup_reference import assert_same_as_reference

_WORD = re.compile(r"\w+")
_ASCII_DIGIT = re.compile(r"[0-9]")
DETAIL = re.compile(r"near duplicate of '(.+)' \((.+?), .*\): word (\d+)-gram Jaccard ([0-9.]+) \(lower-cased words, digits read as 0\)$")


# -- the similarity, written here independently of the pipeline's word hashes --------------------------------
def shingle_set(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """Word n-grams as the project defines words (docs/build.md): lower-cased runs of word characters, ASCII
    digits read as 0."""
    words = [_ASCII_DIGIT.sub("0", w) for w in _WORD.findall(text.lower())]
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: str, b: str, n: int = 5) -> float:
    sa, sb = shingle_set(a, n), shingle_set(b, n)
    return len(sa & sb) / len(sa | sb)


# -- units ---------------------------------------------------------------------------------------------------
def test_bucket_members_reads_chains_and_stars():
    chain = np.array([[0, 1, 0, 2], [0, 2, 1, 0], [1, 5, 1, 6], [0, 9, 1, 7], [0, 9, 1, 8]], dtype=np.uint32)
    bucket, members = bucket_members(chain)  # buckets {0:1, 0:2, 1:0}, {1:5, 1:6}, {0:9, 1:7, 1:8} (a star)
    got = {}
    for b, m in zip(bucket.tolist(), map(tuple, members.tolist()), strict=True):
        got.setdefault(b, set()).add(m)
    assert sorted(map(sorted, got.values())) == [[(0, 1), (0, 2), (1, 0)], [(0, 9), (1, 7), (1, 8)], [(1, 5), (1, 6)]]


def test_band_buckets_hold_a_bucket_cut_by_a_block(tmp_path):
    import fsspec

    rng = np.random.default_rng(0)
    pairs, doc = [], 0
    for size in rng.integers(2, 9, 40):
        run = list(range(doc, doc + size))
        pairs += [[0, run[i - 1], 0, run[i]] for i in range(1, size)]
        doc += size
    path = tmp_path / "00003_00.dups"
    path.write_bytes(np.array(pairs, dtype="<u4").tobytes())
    def read(block: int) -> pa.Table:
        t = pa.concat_tables(band_buckets(str(path), fsspec.filesystem("file"), 3, block=block))
        return t.sort_by([("bucket", "ascending"), ("idx", "ascending")])

    whole = read(1 << 20)
    for block in (1, 2, 5, 7):
        assert read(block).equals(whole), block
    buckets = whole.column("bucket").to_numpy()
    assert len(np.unique(buckets)) == 40 and (buckets >> BAND_BITS == 3).all() and whole.num_rows == doc


@pytest.mark.parametrize("memory", [256 * 2**20, 1])
def test_buckets_read_back_from_the_bucket_stages_pairs(tmp_path, memory):
    """The buckets read back from the pairs of BandCollisions (and of datatrove's MinhashDedupBuckets) are the
    groups of documents with equal band signatures, also when runs cross the bucket stage's read blocks."""
    import fsspec
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets

    from mixture.pipelines.dedup.minhash_buckets import BandCollisions
    from tests.dedup.test_band_collisions import BANDS, ROWS, write_sig_files

    write_sig_files(tmp_path / "sigs", np.random.default_rng(3), files=4, docs=2000, shared=30, run=600)
    dtype = np.dtype([(f"h{j}", "<u8") for j in range(ROWS)] + [("doc", "<u4")])
    config = MinhashConfig(num_buckets=BANDS, hashes_per_bucket=ROWS)
    for b in range(BANDS):
        groups: dict[tuple, set] = {}
        for path in sorted((tmp_path / "sigs" / f"bucket_{b:03d}").glob("*.minhash.sig")):
            stem = int(path.name.split(".")[0])
            for rec in np.fromfile(path, dtype=dtype).tolist():
                groups.setdefault(rec[:ROWS], set()).add((stem, rec[ROWS]))
        expected = sorted(sorted(g) for g in groups.values() if len(g) > 1)
        list(BandCollisions(str(tmp_path / "sigs"), str(tmp_path / "ours"), ROWS, memory=memory).run(None, b, BANDS)
             or ())
        MinhashDedupBuckets(str(tmp_path / "sigs"), str(tmp_path / "datatrove"), config=config).run(None, b, BANDS)
        for folder in ("ours", "datatrove"):
            t = pa.concat_tables(band_buckets(str(tmp_path / folder / f"{b:05d}_00.dups"),
                                                 fsspec.filesystem("file"), b, block=97))
            got: dict[int, set] = {}
            for bucket, rank, idx in zip(*(t.column(c).to_pylist() for c in ("bucket", "rank", "idx")), strict=True):
                got.setdefault(bucket, set()).add((rank, idx))
            assert sorted(sorted(g) for g in got.values()) == expected, (folder, b)


def test_exact_jaccard_of_segments():
    rng = np.random.default_rng(1)
    pool = np.concatenate([rng.integers(0, 2**63, 300, dtype=np.uint64) * np.uint64(2),  # hashes, and values
                           np.arange(100, dtype=np.uint64)])  # that share their top bits (the one-by-one path)
    sets = [np.unique(rng.choice(pool, rng.integers(0, 300))) for _ in range(30)]
    seg = minhash_verify.Segments(np.concatenate(sets), np.cumsum([0] + [len(s) for s in sets[:-1]]).astype(np.int64),
                      np.array([len(s) for s in sets], np.int64))
    a, b = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    want = [len(set(sets[i]) & set(sets[j])) / max(1, len(set(sets[i]) | set(sets[j]))) if len(sets[i]) + len(sets[j])
            else 1.0 for i, j in zip(a, b, strict=True)]
    old = minhash_verify.SHINGLES_PER_CHECK
    try:
        for per_check in (old, 100):  # one group, then many
            minhash_verify.SHINGLES_PER_CHECK = per_check
            reference = minhash_verify.jaccard_py(seg, a, b)
            assert np.allclose(reference, want)
            assert np.array_equal(minhash_verify.jaccard(seg, a, b), reference)  # the kernel's, where it is built
    finally:
        minhash_verify.SHINGLES_PER_CHECK = old


@pytest.mark.skipif(kernel is None, reason="the compiled kernel is not built here")
def test_shared_counts_refuses_rows_outside_the_values():
    values, start, length = np.arange(10, dtype=np.uint64), np.array([0, 4], np.int64), np.array([4, 6], np.int64)
    pair = np.array([0], np.int64), np.array([1], np.int64)
    assert np.frombuffer(kernel.shared_counts(values, start, length, *pair), np.int64).tolist() == [0]
    for bad_start, bad_length, a in (([0, 5], [4, 6], [0]), ([0, 4], [4, 6], [2]), ([0, -1], [4, 6], [0])):
        with pytest.raises(ValueError, match="not a row inside the values"):
            kernel.shared_counts(values, np.array(bad_start, np.int64), np.array(bad_length, np.int64),
                                 np.array(a, np.int64), pair[1])


def _words(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(n)]


def _prepared(path, texts: list[str], permutations: int = 112) -> None:
    """A prepared file (the WORK schema) of `texts`, in priority order, with their real MinHash signatures."""
    from mixture.pipelines.schemas import WORK
    from mixture.text.shingles import WordHashes, minhash_signatures

    grams, doc = WordHashes.of(texts).ngrams(5)
    sigs = minhash_signatures(grams, doc, len(texts), permutations, 1)
    n = len(texts)
    pq.write_table(pa.table({
        "id": [f"d{i}" for i in range(n)], "text": texts, "source": ["s"] * n, "category": ["web"] * n,
        "origin": [f"f.jsonl:{i}" for i in range(n)], "exempt": [False] * n, "content_type": ["prose"] * n,
        "code_language": [""] * n,
        "language": ["en"] * n, "language_score": [1.0] * n,
        "raw_score": [0.5] * n, "n_chars": [len(t) for t in texts], "rank": [0] * n, "idx": list(range(n)),
        "source_order": [0] * n, "exact_hash": list(range(n)), "minhash": [s.astype("<u8").tobytes() for s in sigs],
    }, schema=WORK), path)


def run_near_duplicates(work, bands: int, partitions: int, threshold: float = 0.719, permutations: int = 112,
                        anchors: int = ANCHORS) -> None:
    """The near-duplicate steps of the build over `work` (prepared/, mh_buckets/ holding one `.dups` per band):
    the dedup keys of each prepared file (DedupKeys: its file table), each band's candidate pairs (MinhashBuckets),
    routed to their verification partitions (MinhashRoute), each prepared file's candidates sent to their
    partitions (MinhashGather), each partition's verification
    (MinhashVerify), then the rounds of `minhash_cluster` (components, the greedy pass per component)."""
    from mixture.pipelines.dedup.keys import DedupKeys
    from mixture.pipelines.dedup.minhash_gather import MinhashGather

    prepared = sorted((work / "prepared").glob("*.parquet"))
    for path in prepared:
        list(DedupKeys(str(work / "prepared"), str(work / "dedup")).run(None, int(path.stem), len(prepared)) or ())
    for band in range(bands):
        list(MinhashBuckets(str(work / "mh_buckets"), str(work / "dedup"), str(work / "near_dups"), partitions,
                            anchors=anchors).run(None, band, bands) or ())
    for q in range(partitions):
        list(MinhashRoute(str(work / "near_dups"), partitions, len(prepared)).run(None, q, partitions) or ())
    for path in prepared:
        list(MinhashGather(str(work / "near_dups"), str(work / "prepared"), partitions=partitions)
             .run(None, int(path.stem), len(prepared)) or ())
    for q in range(partitions):
        list(MinhashVerify(str(work / "near_dups"), threshold=threshold, ngram=5,
                           permutations=permutations).run(None, q, partitions) or ())
    resolve(str(work / "near_dups"), str(work / "fuzzy_drops"), str(work / "report.json"), partitions,
            prepared=len(prepared), threshold=threshold, ngram=5, permutations=permutations, anchors=anchors)


def _resolve(tmp_path, texts: list[str], buckets: list[list[int]], threshold: float = 0.719, partitions: int = 3
             ) -> tuple[dict[str, str], NearDuplicateReport]:
    """The near-duplicate stages over `texts` (one prepared file) whose bucket stage put `buckets` (lists of
    documents, one band each) together: {dropped id: detail}, the report."""
    (tmp_path / "prepared").mkdir()
    (tmp_path / "mh_buckets").mkdir()
    _prepared(tmp_path / "prepared" / "00000.parquet", texts)
    for band, members in enumerate(buckets):
        pairs = [[0, members[i - 1], 0, members[i]] for i in range(1, len(members))]
        (tmp_path / "mh_buckets" / f"{band:05d}_00.dups").write_bytes(np.array(pairs, dtype="<u4").tobytes())
    run_near_duplicates(tmp_path, len(buckets), partitions, threshold)
    drops = [r for rows in drops_by_file(tmp_path / "fuzzy_drops").values() for r in rows]
    return ({f"d{r['idx']}": r["detail"] for r in drops},
            read_model(NearDuplicateReport, str(tmp_path / "report.json")))


def test_chain_keeps_its_far_end(tmp_path):
    """A ~ B ~ C with A and C dissimilar, all in one LSH bucket: B goes (a near duplicate of A), C stays, where
    union-find over the bucket would drop both B and C as duplicates of A."""
    rng = random.Random(0)
    core, extra_a, extra_c = _words(rng, 200), _words(rng, 50), _words(rng, 50)
    a, b, c = " ".join(core + extra_a), " ".join(core), " ".join(core + extra_c)
    assert jaccard(a, b) >= 0.72 and jaccard(b, c) >= 0.72 and jaccard(a, c) < 0.7
    drops, report = _resolve(tmp_path, [a, b, c], [[2, 0, 1]])
    assert set(drops) == {"d1"}
    m = DETAIL.match(drops["d1"])
    assert m and m.group(1) == "d0" and abs(float(m.group(4)) - jaccard(a, b)) < 1e-3
    assert (report.documents, report.pairs_considered, report.pairs_verified, report.drops, report.kept_similar) == (
        3, 3, 2, 1, 1)
    assert report.pairs_rejected == 1 and report.pairs_compared + report.pairs_ruled_out == 3


def test_the_spec_states_the_threshold(tmp_path):
    from pydantic import ValidationError

    from mixture.spec.models import FuzzyDedup

    assert FuzzyDedup().similarity_threshold == FuzzyDedup().lsh_threshold == pytest.approx(0.719, abs=1e-3)
    assert FuzzyDedup(threshold=0.9).similarity_threshold == 0.9
    for bad in (0, 1.5):
        with pytest.raises(ValidationError, match="threshold"):
            FuzzyDedup(threshold=bad)
    rng = random.Random(0)
    core, extra = _words(rng, 200), _words(rng, 50)
    a, b = " ".join(core + extra), " ".join(core)
    drops, report = _resolve(tmp_path, [a, b], [[0, 1]], threshold=0.9)  # J = 0.80: a candidate, not a duplicate
    assert drops == {} and (report.threshold, report.pairs_considered, report.pairs_rejected) == (0.9, 1, 1)


def test_drop_names_the_most_similar_kept_document(tmp_path):
    """D is similar to both A and C (both kept, dissimilar to each other): its detail names C, the closer one."""
    rng = random.Random(1)
    core, xa, xc = _words(rng, 400), _words(rng, 100), _words(rng, 100)
    a, c = " ".join(core + xa), " ".join(core + xc)
    d = " ".join(core + xa[:15] + xc[:40])
    assert jaccard(a, c) < 0.719 <= jaccard(d, a) < jaccard(d, c)
    drops, _ = _resolve(tmp_path, [a, c, d], [[0, 1, 2]])
    assert set(drops) == {"d2"} and DETAIL.match(drops["d2"]).group(1) == "d1"


def test_anchors_bound_the_pairs_of_a_large_bucket(tmp_path):
    """A bucket of n documents gives at most ANCHORS pairs per member; identical-but-one-word copies all go."""
    rng = random.Random(2)
    base = _words(rng, 120)
    texts = [" ".join(base[:i] + ["x"] + base[i + 1:]) for i in range(40)]
    drops, report = _resolve(tmp_path, texts, [list(range(40))[::-1]])
    k = ANCHORS
    assert report.pairs_considered == k * (k - 1) // 2 + (40 - k) * k
    assert set(drops) == {f"d{i}" for i in range(1, 40)}
    assert all(DETAIL.match(d).group(1) in {f"d{i}" for i in range(k)} for d in drops.values())


def test_gather_sends_more_text_than_its_memory_limit(tmp_path):
    """`minhash_gather` sends each candidate document to each partition that asked for it, equal to its prepared row,
    with DuckDB limited to 8 MB and ~13 MB of candidate text: the texts wait in a local file, DuckDB sorts their
    positions only (DuckDB 2.0 cannot sort rows of long texts past its limit: the gather that sorted them there
    failed on this input)."""
    from mixture.pipelines.dedup.keys import DedupKeys
    from mixture.pipelines.dedup.minhash_gather import GATHERED, MinhashGather
    from mixture.pipelines.dedup.shuffle import read_partition

    rng = random.Random(4)
    base = _words(rng, 800)
    texts = [" ".join(base[:700] + _words(rng, 100)) for _ in range(2_000)]  # ~6.4 KB each
    work = tmp_path
    for d in ("prepared", "mh_buckets"):
        (work / d).mkdir()
    _prepared(work / "prepared" / "00000.parquet", texts)
    pairs = [[0, i - 1, 0, i] for i in range(1, len(texts))]
    (work / "mh_buckets" / "00000_00.dups").write_bytes(np.array(pairs, dtype="<u4").tobytes())
    list(DedupKeys(str(work / "prepared"), str(work / "dedup")).run(None, 0, 1) or ())
    list(MinhashBuckets(str(work / "mh_buckets"), str(work / "dedup"), str(work / "near_dups"), 3).run(None, 0, 1)
         or ())
    for q in range(3):
        list(MinhashRoute(str(work / "near_dups"), 3, 1).run(None, q, 3) or ())
    list(MinhashGather(str(work / "near_dups"), str(work / "prepared"), memory_limit="8MB", partitions=3)
         .run(None, 0, 1) or ())
    prepared = pq.read_table(work / "prepared" / "00000.parquet").to_pydict()
    sent = 0
    for q in range(3):
        got = read_partition(f"{work}/near_dups/texts/*.parquet", q, GATHERED, 3).to_pylist()
        assert len({r["g"] for r in got}) == len(got)  # each document once in a partition
        for r in got:
            i = int(r["id"][1:])
            assert (r["text"], r["minhash"], r["source"], r["origin"]) == (
                prepared["text"][i], prepared["minhash"][i], prepared["source"][i], prepared["origin"][i])
        sent += len(got)
    assert sum(len(t) for t in texts) > 12 << 20 and sent >= len(texts)


def test_spilled_columns_read_back_any_rows_in_any_order(tmp_path):
    """SpilledColumns: string and binary columns (empty values, nulls, multi-byte text, NUL bytes) appended table by
    table and read back in a shuffled order, with repeats, equal the rows taken from the tables."""
    from mixture.pipelines.dedup.spilled_columns import SpilledColumns

    schema = pa.schema([("b", pa.binary()), ("s", pa.string())])
    rng = random.Random(5)
    tables = [pa.table({"b": [None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 40)) for _ in range(n)],
                        "s": [rng.choice(["", "é\u0301 ✓", "a\x00b", "x" * rng.randrange(1, 300)]) for _ in range(n)]},
                       schema=schema) for n in (0, 7, 300)]
    spilled = SpilledColumns(str(tmp_path / "cols"), schema)
    positions = [spilled.append(t.slice(1) if t.num_rows else t) for t in tables]  # a sliced array: offset != 0
    whole = pa.concat_tables([t.slice(1) if t.num_rows else t for t in tables])
    at = {k: np.concatenate([p[k] for p in positions]) for k in spilled.position_names}
    order = np.array([rng.randrange(whole.num_rows) for _ in range(500)])
    got = spilled.read({k: v[order] for k, v in at.items()})
    want = whole.take(pa.array(order))
    assert [a.to_pylist() for a in got] == [want.column(c).to_pylist() for c in ("b", "s")]
    with pytest.raises(TypeError, match="not n: int64"):
        SpilledColumns(str(tmp_path / "bad"), pa.schema([("n", pa.int64())]))
    spilled.close()


# -- the real pipeline on real multilingual text ------------------------------------------------------------
def _build_multilingual(root, corpus, tasks: int):
    from mixture.demo_corpus.debian_text import multilingual_spec
    from mixture.pipelines.build import build

    root.mkdir(parents=True, exist_ok=True)
    spec = multilingual_spec(str(corpus), "store")
    spec["execution"]["tasks"] = tasks
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(root / "spec.yaml"), progress=False, keep_work=True)  # the work files: for the reference check
    return root / "store"


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory):
    from mixture.demo_corpus import debian_text

    reason = debian_text.missing_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("multilingual")
    debian_text.write_multilingual_corpus(root / "corpus", seed=0, scale=1.0)
    return root


@pytest.fixture(scope="module")
def multilingual_store(multilingual):
    return _build_multilingual(multilingual / "two", multilingual / "corpus", 2)


def _texts(corpus) -> dict[tuple[str, str], str]:
    """{(source, id): normalised text} of the multilingual corpus (a source is a folder)."""
    from mixture.text.normalize import normalize_text

    out = {}
    for path in sorted(corpus.glob("*/part-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            out.setdefault((path.parent.name, rec["id"]), normalize_text(rec["text"]))
    return out


def _fuzzy_drops(store) -> list[dict]:
    folder = store / "_dropped" / "fuzzy_duplicate"
    files = sorted(folder.glob("*.parquet"))
    return ds.dataset([str(f) for f in files]).to_table(columns=["id", "source", "detail"]).to_pylist() if files else []


def _kept(store) -> set[str]:
    files = sorted(store.glob("cluster=*/quality=*/*.parquet"))
    return set(ds.dataset([str(f) for f in files]).to_table(columns=["id"]).column("id").to_pylist())


def _check_drops_against_kept(store, texts: dict[tuple[str, str], str]) -> NearDuplicateReport:
    """Every near-duplicate drop names a kept document, and its word n-gram Jaccard with it, recomputed here from
    the texts (`texts`: {(source, id): text, first occurrence}), is at or above the threshold and as stated."""
    art = read_store_artifact(str(store / "store.json"))
    report = art.near_duplicates
    drops, kept = _fuzzy_drops(store), _kept(store)
    assert report is not None and report.drops == len(drops) == art.counters.fuzzy_duplicate_dropped
    assert report.threshold == round(art.dedup.fuzzy_threshold, 4)  # no threshold in the spec: the LSH one
    for row in drops:
        m = DETAIL.match(row["detail"])
        assert m, row
        named, n, sim = m.group(1), int(m.group(3)), float(m.group(4))
        assert named in kept, row  # the document it names is kept, not itself dropped (no chain)
        recomputed = jaccard(texts[(row["source"], row["id"])], texts[(m.group(2), named)], n)
        assert recomputed >= report.threshold, (row, recomputed)
        assert abs(recomputed - sim) < 1e-3, (row, recomputed)
    assert report.pairs_considered == report.pairs_verified + report.pairs_rejected
    assert report.pairs_considered == report.pairs_ruled_out + report.pairs_compared
    return report


@pytest.mark.slow
def test_multilingual_drops_are_similar_to_the_kept_document_they_name(multilingual, multilingual_store):
    report = _check_drops_against_kept(multilingual_store, _texts(multilingual / "corpus"))
    # the chain case is there: candidate pairs below the threshold (translations sharing the translators'
    # licence footer), which union-find over the candidates would have merged
    assert report.pairs_rejected > 0 and report.drops > 0


@pytest.mark.slow
def test_multilingual_planted_near_duplicates_caught(multilingual, multilingual_store):
    truth = json.loads((multilingual / "corpus" / "ground_truth.json").read_text())
    kept, fuzzy = _kept(multilingual_store), {r["id"] for r in _fuzzy_drops(multilingual_store)}
    assert truth["near_duplicates"]
    caught = 0
    for dup in truth["near_duplicates"]:  # (a pair dropped by another step, e.g. decontamination, has no survivor)
        pair = {dup["id"], dup["duplicate_of"]}
        assert len(pair & kept) <= 1, dup
        if pair & kept:
            assert pair - kept <= fuzzy, dup
            caught += 1
    assert caught >= len(truth["near_duplicates"]) * 0.8


@pytest.mark.slow
def test_multilingual_same_decisions_for_2_and_4_tasks(multilingual, multilingual_store):
    four = _build_multilingual(multilingual / "four", multilingual / "corpus", 4)

    def decisions(store):
        art = read_store_artifact(str(store / "store.json"))
        return sorted((r["id"], r["detail"]) for r in _fuzzy_drops(store)), art.near_duplicates, _kept(store)

    assert decisions(four) == decisions(multilingual_store)
    from mixture.spec.load import load_spec

    fz = load_spec(str(four.parent / "spec.yaml")).processing.dedup.fuzzy
    assert_same_as_reference(four / "_build" / "work", fz.similarity_threshold, fz.ngram, fz.permutations)


@pytest.mark.slow
def test_multilingual_drops_equal_the_single_task_stages(multilingual, multilingual_store):
    """The partitioned stages (2 tasks here, 4 above) list the drops and evidence of the single-task ones
    (tests/dedup/dedup_reference.py) on the same prepared files."""
    from mixture.spec.load import load_spec

    fz = load_spec(str(multilingual_store.parent / "spec.yaml")).processing.dedup.fuzzy
    assert_same_as_reference(multilingual_store / "_build" / "work", fz.similarity_threshold, fz.ngram,
                             fz.permutations)


# -- the demo corpus -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_demo_drops_are_similar_to_the_kept_document_they_name(built_store):
    from mixture.demo_corpus import read
    from mixture.text.normalize import normalize_text

    texts: dict[tuple[str, str], str] = {}
    for entry in read.manifest(built_store.corpus)["sources"]:
        for _, _, rec in read.iter_records(built_store.corpus, entry):
            if rec is not None and isinstance(rec.get(entry["text_field"]), str) and entry["id_field"] in rec:
                texts.setdefault((entry["name"], str(rec[entry["id_field"]])), normalize_text(rec[entry["text_field"]]))
    report = _check_drops_against_kept(built_store.store, texts)
    assert report.drops > 0
