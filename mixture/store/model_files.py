"""The frozen fit's files under `_model/`, defined once: what each holds (named arrays with their dtype and shape, or
a JSON model), `read_model_files`/`read_model_file` that read and check them, `write_model_files` that writes them."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Generic, Literal, TypeVar

import fsspec
import numpy as np
from pydantic import Field, TypeAdapter, ValidationError, model_validator

from mixture.store.formats import ClusterLabel, FitInfo, Format, FormatError, load_json, validation_problems
from mixture.store.io import write_atomic

T = TypeVar("T")
HINT = "the store's frozen model (`_model/`) is incomplete or of another format: build the store again"


# -- the JSON files ------------------------------------------------------------------------------------------------
class TypeCalibration(Format):
    """One content type's quantile map (`calibration.json`, by content type)."""

    knots: list[float] = Field(description="raw-score quantiles at 0, .01, …, 1 of its sample documents")
    n: int = Field(ge=0, description="its sample documents")
    pooled: bool = Field(description="too few documents: the map of the whole sample")
    raw_cutoffs: list[float] = Field(description="raw scores at the calibrated bucket edges")


GroupMap = Literal["own", "shape", "content_type"]


class GroupCalibration(Format):
    """One (content type, language) group's quantile map (`calibration_groups.json`, by `content_type/language`)."""

    content_type: str = Field(description="content type")
    language: str = Field(description="language code")
    n: int = Field(ge=0, description="its sample documents")
    fallback: bool = Field(description="fewer than group_min_docs: no empirical map of its own (see `map`)")
    map: GroupMap | None = Field(
        None, description="own: its empirical quantiles; shape: its own median and spread, the shape pooled over "
        "`shape_groups`; content_type: its content type's map. Absent in stores of older code: own unless fallback")
    shape_groups: list[str] | None = Field(None, description="map shape: the groups its shape was pooled over")
    centre: float | None = Field(None, description="map shape: the median of its raw scores")
    spread: float | None = Field(None, description="map shape: the interquartile range of its raw scores")
    knots: list[float] | None = Field(None, description="its raw-score quantiles (absent for map content_type)")
    raw_cutoffs: list[float] = Field(description="raw scores at the calibrated bucket edges for this group")

    @model_validator(mode="after")
    def _knots_unless_type_map(self) -> GroupCalibration:
        if self.map is None:  # written by older code: a fallback group used its type's map
            self.map = "content_type" if self.fallback else "own"
        if (self.knots is None) != (self.map == "content_type"):
            raise ValueError("a group has knots of its own exactly when it is not calibrated with its type's map")
        if self.fallback == (self.map == "own"):
            raise ValueError("a group has an empirical map of its own exactly when it is not a fallback")
        return self


class SentenceEmbedderFile(Format):
    """`embedder.npz` of a sentence-transformers embedder: JSON naming the model (its weights stay outside)."""

    kind: Literal["sentence"] = Field(description="sentence")
    model_path: str = Field(description="local path of the sentence-transformers model")


# -- the array files -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Array:
    """One array of an npz file: its name, its dtype kind (numpy's: f float, i signed, u unsigned integer) and its
    dimensions by name (one name is one size in the whole file)."""

    name: str
    kind: str
    dims: tuple[str, ...]


def _check_arrays(arrays: dict[str, np.ndarray], spec: tuple[Array, ...], file: str) -> dict[str, int]:
    """The sizes of the named dimensions; FormatError naming the file and each missing or ill-shaped array."""
    problems, sizes = [], {}
    for a in spec:
        if a.name not in arrays:
            problems.append((a.name, f"required array is missing (found {', '.join(sorted(arrays)) or 'none'})"))
            continue
        x = arrays[a.name]
        if x.dtype.kind != a.kind or x.ndim != len(a.dims):
            problems.append((a.name, f"expected {len(a.dims)}-D {_KINDS[a.kind]} ({', '.join(a.dims)}), found "
                                     f"{x.ndim}-D {x.dtype} {x.shape}"))
            continue
        for dim, size in zip(a.dims, x.shape, strict=True):
            if sizes.setdefault(dim, size) != size:
                problems.append((a.name, f"dimension {dim} is {size}, {sizes[dim]} in an array before it"))
    if problems:
        raise FormatError(file, problems, HINT)
    return sizes


_KINDS = {"f": "float", "i": "signed integer", "u": "unsigned integer"}


def _load_npz(data: bytes, file: str) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {name: z[name] for name in z.files}
    except (ValueError, OSError) as exc:
        raise FormatError(file, [("", f"not an npz file: {exc}")], HINT) from None


@dataclass(frozen=True)
class Centroids:
    """`centroids.npz` (compressed): the fine k-means centroids, the cluster of each, and the cluster centroids."""

    fine_centroids: np.ndarray  # (fine_k, dim) float32, unit norm
    lookup: np.ndarray  # (fine_k,) int32: the cluster of each fine centroid
    centroids: np.ndarray  # (k, dim) float32, unit norm

    ARRAYS: ClassVar = (Array("fine_centroids", "f", ("fine_k", "dim")), Array("lookup", "i", ("fine_k",)),
                        Array("centroids", "f", ("k", "dim")))

    @classmethod
    def decode(cls, data: bytes, file: str) -> Centroids:
        arrays = _load_npz(data, file)
        sizes = _check_arrays(arrays, cls.ARRAYS, file)
        lookup = arrays["lookup"]
        if len(lookup) and not (lookup.min() >= 0 and lookup.max() < sizes["k"]):
            raise FormatError(file, [("lookup", f"a cluster outside 0..{sizes['k'] - 1}")], HINT)
        return cls(**{a.name: arrays[a.name] for a in cls.ARRAYS})

    def encode(self) -> bytes:
        buf = io.BytesIO()
        np.savez_compressed(buf, **{a.name: getattr(self, a.name) for a in self.ARRAYS})
        return buf.getvalue()

    @property
    def dim(self) -> int:
        return self.centroids.shape[1]


@dataclass(frozen=True)
class LexicalEmbedderFile:
    """`embedder.npz` of the lexical embedder (not compressed: float components barely compress and zlib took
    longer than the rest of the save): `terms` is the vocabulary as UTF-8, one term per line (terms are letter
    runs), `idf` its weights and `components` the SVD projection."""

    vocabulary: list[str]
    idf: np.ndarray  # (terms,) float32
    components: np.ndarray  # (dim, terms) float32

    ARRAYS: ClassVar = (Array("terms", "u", ("bytes",)), Array("idf", "f", ("terms",)),
                        Array("components", "f", ("dim", "terms")))

    @classmethod
    def decode(cls, data: bytes, file: str) -> LexicalEmbedderFile:
        arrays = _load_npz(data, file)
        sizes = _check_arrays(arrays, cls.ARRAYS, file)
        text = arrays["terms"].tobytes().decode("utf-8")
        vocabulary = text.split("\n") if text else []
        if len(vocabulary) != sizes["terms"]:
            raise FormatError(file, [("terms", f"{len(vocabulary)} terms for {sizes['terms']} idf weights")], HINT)
        return cls(vocabulary, arrays["idf"], arrays["components"])

    def encode(self) -> bytes:
        buf = io.BytesIO()
        terms = np.frombuffer("\n".join(self.vocabulary).encode("utf-8"), dtype=np.uint8)
        np.savez(buf, terms=terms, idf=self.idf, components=self.components)
        return buf.getvalue()

    @property
    def dim(self) -> int:
        return self.components.shape[0]


EmbedderFile = LexicalEmbedderFile | SentenceEmbedderFile


def _decode_json(adapter: TypeAdapter[T]) -> Callable[[bytes, str], T]:
    def decode(data: bytes, file: str) -> T:
        try:
            return adapter.validate_python(load_json(data, file, HINT))
        except ValidationError as exc:
            raise FormatError(file, validation_problems(exc), HINT) from None

    return decode


def _encode_json(adapter: TypeAdapter[T]) -> Callable[[T], bytes]:
    return lambda value: json.dumps(adapter.dump_python(value, mode="json", exclude_none=True), indent=1).encode()


_decode_sentence = _decode_json(TypeAdapter(SentenceEmbedderFile))


def _decode_embedder(data: bytes, file: str) -> EmbedderFile:
    if data[:1] == b"{":
        return _decode_sentence(data, file)
    return LexicalEmbedderFile.decode(data, file)


def _encode_embedder(embedder: EmbedderFile) -> bytes:
    if isinstance(embedder, LexicalEmbedderFile):
        return embedder.encode()
    return json.dumps(embedder.model_dump(mode="json")).encode()


# -- the files -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelFile(Generic[T]):
    """One file of `_model/`: its name and how its bytes are read (checked) and written."""

    name: str
    decode: Callable[[bytes, str], T]  # (bytes, file named in errors) -> value; FormatError when it is wrong
    encode: Callable[[T], bytes]


def _json_file(name: str, kind: Any) -> ModelFile:
    adapter = TypeAdapter(kind)
    return ModelFile(name, _decode_json(adapter), _encode_json(adapter))


EMBEDDER: ModelFile[EmbedderFile] = ModelFile("embedder.npz", _decode_embedder, _encode_embedder)
CENTROIDS: ModelFile[Centroids] = ModelFile("centroids.npz", Centroids.decode, Centroids.encode)
CALIBRATION: ModelFile[dict[str, TypeCalibration]] = _json_file("calibration.json", dict[str, TypeCalibration])
GROUPS: ModelFile[dict[str, GroupCalibration]] = _json_file("calibration_groups.json", dict[str, GroupCalibration])
CLUSTERS: ModelFile[list[ClusterLabel]] = _json_file("clusters.json", list[ClusterLabel])
FIT: ModelFile[FitInfo] = _json_file("fit.json", FitInfo)


@dataclass(frozen=True)
class ModelFiles:
    """Every file of `_model/`, each field read and written as the ModelFile of the same name in FILES."""

    embedder: EmbedderFile
    centroids: Centroids
    calibration: dict[str, TypeCalibration]  # by content type
    groups: dict[str, GroupCalibration]  # by `content_type/language`; empty: calibrated per content type only
    clusters: list[ClusterLabel]  # cluster 0..k-1
    fit: FitInfo


FILES: dict[str, ModelFile] = {"embedder": EMBEDDER, "centroids": CENTROIDS, "calibration": CALIBRATION,
                               "groups": GROUPS, "clusters": CLUSTERS, "fit": FIT}


def _location(model_dir: str, fs: fsspec.AbstractFileSystem | None) -> tuple[fsspec.AbstractFileSystem, str]:
    if fs is None:
        fs, model_dir = fsspec.core.url_to_fs(model_dir)
    return fs, model_dir.rstrip("/")


def read_model_file(model_dir: str, file: ModelFile[T], *, fs: fsspec.AbstractFileSystem | None = None) -> T:
    """One file of `model_dir` (any fsspec URI, or a path on `fs`), read and checked; FormatError naming the file
    and what is wrong (absent, a missing key or array, a wrong shape)."""
    fs, root = _location(model_dir, fs)
    path = f"{root}/{file.name}"
    try:
        with fs.open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise FormatError(path, [("", "no such file")], HINT) from None
    return file.decode(data, path)


def read_model_files(model_dir: str) -> ModelFiles:
    """Every file of `model_dir` (any fsspec URI), read and checked, and checked against each other (the clusters of
    the centroids, the labels and fit.json, the dimension of the embedder and of the centroids)."""
    fs, root = _location(model_dir, None)
    files = ModelFiles(**{name: read_model_file(root, file, fs=fs) for name, file in FILES.items()})
    k, fine_k, problems = len(files.centroids.centroids), len(files.centroids.fine_centroids), []
    if [c.id for c in files.clusters] != list(range(k)):
        problems.append((CLUSTERS.name, f"expected clusters 0..{k - 1}, one each, as {CENTROIDS.name} has"))
    if (files.fit.k, files.fit.fine_k) != (k, fine_k):
        problems.append((FIT.name, f"k {files.fit.k} and fine_k {files.fit.fine_k}, {CENTROIDS.name} has {k} "
                                   f"and {fine_k}"))
    if isinstance(files.embedder, LexicalEmbedderFile) and files.embedder.dim != files.centroids.dim:
        problems.append((EMBEDDER.name, f"embeds in {files.embedder.dim} dimensions, the centroids of "
                                        f"{CENTROIDS.name} have {files.centroids.dim}"))
    if problems:
        raise FormatError(root, problems, HINT)
    return files


def write_model_file(model_dir: str, file: ModelFile[T], value: T, *,
                     fs: fsspec.AbstractFileSystem | None = None) -> None:
    fs, root = _location(model_dir, fs)
    write_atomic(fs, f"{root}/{file.name}", file.encode(value))


def write_model_files(model_dir: str, files: ModelFiles) -> None:
    """Every file of `files` in `model_dir` (any fsspec URI), each written atomically."""
    fs, root = _location(model_dir, None)
    for f in fields(files):
        write_model_file(root, FILES[f.name], getattr(files, f.name), fs=fs)
