"""`format: datasets` sources: saved datasets (save_to_disk) and load_dataset folders (streaming and prepared) are
read completely, bad records quarantined with their reason, ids stable, the store the same for 2 and 3 tasks."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from mixture.accounting import StoreReader, audit
from mixture.cli import app
from mixture.text.normalize import normalize_text
from tests.hf_datasets.helpers import datasets_spec, write_datasets


def store_rows(store: Path, columns: list[str]) -> list[dict]:
    return [r for f in sorted(store.glob("cluster=*/quality=*/*.parquet")) for r in pq.read_table(f, columns=columns).to_pylist()]


def quarantine_rows(store: Path) -> list[dict]:
    return [r for f in sorted((store / "_quarantine").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


@pytest.fixture(scope="module")
def hf_data(tmp_path_factory, demo_corpus) -> dict:
    root = tmp_path_factory.mktemp("hfds")
    return {"root": root, "truth": write_datasets(root, demo_corpus)}


@pytest.fixture(scope="module")
def hf_build(hf_data):
    """Two builds of one spec over the datasets, with 2 and with 3 tasks (the HF cache in the test folder)."""
    import datasets

    from mixture.pipelines.build import build

    root = hf_data["root"]
    out = dict(hf_data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", str(root / "hf_cache"))
        for tasks in (2, 3):
            spec_path = root / f"spec{tasks}.yaml"
            spec_path.write_text(yaml.safe_dump(datasets_spec(root, tasks, f"store{tasks}")))
            out[tasks] = {"artifact": build(str(spec_path), progress=False).model_dump(mode="json"), "store": root / f"store{tasks}",
                          "spec": spec_path}
    return out


def direct_reads(root: Path) -> dict[str, list[dict]]:
    """Every dataset as `datasets` itself reads it (load_from_disk / load_dataset), rows in order."""
    import datasets

    saved_one = datasets.load_from_disk(str(root / "saved_one"))
    return {
        "saved-dict": datasets.load_from_disk(str(root / "saved_dict"))["train"].to_list(),
        "saved-one": saved_one.to_list(),
        "jsonl-folder": list(datasets.load_dataset(str(root / "jsonl_folder"), split="train", streaming=True)),
        "parquet-folder": list(datasets.load_dataset(str(root / "parquet_folder"), split="train", streaming=True)),
    }


@pytest.mark.slow
def test_every_record_counted_and_bad_ones_quarantined(hf_build):
    root, truth = hf_build["root"], hf_build["truth"]
    art, store = hf_build[2]["artifact"], hf_build[2]["store"]
    direct = direct_reads(root)
    sources = {s["name"]: s for s in art["sources"]}
    assert {n: s["docs_in"] for n, s in sources.items()} == {n: len(rows) for n, rows in direct.items()}
    c = art["counters"]
    assert c["records_in"] == sum(len(rows) for rows in direct.values())
    assert c["records_in"] == c["records_out"] + c["bad_input"] + c["filtered"]
    assert c["filtered"] == 0 and c["bad_input"] == 8

    quarantine = quarantine_rows(store)
    # saved DatasetDict (two Arrow files of split train): ids of the files' rows, in dataset order
    files = sorted({r["file"] for r in quarantine if r["source"] == "saved-dict"})
    assert files and all(f.startswith("train/data-") and f.endswith(".arrow") for f in files)
    first_file_rows = len(datasets_file(root / "saved_dict" / "train" / "data-00000-of-00002.arrow"))
    got = sorted((r["record"] + (first_file_rows if r["file"].endswith("00001-of-00002.arrow") else 0), r["reason"])
                 for r in quarantine if r["source"] == "saved-dict")
    assert got == sorted(truth["train_bad"].items())
    # the JSONL folder read by load_dataset (streaming): shard 0 is its first file, where the bad records are
    got = sorted((r["file"], r["record"], r["reason"]) for r in quarantine if r["source"] == "jsonl-folder")
    assert got == sorted(("train/shard-00000-of-00003", pos, reason) for pos, reason in truth["jsonl_bad"].items())
    by_reason = Counter(r["reason"] for r in quarantine)
    assert by_reason == {"missing_text": 2, "wrong_type": 2, "empty_text": 4} == art["bad_input_by_reason"]
    for r in quarantine:  # the raw record is kept: its id and (when present) its text value
        raw = json.loads(r["raw"]) if r["raw"] else {}
        assert raw.get("id", "").startswith("bad-"), r
        assert r["detail"], r
    wrong = [json.loads(r["raw"]) for r in quarantine if r["reason"] == "wrong_type"]
    assert [w["text"] for w in wrong] == [7, 7]
    missing = [r for r in quarantine if r["reason"] == "missing_text"]
    assert all("'text'" in r["detail"] for r in missing)


@pytest.mark.slow
def test_kept_documents_are_what_datasets_reads(hf_build):
    root, store = hf_build["root"], hf_build[2]["store"]
    direct = direct_reads(root)
    kept = {(r["source"], r["id"]): r for r in store_rows(store, ["id", "text", "source", "origin"])}
    good = lambda rows: [r for r in rows if isinstance(r.get("text"), str) and r["text"].strip()]  # noqa: E731
    for name in ("saved-dict", "jsonl-folder", "parquet-folder"):  # id_field: id
        want = {r["id"]: normalize_text(r["text"]) for r in good(direct[name])}
        got = {i: r["text"] for (s, i), r in kept.items() if s == name}
        assert got == want, name
    # saved-one has no id column (id_field: null): ids are <source>/<Arrow file>/<row in the file>
    import datasets

    want = {}
    for f in sorted((root / "saved_one").glob("data-*.arrow")):
        for i, row in enumerate(datasets_file(f)):
            want[f"saved-one/{f.name}/{i}"] = normalize_text(row["text"])
    got = {i: r["text"] for (s, i), r in kept.items() if s == "saved-one"}
    assert got == want and len(want) == len(direct["saved-one"])
    assert isinstance(datasets.load_from_disk(str(root / "saved_one")), datasets.Dataset)
    assert audit(StoreReader(str(store))).ok


@pytest.mark.slow
def test_store_is_the_same_for_two_and_three_tasks(hf_build):
    a, b = hf_build[2], hf_build[3]
    assert a["artifact"]["counters"] == b["artifact"]["counters"]
    assert a["artifact"]["sources"] == b["artifact"]["sources"]
    no_shards = lambda art: [{k: v for k, v in c.items() if k != "shards"} for c in art["cells"]]  # noqa: E731
    assert no_shards(a["artifact"]) == no_shards(b["artifact"])  # one shard per task and cell
    cols = ["id", "source", "origin", "text", "cluster", "quality", "n_tokens"]
    key = lambda r: (r["source"], r["id"])  # noqa: E731
    assert sorted(store_rows(a["store"], cols), key=key) == sorted(store_rows(b["store"], cols), key=key)
    q = lambda s: sorted((r["source"], r["file"], r["record"], r["reason"], r["raw"]) for r in quarantine_rows(s))  # noqa: E731
    assert q(a["store"]) == q(b["store"])


def test_tasks_share_the_units_out(hf_data, tmp_path):
    """Each unit (Arrow file, streaming shard) goes to exactly one task, for any task count."""
    from mixture.pipelines.context import BuildContext
    from mixture.pipelines.sources.files import SourceReader
    from mixture.spec.models import Spec

    spec = Spec.model_validate(datasets_spec(hf_data["root"], 2, str(tmp_path / "store")))
    spec = spec.model_copy(update={"sources": [s for s in spec.sources if s.streaming]})  # no cache to prepare
    sources = BuildContext(spec, str(tmp_path), str(tmp_path / "store"), 2).sources()
    units = [(s.name, f) for s in sources for f in s.files]
    assert [s.detail.kind for s in sources] == ["saved", "saved", "streaming"]
    assert units == [("saved-dict", "train/data-00000-of-00002.arrow"), ("saved-dict", "train/data-00001-of-00002.arrow"),
                     *(("saved-one", f"data-{i:05d}-of-00003.arrow") for i in range(3)),
                     *(("jsonl-folder", f"train/shard-{i:05d}-of-00003") for i in range(3))]
    assert all(size for s in sources for size in s.sizes)
    reader = SourceReader(sources, str(tmp_path / "tally"))
    for world in (1, 2, 3, 4):
        shares = [[(s.name, f) for _, s, f in reader.shard(r, world)] for r in range(world)]
        assert sorted(u for share in shares for u in share) == sorted(units), world
        assert all(shares) or world > len(units)


def datasets_file(path: Path):
    import datasets

    return datasets.Dataset.from_file(str(path))


def write_spec(tmp_path: Path, root: Path, **change) -> Path:
    spec = datasets_spec(root, 2, str(tmp_path / "store"))
    src = spec["sources"][0]
    src.update(change)
    spec["sources"] = [src]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"split": "test"}, "split", ["no split 'test'", "'train'", "'validation'"]),
    ({"split": None}, "split", ["splits 'train', 'validation'", "set `split`"]),
    ({"text_field": "body"}, "text_field", ["no column 'body'", "'id'", "'text'"]),
    ({"subset": "en"}, "subset", ["save_to_disk"]),
    ({"uri": "nowhere"}, "uri", ["no folder"]),
    ({"uri": "hf://datasets/org/name/extra/path"}, "uri", ["hf://datasets/<org>/<name>"]),
    ({"format": "parquet", "split": "train"}, "", ["split applies to format: datasets only"]),
])
def test_validate_names_the_field_before_any_work(hf_data, tmp_path, change, field, words):
    spec = write_spec(tmp_path, hf_data["root"], **change)
    res = CliRunner().invoke(app, ["validate", str(spec)])
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert f"sources[0]{'.' + field if field else ''}" in out, out
    for w in words:
        assert w in out, (w, out)
    res = CliRunner().invoke(app, ["build", str(spec)])
    assert res.exit_code == 2 and not (tmp_path / "store").exists(), res.output


def test_validate_reports_each_form(hf_data, tmp_path):
    root = hf_data["root"]
    spec = datasets_spec(root, 2, str(tmp_path / "store"))
    spec["sources"].append({"name": "hub", "uri": "hf://datasets/org/name", "format": "datasets", "subset": "en"})
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "saved dataset, split 'train': 2 Arrow file(s)" in out
    assert "saved Dataset: 3 Arrow file(s)" in out
    assert "data files (load_dataset), split 'train': 3 shard(s)" in out
    assert "hub dataset (load_dataset, resolved when the build starts)" in out


def test_schema_describes_the_datasets_fields():
    res = CliRunner().invoke(app, ["schema"])
    props = json.loads(res.output)["$defs"]["Source"]["properties"]
    assert "datasets" in props["format"]["enum"]
    for f in ("split", "subset", "revision", "streaming"):
        assert "format: datasets" in props[f]["description"], f


def test_saved_dataset_at_an_fsspec_uri(hf_data):
    """A saved dataset at a non-local URI is checked, listed and read file by file like a local one."""
    import fsspec

    from mixture.pipelines.sources.files import SourceReader
    from mixture.pipelines.sources.records import SourceFiles
    from mixture.spec.datasets_source import check_dataset_source, dataset_units
    from mixture.spec.models import Source

    local = str(hf_data["root"] / "saved_dict")
    fsspec.filesystem("memory").put(local, "/hfds-test/saved_dict", recursive=True)
    remote = "memory://hfds-test/saved_dict"
    src = Source(name="saved-dict", uri=remote, format="datasets", split="train")
    assert check_dataset_source(src, remote) == []
    assert check_dataset_source(src.model_copy(update={"text_field": "body"}), remote)[0][0] == "text_field"

    def read(uri: str) -> list[tuple]:
        units = dataset_units(src, uri)
        files = SourceFiles(src.name, src.category, src.format, units.base, units.units, src.text_field, src.id_field,
                            False, units.sizes, units)
        reader = SourceReader([files], "memory://hfds-test/tally")
        return [(d.id, d.text, d.metadata.get("_bad")) for f in units.units for d in reader.read_file(files, f)]

    docs = read(remote)
    # the demo corpus's multilingual records (what this machine has) + 40 code records + the 4 bad ones
    assert docs == read(local) and len(docs) == hf_data["truth"]["train_rows"] > 40 + 4
    assert sorted(r for _, _, r in docs if r) == ["empty_text", "empty_text", "missing_text", "wrong_type"]


def test_read_time_problems_are_quarantined(tmp_path):
    """What validation cannot see (a hub dataset, a file changed since) is bad input at read time, every row counted:
    a saved dataset without the text column, an Arrow file that is not one, a data file that does not parse."""
    import datasets

    from mixture.pipelines.sources.files import SourceReader
    from mixture.pipelines.sources.records import SourceFiles
    from mixture.spec.datasets_source import dataset_units
    from mixture.spec.models import Source

    datasets.Dataset.from_dict({"body": ["one text", "two texts", "three"]}).save_to_disk(str(tmp_path / "other"))
    folder = tmp_path / "files" / "data"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text('{"text": "a fine first record"}\n{"text": "and a second"}\n')
    (folder / "b.jsonl").write_text('{"text": "fine"}\n')

    def read(uri: str, listed_with: str = "text") -> tuple[SourceReader, SourceFiles, list]:
        """Listed with text_field `listed_with` (as when the build started), read with text_field: text."""
        units = dataset_units(Source(name="s", uri=uri, format="datasets", text_field=listed_with), uri)
        files = SourceFiles("s", "web", "datasets", units.base, units.units, "text", "id", False, units.sizes, units)
        reader = SourceReader([files], str(tmp_path / "tally"))
        return reader, files, [d for f in units.units for d in reader.read_file(files, f)]

    _, _, docs = read(str(tmp_path / "other"), listed_with="body")
    assert [(d.metadata["_bad"], d.metadata["_record"]) for d in docs] == [("missing_text", i) for i in range(3)]
    assert json.loads(docs[1].metadata["_raw"]) == {"body": "two texts"}

    arrow = next((tmp_path / "other").glob("*.arrow"))
    arrow.write_bytes(b"not an arrow stream")
    _, _, docs = read(str(tmp_path / "other"), listed_with="body")
    assert [d.metadata["_bad"] for d in docs] == ["unreadable_file"] and docs[0].metadata["_file"] == arrow.name

    reader, files, docs = read(str(tmp_path / "files"))
    assert [d.id for d in docs] == [f"s/train/shard-0000{f}-of-00002/{i}" for f, i in ((0, 0), (0, 1), (1, 0))]
    (folder / "b.jsonl").write_text('{"text": "fine"}\n{"text": broken\n')  # changed after the listing
    docs = [d for f in files.files for d in reader.read_file(files, f)]
    assert [d.metadata.get("_bad") for d in docs][:2] == [None, None]
    assert docs[-1].metadata["_bad"] == "unreadable_file" and docs[-1].metadata["_file"] == "train/shard-00001-of-00002"


def test_a_hub_dataset_that_cannot_be_resolved_stops_the_build_with_its_name(tmp_path, monkeypatch):
    """A hub name passes validate (no network then) and is resolved when the build starts; offline here."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    spec = {"name": "hub", "sources": [{"name": "fw", "uri": "hf://datasets/someorg/somecorpus", "format": "datasets",
                                        "split": "train"}],
            "store": {"uri": str(tmp_path / "store")}, "execution": {"tasks": 2, "workers": 1}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert CliRunner().invoke(app, ["validate", str(path)]).exit_code == 0
    res = CliRunner().invoke(app, ["build", str(path)])
    out = " ".join(res.output.split())
    assert res.exit_code == 1, res.output
    assert "source 'fw': cannot resolve hub dataset 'someorg/somecorpus' at revision main" in out, out
    assert not (tmp_path / "store" / "store.json").exists() and not (tmp_path / "store" / "_build" / "LOCK").exists()
