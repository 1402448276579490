"""The fit merges the term counts the sample tasks wrote instead of tokenising the sample: merged counts equal the
counts of the whole sample (real demo text; Debian's multilingual text in tests/multilingual), the fit reads no
text, and the model and the store are the same for any task count, fill documents included."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml

from mixture.fit.embed import TermCounts
from mixture.fit.part_counts import PartCounts, merge_counts, merged_terms
from mixture.fit.sample_files import FILL, TERM_COLUMNS, TERMS_DIR, read_sample
from tests.conftest import small_spec

SAMPLE_DOCS = 300  # under the small demo corpus's ~640 kept documents: a rate below 1, so fill documents


def _round_trip(part: PartCounts) -> PartCounts:
    """The counts written to Parquet (as the sample task writes them) and read back."""
    tables = []
    for table in (pa.table(part.row_columns()), part.term_table()):
        buf = io.BytesIO()
        pq.write_table(table, buf, compression=None)
        tables.append(pq.read_table(io.BytesIO(buf.getvalue())))
    return PartCounts.from_tables(*tables)


def _same_matrix(a, b) -> bool:
    a, b = a.tocsr(), b.tocsr()
    a.sort_indices()
    b.sort_indices()
    return (a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data))


def check_merge(texts: list[str], n_parts: int, seed: int, leave_out: float = 0.0) -> None:
    """Texts dealt at random to n_parts parts, counted per part, written and read back, merged with the sample in
    another order than the parts (and some rows left out, as fill candidates another task made unnecessary):
    equal to TermCounts.of the sample's texts, for the embedder's and the labels' term selections; the same for
    the parts given in reverse order."""
    rng = np.random.default_rng(seed)
    part_of = rng.integers(0, n_parts, len(texts))
    out = rng.random(len(texts)) < leave_out
    order = [i for i in rng.permutation(len(texts)).tolist() if not out[i]]  # the sample's documents, as texts
    doc_of_text = np.full(len(texts), -1, dtype=np.int64)
    doc_of_text[order] = np.arange(len(order))
    parts, docs = [], []
    for p in range(n_parts):
        idx = np.flatnonzero(part_of == p)
        parts.append(_round_trip(PartCounts.of([texts[i] for i in idx])))
        docs.append(doc_of_text[idx])
    whole = TermCounts.of([texts[i] for i in order])
    df = np.bincount(whole.counts.indices, minlength=len(whole.terms))
    merged = merged_terms(parts, docs)
    assert merged["term"].to_pylist() == whole.terms
    assert merged["df"].to_pylist() == df.tolist()
    assert merged["tf"].to_pylist() == np.asarray(whole.counts.sum(axis=0)).ravel().astype(np.int64).tolist()
    for min_df in (1, 2, 3):
        got = merge_counts(parts, docs, len(order), min_df)
        keep = np.flatnonzero(df >= min_df)
        assert got.terms == [whole.terms[i] for i in keep]
        assert _same_matrix(got.counts, whole.counts[:, keep])
        for max_features in (None, 40, 30_000):
            a, b = got.select(max_features, min_df), whole.select(max_features, min_df)
            assert a.terms == b.terms and _same_matrix(a.counts, b.counts)
        again = merge_counts(parts[::-1], docs[::-1], len(order), min_df)
        assert again.terms == got.terms and _same_matrix(again.counts, got.counts)


@pytest.fixture(scope="module")
def demo_texts(built_store) -> list[str]:
    files = sorted(str(p) for p in built_store.store.glob("cluster=*/quality=*/*.parquet"))
    return ds.dataset(files).to_table(columns=["id", "text"]).sort_by("id")["text"].to_pylist()


@pytest.mark.parametrize("n_parts", [1, 2, 5])
@pytest.mark.parametrize("leave_out", [0.0, 0.1])
def test_counts_merged_from_parts_equal_the_whole_sample(demo_texts, n_parts, leave_out):
    check_merge(demo_texts, n_parts, seed=n_parts, leave_out=leave_out)


def test_merge_of_nothing_and_of_stop_words_only():
    empty = PartCounts.of([])
    assert empty.n_rows == 0 and len(empty.terms) == 0
    got = merge_counts([empty, PartCounts.of(["the and of", "was were"])], [np.zeros(0, np.int64), np.array([0, 1])], 2, 1)
    assert got.terms == [] and got.counts.shape == (2, 0)
    with pytest.raises(ValueError, match="empty vocabulary"):
        got.select(None, 1)
    with pytest.raises(ValueError, match="After pruning"):
        merge_counts([PartCounts.of(["alpha beta", "gamma delta"])], [np.array([0, 1])], 2, 2)


# -- builds ------------------------------------------------------------------------------------------------------
def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _documents(store: Path) -> dict[str, list]:
    files = sorted(str(p) for p in store.glob("cluster=*/quality=*/*.parquet"))
    columns = ["id", "source", "cluster", "quality", "fine_cluster", "cluster_distance", "quality_score", "n_tokens"]
    return ds.dataset(files).to_table(columns=columns).sort_by("id").to_pydict()


@pytest.fixture(scope="module")
def sampled_builds(demo_corpus, tmp_path_factory) -> dict[int, Path]:
    """The small demo spec with sample_docs 300, built with 1, 2 and 4 tasks (work kept): {tasks: spec folder}."""
    from mixture.pipelines.build import build

    out = {}
    for tasks in (1, 2, 4):
        root = tmp_path_factory.mktemp(f"sampled{tasks}")
        spec = small_spec(str(demo_corpus), "store", sample_docs=SAMPLE_DOCS)
        spec["execution"] = {"executor": "local", "tasks": tasks, "workers": 2}
        (root / "spec.yaml").write_text(yaml.safe_dump(spec))
        build(str(root / "spec.yaml"), progress=False, keep_work=True)
        out[tasks] = root
    return out


def test_model_and_store_are_the_same_for_any_task_count(sampled_builds):
    stores = {t: root / "store" for t, root in sampled_builds.items()}
    one = stores[1]
    art = json.loads((one / "store.json").read_text())
    assert 0 < art["fit"]["sample_docs"] < art["counters"]["records_out"]  # a sample, not every document
    for tasks, store in stores.items():
        assert _digests(store / "_model") == _digests(one / "_model"), tasks
        assert _documents(store) == _documents(one), tasks
        other = json.loads((store / "store.json").read_text())
        assert other["clusters"] == art["clusters"] and other["counters"] == art["counters"], tasks
        fitted = ds.dataset(str(store / "_build/work/fit_assignments")).to_table().sort_by("id")
        assert fitted.equals(ds.dataset(str(one / "_build/work/fit_assignments")).to_table().sort_by("id")), tasks


def test_every_source_is_in_the_sample_once_for_any_task_count(sampled_builds):
    """A task that drew nothing of a source it holds writes that source's lowest draw as a fill candidate; the fit
    keeps one per source no task drew (the lowest draw of all), so with 4 tasks it leaves candidates out."""
    left_out = 0
    for tasks, root in sampled_builds.items():
        folder = root / "store/_build/work/sample"
        sample = read_sample(str(folder))
        written = ds.dataset(sorted(str(p) for p in folder.glob("*.parquet"))).to_table(
            columns=["id", "source", "u", FILL]).to_pylist()
        drawn = [r for r in written if not r[FILL]]
        kept = set(sample.rows["id"])
        assert set(sample.rows["source"]) == {r["source"] for r in written}
        assert {r["id"] for r in drawn} <= kept
        fills = {}
        for r in written:
            if r[FILL]:
                fills.setdefault(r["source"], []).append(r)
        for source, candidates in fills.items():
            chosen = [c for c in candidates if c["id"] in kept]
            if source in {r["source"] for r in drawn}:
                assert chosen == []
            else:
                assert chosen == [min(candidates, key=lambda c: (c["u"], c["id"]))]
            left_out += len(candidates) - len(chosen)
        assert len(sample) == len(drawn) + sum(c["id"] in kept for cs in fills.values() for c in cs), tasks
    assert left_out > 0  # the cross-task rule was needed: some task's candidate was left out


def test_the_fit_merges_the_tasks_counts_and_reads_no_text(sampled_builds, tmp_path):
    """The 4-task sample: every file has its term dictionary; the merged counts are those of the sample texts;
    the fit on the files without their text writes the build's model but for the labels (their phrases and names
    come from the exemplars' text), and the fit on files without their counts writes the build's model (it counts
    them itself, as it did before the sample tasks counted)."""
    from mixture.fit.embed import min_df_for
    from mixture.fit.model_store import fit_and_save
    from mixture.pipelines.context import BuildContext
    from mixture.pipelines.partition import fit as fit_stage
    from mixture.spec.models import Spec

    root = sampled_builds[4]
    folder = root / "store/_build/work/sample"
    names = sorted(p.name for p in folder.glob("*.parquet"))
    assert len(names) == 4 and sorted(p.name for p in (folder / TERMS_DIR).glob("*.parquet")) == names
    texts = read_sample(str(folder), text=True)
    n = len(texts)
    whole = TermCounts.of(texts.rows["text"])
    keep = np.flatnonzero(np.bincount(whole.counts.indices, minlength=len(whole.terms)) >= min_df_for(n))
    merged = read_sample(str(folder)).term_counts(min_df_for(n))
    assert "text" not in read_sample(str(folder)).rows
    assert merged.terms == [whole.terms[i] for i in keep] and _same_matrix(merged.counts, whole.counts[:, keep])

    step = fit_stage.steps(BuildContext(Spec.model_validate(yaml.safe_load((root / "spec.yaml").read_text())), str(root),
                                  str(root / "store"), 4))[0]
    model = _digests(root / "store/_model")
    for variant, drop in (("no_text", ["text"]), ("no_counts", list(TERM_COLUMNS))):
        copy = tmp_path / variant / "sample"
        copy.mkdir(parents=True)
        for name in names:
            pq.write_table(pq.read_table(folder / name).drop_columns(drop), copy / name)
        if variant == "no_text":
            shutil.copytree(folder / TERMS_DIR, copy / TERMS_DIR)
        fit_and_save(str(copy), str(tmp_path / variant / "model"), step.params, str(tmp_path / variant / "assigned"))
        got = _digests(tmp_path / variant / "model")
        if variant == "no_text":  # the labels' phrases and names need the exemplars' text: the rest is the same
            got, want = ({k: v for k, v in d.items() if k != "clusters.json"} for d in (got, model))
            assert got == want and len(got) == len(model) - 1
        else:
            assert got == model, variant
