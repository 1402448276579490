"""`format: datasets` sources: what the uri names (a save_to_disk folder, a hub dataset, a local folder of data
files), its checks, its line in `mixture validate`, its manifest entry, and the units the build's tasks share (Arrow
files or `IterableDataset` shards)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from fsspec.core import url_to_fs

from mixture.spec.inputs import ListedSource, files_under, list_files
from mixture.spec.models import Source
from mixture.spec.source_formats import SourceError, SourceUnits
from mixture.store.formats import SourceInputs

HUB_PREFIX = "hf://datasets/"
_HUB_RE = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
DATASET_DICT_JSON = "dataset_dict.json"  # datasets.config.DATASETDICT_JSON_FILENAME (save_to_disk of a DatasetDict)
STATE_JSON = "state.json"  # datasets.config.DATASET_STATE_JSON_FILENAME (save_to_disk of a Dataset)
INFO_JSON = "dataset_info.json"

Form = Literal["hub", "saved", "folder"]


@dataclass(frozen=True)
class DatasetUnits:
    """What the tasks of the build share out: `units` (with their bytes, None if unknown) under `base`.

    saved / prepared: Arrow files relative to `base` (the save_to_disk folder / the prepared cache folder);
    streaming: `<split>/shard-IIIII-of-NNNNN`, shard I of the `IterableDataset` that `load` opens."""

    kind: Literal["saved", "prepared", "streaming"]
    base: str
    units: tuple[str, ...]
    sizes: tuple[int | None, ...]
    load: dict[str, Any] = field(default_factory=dict)  # streaming: load_dataset(path, name, split, revision)


@dataclass
class SavedSplit:
    files: list[str]  # Arrow files relative to the saved folder, in the dataset's order
    columns: list[str] | None  # from dataset_info.json (None: not recorded)


def hub_repo(uri: str) -> str | None:
    """`hf://datasets/<org>/<name>` -> `<org>/<name>`; None for any other uri."""
    if not uri.startswith(HUB_PREFIX):
        return None
    repo = uri[len(HUB_PREFIX):].strip("/")
    if not _HUB_RE.match(repo):
        raise ValueError(f"expected hf://datasets/<org>/<name>, found {uri!r} (a revision goes in `revision`, a "
                         "subset in `subset`; for the files of a folder of the repository use format: hf)")
    return repo


def _read_json(fs, path: str) -> Any:
    with fs.open(path, "rb") as f:
        return json.loads(f.read())


def saved_splits(uri: str) -> dict[str | None, SavedSplit] | None:
    """The splits of a folder written by `save_to_disk` ({split: files, columns}); a single saved Dataset is keyed by
    its split name (None if it has none). None when `uri` holds no saved dataset."""
    fs, root = url_to_fs(uri)
    root = root.rstrip("/")

    def one(folder: str, prefix: str) -> SavedSplit:
        state = _read_json(fs, f"{folder}/{STATE_JSON}")
        files = [prefix + f["filename"] for f in state.get("_data_files", [])]
        columns = None
        if fs.exists(f"{folder}/{INFO_JSON}"):
            features = _read_json(fs, f"{folder}/{INFO_JSON}").get("features")
            columns = list(features) if isinstance(features, dict) else None
        return SavedSplit(files, columns)

    if fs.exists(f"{root}/{DATASET_DICT_JSON}"):
        splits = _read_json(fs, f"{root}/{DATASET_DICT_JSON}").get("splits", [])
        return {s: one(f"{root}/{s}", f"{s}/") for s in splits}
    if fs.exists(f"{root}/{STATE_JSON}"):
        name = _read_json(fs, f"{root}/{STATE_JSON}").get("_split")
        return {name: one(root, "")}
    return None


def dataset_form(src: Source, uri: str) -> Form:
    """hub (hf://datasets/...), saved (a save_to_disk folder at any fsspec URI) or folder (local data files)."""
    try:
        if hub_repo(uri):
            return "hub"
    except ValueError as exc:
        raise SourceError(src.name, str(exc)) from None
    try:
        fs, path = url_to_fs(uri)
        is_dir = fs.isdir(path)
        saved = is_dir and (fs.exists(f"{path.rstrip('/')}/{DATASET_DICT_JSON}")
                            or fs.exists(f"{path.rstrip('/')}/{STATE_JSON}"))
    except Exception as exc:  # permission, bad protocol, unreachable bucket
        raise SourceError(src.name, f"cannot list {uri!r}: {type(exc).__name__}: {exc}") from None
    if saved:
        return "saved"
    if not is_dir:
        raise SourceError(src.name, f"no folder at {uri!r}: expected a folder written by save_to_disk, a local "
                                           "folder of data files or hf://datasets/<org>/<name>")
    if "://" in uri:
        raise SourceError(src.name, f"{uri!r} holds no dataset written by save_to_disk (no {DATASET_DICT_JSON} "
                                           f"or {STATE_JSON}); for Parquet/JSONL files at a remote URI use format: "
                                           "parquet or jsonl")
    if src.revision:
        raise SourceError(src.name, "revision applies to a hub dataset (hf://datasets/...), not a local folder",
                                 "revision")
    return "folder"


def pick_split(src: Source, available: list[str | None], what: str) -> str | None:
    """The split to read: `src.split`, else the only one; an error names the splits there are."""
    names = ", ".join(repr(s) for s in available) or "none"
    if src.split is not None:
        if src.split in available:
            return src.split
        if available == [None]:
            raise SourceError(src.name, f"{what} is one Dataset without a split name; remove `split`", "split")
        raise SourceError(src.name, f"{what} has no split {src.split!r} (splits: {names})", "split")
    if len(available) == 1:
        return available[0]
    raise SourceError(src.name, f"{what} has splits {names}; set `split` to the one to read", "split")


def _check_columns(src: Source, columns: list[str] | None, what: str) -> None:
    if columns is not None and src.text_field not in columns:
        raise SourceError(src.name, f"{what} has no column {src.text_field!r} (columns: {columns[:10]}); "
                                           "set text_field", "text_field")


def _saved(src: Source, uri: str) -> tuple[str | None, SavedSplit]:
    if src.subset or src.revision:
        raise SourceError(src.name, "subset and revision apply to datasets read with load_dataset, not a "
                                           "folder written by save_to_disk", "subset" if src.subset else "revision")
    splits = saved_splits(uri)
    assert splits is not None  # dataset_form found the marker file
    what = f"the saved dataset at {uri!r}"
    split = pick_split(src, list(splits), what)
    saved = splits[split]
    _check_columns(src, saved.columns, what if split is None else f"split {split!r} of {what}")
    return split, saved


def _open_streaming(src: Source, path: str, revision: str | None, what: str):
    """load_dataset(streaming=True) of every split; returns (split, IterableDataset)."""
    from datasets import load_dataset

    try:
        splits = load_dataset(path, name=src.subset, revision=revision, streaming=True)
    except Exception as exc:  # no data files, unknown subset, unreachable hub: datasets' message says which
        raise SourceError(src.name, f"load_dataset({path!r}) failed: {type(exc).__name__}: {exc}") from None
    split = pick_split(src, list(splits), what)
    ds = splits[split]
    _check_columns(src, list(ds.features) if ds.features is not None else None, f"split {split!r} of {what}")
    return split, ds


def saved_files(src: Source, uri: str) -> list[str]:
    """The Arrow files of the split a saved dataset's source reads, relative to its folder."""
    return _saved(src, uri)[1].files


def check_dataset_source(src: Source, uri: str) -> list[tuple[str, str]]:
    """(spec field, message) of every problem `mixture validate` finds without the network: a local saved dataset or
    data-file folder must exist and hold the split and the text field. Hub datasets resolve at build time."""
    try:
        form = dataset_form(src, uri)
        if form == "saved":
            _saved(src, uri)
        elif form == "folder":
            _open_streaming(src, uri, None, f"the data files at {uri!r}")
    except SourceError as exc:
        return [(exc.field, str(exc))]
    return []


def describe_dataset_source(src: Source, uri: str) -> tuple[str, list[str]]:
    """Its line in `mixture validate`: what the source is and how much of it there is (and no warnings)."""
    form = dataset_form(src, uri)
    if form == "hub":
        return "hub dataset (load_dataset, resolved when the build starts)", []
    if form == "saved":
        split, saved = _saved(src, uri)
        what = "saved Dataset" if split is None else f"saved dataset, split {split!r}"
        return f"{what}: {len(saved.files)} Arrow file(s)", []
    split, ds = _open_streaming(src, uri, None, f"the data files at {uri!r}")
    return f"data files (load_dataset), split {split!r}: {ds.num_shards} shard(s)", []


def dataset_inputs(src: Source, uri: str) -> ListedSource:
    """The manifest entry of the source, without preparing it: a saved dataset's Arrow files, a hub dataset's commit
    (one request), a local folder's data files. Its units are resolved when its stage is built (`dataset_units`: a
    hub dataset with `streaming: false` is downloaded and prepared then)."""
    form = dataset_form(src, uri)
    if form == "saved":
        entry = SourceInputs(name=src.name, base=uri, files=files_under(uri, saved_files(src, uri)))
    elif repo := hub_repo(uri):
        entry = SourceInputs(name=src.name, base=uri, files=[], revision=hub_revision(src, repo))
    else:
        entry = SourceInputs(name=src.name, base=uri, files=list_files(uri))
    return ListedSource(entry, uri, (), ())


def _sizes(fs, paths: list[str]) -> tuple[int | None, ...]:
    try:
        return tuple(fs.info(p).get("size") for p in paths)
    except Exception:  # noqa: BLE001 - sizes only balance the tasks
        return (None,) * len(paths)


def hub_revision(src: Source, repo: str) -> str:
    """The commit the build reads (so every task sees the same files)."""
    from huggingface_hub import HfApi

    try:
        return HfApi().dataset_info(repo, revision=src.revision).sha
    except Exception as exc:
        raise SourceError(src.name, f"cannot resolve hub dataset {repo!r} at revision "
                                           f"{src.revision or 'main'}: {type(exc).__name__}: {exc}") from None


def _shard_sizes(src: Source, path: str, revision: str | None, split: str, n: int) -> tuple[int | None, ...]:
    """Bytes of each streaming shard, taken from its data file when there is one file per shard (balance only)."""
    from datasets import load_dataset_builder

    try:
        files = list(load_dataset_builder(path, name=src.subset, revision=revision).config.data_files[split])
        if len(files) != n:
            return (None,) * n
        fs, _ = url_to_fs(files[0])
        return _sizes(fs, [url_to_fs(f)[1] for f in files])
    except Exception:  # noqa: BLE001 - sizes only balance the tasks
        return (None,) * n


def dataset_source_units(src: Source, uri: str, listed: ListedSource) -> SourceUnits:
    """The units the build's tasks share (`dataset_units`); the reader opens them as `detail` tells."""
    units = dataset_units(src, uri)
    return SourceUnits(units.base, units.units, units.sizes, units)


def dataset_units(src: Source, uri: str) -> DatasetUnits:
    """The units of a `format: datasets` source, resolved when the build starts (hub datasets need the network);
    raises SourceError naming the source and the field to fix."""
    form = dataset_form(src, uri)
    if form == "saved":
        _, saved = _saved(src, uri)
        fs, root = url_to_fs(uri)
        base = uri.rstrip("/")
        return DatasetUnits("saved", base, tuple(saved.files), _sizes(fs, [f"{root.rstrip('/')}/{f}" for f in saved.files]))
    repo = hub_repo(uri)
    path = repo or uri
    revision = hub_revision(src, repo) if repo else None
    what = f"hub dataset {repo!r}" if repo else f"the data files at {uri!r}"
    split, ds = _open_streaming(src, path, revision, what)
    if src.streaming:
        n = ds.num_shards
        return DatasetUnits("streaming", path, tuple(f"{split}/shard-{i:05d}-of-{n:05d}" for i in range(n)),
                            _shard_sizes(src, path, revision, split, n),
                            {"path": path, "name": src.subset, "split": split, "revision": revision})
    from datasets import load_dataset

    try:  # download and prepare the Arrow cache here, once; the tasks read its files
        prepared = load_dataset(path, name=src.subset, split=split, revision=revision)
    except Exception as exc:
        raise SourceError(src.name, f"load_dataset({path!r}, split={split!r}) failed: "
                                           f"{type(exc).__name__}: {exc}") from None
    files = [f["filename"] for f in prepared.cache_files]
    folders = {os.path.dirname(f) for f in files}
    if not files or len(folders) != 1:
        raise SourceError(src.name, f"load_dataset({path!r}) gave no single cache folder ({sorted(folders)}); "
                                           "use streaming: true", "streaming")
    base = folders.pop()
    return DatasetUnits("prepared", base, tuple(os.path.basename(f) for f in files),
                        tuple(os.path.getsize(f) for f in files))
