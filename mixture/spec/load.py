"""Load a spec file: YAML syntax, schema and on-disk checks, every problem reported at once with its field path."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from fsspec.core import url_to_fs
from pydantic import ValidationError

from mixture.regular_files import irregular
from mixture.spec import preflight
from mixture.spec.locations import store_overlap
from mixture.spec.models import Spec
from mixture.spec.resolve import References
from mixture.spec.source_formats import source_format
from mixture.spec.yaml_bounded import load_yaml, short_repr
from mixture.store.formats import SHOWN_PROBLEMS


@dataclass
class SpecProblem:
    path: str  # field path like sources[3].uri, or "" for the whole file
    message: str

    def render(self, file: str) -> str:
        where = f"{file}: {self.path}" if self.path else file
        return f"{where}: {self.message}"


@dataclass
class SpecError(Exception):
    """A spec that cannot be used; `problems` lists every issue found."""

    file: str
    problems: list[SpecProblem] = field(default_factory=list)

    def __str__(self) -> str:
        head = f"{self.file}: {len(self.problems):,} problem{'s' if len(self.problems) != 1 else ''} in the spec"
        shown = ["  - " + p.render(self.file) for p in self.problems[:SHOWN_PROBLEMS]]
        if len(self.problems) > SHOWN_PROBLEMS:
            shown.append(f"  … and {len(self.problems) - SHOWN_PROBLEMS:,} more")
        return "\n".join([head, *shown])


def field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _describe(value: Any) -> str:
    return short_repr(value, 80)


def _pydantic_problems(exc: ValidationError, prefix: tuple[Any, ...] = ()) -> list[SpecProblem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc = prefix + tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        kind, msg = err["type"], err["msg"].removeprefix("Value error, ")
        if kind == "missing":
            msg = "required field is missing"
        elif kind == "extra_forbidden":
            msg = f"unknown field (found {_describe(err['input'])}); check the spelling against `mixture schema`"
        elif kind == "literal_error" or "input" in err and kind not in ("value_error", "assertion_error"):
            msg = f"{msg}, found {_describe(err['input'])}"
        problems.append(SpecProblem(field_path(loc), msg))
    return problems


def _check_resources(refs: References) -> list[SpecProblem]:
    spec = refs.spec
    problems: list[SpecProblem] = []
    for i, (src, uri) in enumerate(zip(spec.sources, refs.sources, strict=True)):
        problems += [SpecProblem(f"sources[{i}].{key}", msg)
                     for key, msg in source_format(src.format).check_source(src, uri)]
    for i, uri in enumerate(refs.benchmarks):
        try:
            fs, path = url_to_fs(uri)
            found = fs.glob(path) if any(ch in path for ch in "*?[") else ([path] if fs.exists(path) else [])
        except Exception as exc:
            found, msg = [], f"cannot list {uri!r}: {exc}"
        else:
            msg = f"benchmark file not found at {uri!r}"
        odd = [why for f in found if (why := irregular(f))]
        if not found or odd:
            problems.append(SpecProblem(f"processing.decontamination.benchmarks[{i}].uri", odd[0] if odd else msg))
        elif spec.processing.decontamination.enabled:
            problems += _benchmark_problems(spec, i, uri)
    problems += _store_overlaps(refs)
    for key, message in [*preflight.store_problems(refs.store), *preflight.tokenizer_problems(refs),
                         *preflight.model_problems(refs)]:
        problems.append(SpecProblem(key, message))
    return problems


def _store_overlaps(refs: References) -> list[SpecProblem]:
    """A store.uri equal to, inside or containing a source location (or matched by a source's glob), naming both."""
    store = refs.store
    problems = []
    for i, (src, uri) in enumerate(zip(refs.spec.sources, refs.sources, strict=True)):
        if uri.startswith("hf://"):  # a hub dataset: never where a store is written
            continue
        why = store_overlap(store, uri, f"sources[{i}] {src.name!r} ({uri})")
        if why:
            problems.append(SpecProblem("store.uri", f"the store {store} {why}; put the store outside every "
                                                     "source location"))
    return problems


def _benchmark_problems(spec: Spec, i: int, uri: str) -> list[SpecProblem]:
    """The benchmark's records: readable, with the named fields, yielding n-grams that carry content."""
    from mixture.decontam.checks import benchmark_problems
    from mixture.decontam.index import BenchmarkSource

    dc, bench = spec.processing.decontamination, spec.processing.decontamination.benchmarks[i]
    source = BenchmarkSource(bench.name, uri, tuple(bench.fields), bench.id_field)
    return [SpecProblem(f"processing.decontamination.benchmarks[{i}].{key}", msg)
            for key, msg in benchmark_problems(source, "id_field" in bench.model_fields_set, dc.ngram,
                                               dc.min_content_words, dc.max_number_share)]


def parse_spec(data: Any, file: str = "<spec>") -> Spec:
    """Validate already-parsed YAML/JSON; raises SpecError listing every problem."""
    if not isinstance(data, dict):
        raise SpecError(file, [SpecProblem("", f"expected a mapping of sections at the top, found {type(data).__name__}")])
    problems: list[SpecProblem] = []
    spec = None
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        problems += _pydantic_problems(exc)
    if problems or spec is None:
        raise SpecError(file, problems)
    return spec


def load_spec(path: str | os.PathLike, check_resources: bool = True) -> Spec:
    """Read, validate and (by default) check that every source and file the spec names exists; the spec's `refs`
    are its references resolved against the file's folder."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(file, [SpecProblem("", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(file, [SpecProblem("", f"cannot read: {exc}")]) from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(file, [SpecProblem("", f"invalid YAML: {where}{problem}")]) from None
    spec = parse_spec(data, file)
    spec._refs = References(spec, spec_dir(path))
    if check_resources:
        problems = _check_resources(spec.refs)
        if problems:
            raise SpecError(file, problems)
    return spec


def spec_dir(path: str | os.PathLike) -> str:
    return os.path.dirname(os.path.abspath(path))
