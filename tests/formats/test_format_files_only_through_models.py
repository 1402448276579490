"""store.json, _ledger.json, plan.json and manifest.json are read and written only through their models: outside
mixture/store/formats.py and mixture/planner/formats.py no code of mixture/, pipelines/ or app/ opens one of those
files itself or parses JSON it is not listed for (an AST check of the source), and at run time every such file the
readers parse is parsed by the formats modules."""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fsspec.implementations.local import LocalFileSystem

from mixture import accounting
from mixture.datasets import load_mixture
from mixture.explorer.plan_view import load_plan
from mixture.pipelines.materialize.run import materialize
from mixture.planner.counts import load_counts
from mixture.planner.plan import compute_plan
from mixture.planner.realised import realised_ledger
from mixture.store.formats import write_model
from tests.explorer.synthstore import plan_inputs

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("mixture", "pipelines", "app")
FORMAT_MODULES = ("mixture/store/formats.py", "mixture/planner/formats.py")

# The names of the format files, and the modules whose names they are (the demo corpus has a MANIFEST of its own).
FILE_NAMES = {"STORE_JSON", "LEDGER", "MANIFEST", "PHASE_MANIFEST"}
FILE_NAME_MODULES = {"mixture.store.layout", "mixture.planner.formats", "mixture.pipelines.materialize.run"}
FILE_NAME_MODULE_ALIASES = {"layout", "formats", "materialize"}
FILE_LITERAL = re.compile(r"(^|/)(store\.json|_ledger\.json|_?manifest\.json|plan(\.repaired)?\.json)$")

# Calls that read or write a file's bytes, or parse or serialise JSON: none may be given a format file's path, or
# what was read from one (read_model, read_models, read_plan, read_manifest and write_model do that).
RAW_CALLS = {"open", "cat", "cat_file", "pipe", "pipe_file", "read_text", "read_bytes", "write_text", "write_bytes",
             "read_json", "read_json_auto", "write_json_atomic", "write_atomic", "open_atomic"}
JSON_CALLS = {("json", "load"), ("json", "loads"), ("json", "dump"), ("json", "dumps"), ("orjson", "loads"),
              ("orjson", "dumps")}

# Every other place that parses JSON, and what it parses (none of them is a format file). A new json.load(s)
# belongs in the formats modules (load_json, parse_json, read_model) or here, with what it reads.
JSON_PARSERS = {
    ("mixture/accounting/build_progress.py", "lock_info"): "the build lock _build/LOCK",
    ("mixture/accounting/build_progress.py", "stages"): "datatrove's _build/<stage>/executor.json",
    ("mixture/accounting/diffs.py", "DiffResult.to_dict"): "its own DataFrame as JSON records",
    ("mixture/accounting/render.py", "render"): "its own DataFrame as JSON records",
    ("mixture/demo_corpus/debian_text.py", "read_labelled"): "the multilingual corpus's JSONL records",
    ("mixture/decontam/records.py", "read_records"): "a decontamination benchmark's JSONL records",
    ("mixture/demo_corpus/read.py", "manifest"): "the demo corpus's MANIFEST.json",
    ("mixture/demo_corpus/read.py", "ground_truth"): "the demo corpus's ground_truth.json",
    ("mixture/demo_corpus/read.py", "iter_records"): "the demo corpus's JSONL records",
    ("mixture/spec/datasets_source.py", "_read_json"): "a datasets save_to_disk folder's state and info JSON",
    ("pipelines/locks.py", "read_lock"): "a folder's lock (the build's _build/LOCK, materialize's _materialize.lock)",
    ("pipelines/executors.py", "SlurmStageExecutor._record"): "the Slurm job record of a stage",
    ("pipelines/finalize/store_json.py", "finalize"): "the readers' tallies in _work/tally/",
    ("pipelines/sources/jsonl.py", "read_jsonl"): "the input records of a jsonl source",
    ("pipelines/finalize/shard_facts.py", "read_task_facts"): "the assign tasks' shard facts in _work/",
}


def sources() -> Iterator[tuple[str, str]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in FORMAT_MODULES:
                yield rel, path.read_text(encoding="utf-8")


def scopes(tree: ast.Module) -> Iterator[tuple[str, list[ast.AST]]]:
    """(qualified name, its nodes) of the module (the nodes outside any function) and of every function (with the
    nodes of the functions nested in it)."""
    def own(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            yield child
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from own(child)

    def functions(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, child
                yield from functions(child, f"{name}.")
            else:
                yield from functions(child, prefix)

    yield "<module>", list(own(tree))
    for name, fn in functions(tree, ""):
        yield name, list(ast.walk(fn))


def bound_file_names(tree: ast.Module) -> set[str]:
    """Names bound in the module to a format file name (`from mixture.store.layout import STORE_JSON as X`)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in FILE_NAME_MODULES:
            out |= {a.asname or a.name for a in node.names if a.name in FILE_NAMES}
    return out


def names_a_format_file(node: ast.AST, bound: set[str]) -> bool:
    if isinstance(node, ast.Name) and node.id in bound:
        return True
    if isinstance(node, ast.Attribute) and node.attr in FILE_NAMES and isinstance(node.value, ast.Name) \
            and node.value.id in FILE_NAME_MODULE_ALIASES:
        return True
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(FILE_LITERAL.search(node.value))


def _mentions(expr: ast.AST, bound: set[str], tainted: set[str]) -> bool:
    return any(names_a_format_file(n, bound) or (isinstance(n, ast.Name) and n.id in tainted) for n in ast.walk(expr))


def tainted_names(nodes: list[ast.AST], bound: set[str]) -> set[str]:
    """Variables holding a format file's path or what was read from it: assigned (also by `with ... as`, a for
    loop or a comprehension) from an expression that names a format file or such a variable."""
    tainted: set[str] = set()
    flows = []
    for n in nodes:
        if isinstance(n, ast.Assign):
            flows += [(n.value, t) for t in n.targets]
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and n.value is not None:
            flows.append((n.value, n.target))
        elif isinstance(n, ast.withitem) and n.optional_vars is not None:
            flows.append((n.context_expr, n.optional_vars))
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            flows.append((n.iter, n.target))
    changed = True
    while changed:
        changed = False
        for value, target in flows:
            if _mentions(value, bound, tainted):
                new = {t.id for t in ast.walk(target) if isinstance(t, ast.Name)} - tainted
                tainted |= new
                changed |= bool(new)
    return tainted


def call_name(node: ast.AST) -> tuple[str | None, str] | None:
    """(module or None, function) of a call: json.loads -> ('json', 'loads'); fs.open -> (None, 'open')."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    if isinstance(f, ast.Attribute):
        return (f.value.id if isinstance(f.value, ast.Name) else None), f.attr
    if isinstance(f, ast.Name):
        return None, f.id
    return None


def _is_raw(mod: str | None, fn: str) -> bool:
    # read_bytes called by name is mixture.store.formats.read_bytes; as a method it is pathlib's
    return (mod, fn) in JSON_CALLS or (fn in RAW_CALLS and not (mod is None and fn == "read_bytes"))


MODEL_READERS = {"read_model", "read_models", "parse_model", "parse_json", "model_validate", "model_validate_json"}


def parses_store_artifact(node: ast.AST) -> bool:
    """A call that parses store.json's model other than through read_store_artifact / parse_store_artifact (the
    one place its format version is checked): read_model(StoreArtifact, ...), StoreArtifact.model_validate(...)."""
    if not (called := call_name(node)) or called[1] not in MODEL_READERS:
        return False
    func, args = node.func, node.args  # type: ignore[attr-defined]
    owner = func.value if isinstance(func, ast.Attribute) else None
    return any(isinstance(a, ast.Name) and a.id == "StoreArtifact" for a in (owner, *args[:1]))


def violations(rel: str, text: str) -> list[str]:
    """Where one module reads or writes a format file without its model, or parses JSON it is not listed for."""
    tree = ast.parse(text)
    bound = bound_file_names(tree)
    out = [f"{rel}:{n.lineno}: `from {n.module} import ...`: call {n.module}.<function>" for n in ast.walk(tree)
           if isinstance(n, ast.ImportFrom) and n.module in ("json", "orjson")]
    out += [f"{rel}:{n.lineno}: parses StoreArtifact itself: read store.json with read_store_artifact (or "
            "parse_store_artifact), which refuses a store of another format version" for n in ast.walk(tree)
            if parses_store_artifact(n)]
    for name, nodes in scopes(tree):
        tainted = tainted_names(nodes, bound)
        for n in nodes:
            if not (called := call_name(n)) or not _is_raw(*called):
                continue
            mod, fn = called
            func = n.func  # type: ignore[attr-defined]
            subjects = [*n.args, *(k.value for k in n.keywords)]  # type: ignore[attr-defined]
            if isinstance(func, ast.Attribute):
                subjects.append(func.value)  # (store / "store.json").read_text()
            if any(_mentions(s, bound, tainted) for s in subjects):
                out.append(f"{rel}:{n.lineno}: {name} calls {f'{mod}.' if mod else ''}{fn}() on a format file: read "
                           "it with read_store_artifact/read_model/read_models/read_plan/read_manifest, write it with "
                           "write_model")
            if called in JSON_CALLS and fn.startswith("load") and (rel, name) not in JSON_PARSERS:
                out.append(f"{rel}:{n.lineno}: {name} parses JSON with {mod}.{fn}(): a format file goes through "
                           "mixture.store.formats (load_json, parse_json, read_model); anything else is listed in "
                           "JSON_PARSERS with what it reads")
    return out


def test_no_module_reads_or_writes_a_format_file_without_its_model() -> None:
    found = [v for rel, text in sources() for v in violations(rel, text)]
    assert found == [], "\n".join(found)


def test_every_listed_json_parser_still_parses_json() -> None:
    """JSON_PARSERS lists only the places that parse JSON today (a moved or removed one is taken off the list)."""
    seen = set()
    for rel, text in sources():
        for name, nodes in scopes(ast.parse(text)):
            if any((c := call_name(n)) in JSON_CALLS and c[1].startswith("load") for n in nodes):
                seen.add((rel, name))
    assert set(JSON_PARSERS) <= seen, sorted(set(JSON_PARSERS) - seen)


def test_the_check_sees_the_format_files_where_they_are_read_and_written() -> None:
    """Not vacuous: the format file names are found where the readers and writers use them."""
    naming = set()
    for rel, text in sources():
        tree = ast.parse(text)
        bound = bound_file_names(tree)
        naming |= {(rel, name) for name, nodes in scopes(tree) if any(names_a_format_file(n, bound) for n in nodes)}
    for where in (("mixture/accounting/reader.py", "StoreReader.store_info"),
                  ("mixture/accounting/reader.py", "StoreReader._ledgers"),
                  ("pipelines/finalize/store_json.py", "finalize"), ("pipelines/finalize/store_json.py", "write_ledgers"),
                  ("pipelines/build.py", "build_store"), ("pipelines/materialize/run.py", "materialize"),
                  ("mixture/datasets.py", "load_mixture"), ("mixture/accounting/synthetic.py", "write_synthetic_store")):
        assert where in naming, where


@pytest.mark.parametrize("code, found", [
    ("import json\nfrom mixture.store import layout\n\ndef f(fs, root):\n"
     "    with fs.open(f'{root}/{layout.STORE_JSON}') as fh:\n        return json.load(fh)\n",
     ["f calls fs.open() on a format file", "f calls json.load() on a format file", "f parses JSON with json.load()"]),
    ("from mixture.planner.formats import MANIFEST as M\n\ndef g(p):\n    return (p / M).read_text()\n",
     ["g calls read_text() on a format file"]),
    ("def t(fs, root):\n    path = f'{root}/cluster=00/quality=0/_ledger.json'\n    raw = fs.cat_file(path)\n"
     "    return raw\n", ["t calls fs.cat_file() on a format file"]),
    ("import json\n\ndef h(path):\n    return json.loads(open(path).read())\n", ["h parses JSON with json.loads()"]),
    ("def w(store, text):\n    (store / 'store.json').write_text(text)\n", ["w calls write_text() on a format file"]),
    ("from mixture.store.formats import StoreArtifact, read_model\n\ndef s(path):\n"
     "    return read_model(StoreArtifact, path)\n", ["parses StoreArtifact itself"]),
    ("def v(data):\n    return StoreArtifact.model_validate(data)\n", ["parses StoreArtifact itself"]),
    ("from json import loads\n", ["`from json import ...`"]),
    ("from mixture.store.formats import read_model, write_model\nfrom mixture.store import layout\n\n"
     "def ok(fs, root, m):\n    info = read_model(Model, f'{root}/{layout.STORE_JSON}', fs=fs)\n"
     "    write_model(fs, f'{root}/{layout.STORE_JSON}', m)\n"
     "    with fs.open(f'{root}/cluster=00/quality=0/part-00000.parquet', 'rb') as fh:\n        return info, fh.read()\n",
     []),
    ("from mixture.demo_corpus.names import MANIFEST\n\ndef demo(p):\n    return (p / MANIFEST).read_text()\n", []),
])
def test_the_check_finds_raw_reads_and_writes(code: str, found: list[str]) -> None:
    got = violations("mixture/example.py", code)
    assert len(got) == len(found), got
    for v, want in zip(got, found, strict=True):
        assert want in v, (v, want)


# -- at run time ---------------------------------------------------------------------------------------------
def _kind(value: object) -> str | None:
    """Which format file a parsed JSON value is, if any."""
    if not isinstance(value, dict):
        return None
    if "format_version" in value and "counters" in value:
        return "store.json"
    if "shards" in value and "total_tokens" in value:
        return "_ledger.json"
    if value.get("kind") == "mixture-plan":
        return "plan.json"
    if "plan_id" in value and "shard_bytes" in value:
        return "manifest.json"
    if "shards" in value and "max_doc_tokens" in value:
        return "_manifest.json"
    return None


def test_the_readers_parse_format_files_only_in_the_formats_modules(tmp_path: Path, monkeypatch) -> None:
    """Every store.json, ledger, plan and manifest that the readers of a store, a plan and a mixture parse at run
    time is parsed by code of the formats modules (json.loads and json.load watched while they run)."""
    store = tmp_path / "store"
    accounting.write_synthetic_store(str(store), k=3, shards_per_cell=2)
    plan = compute_plan(plan_inputs(store)).model_copy(update={"store_uri": str(store)})
    plan_path = tmp_path / "plan.json"
    write_model(LocalFileSystem(), str(plan_path), plan)

    parsed: list[tuple[str, str]] = []
    real_loads, real_load = json.loads, json.load

    def seen(value: object) -> object:
        if kind := _kind(value):
            parsed.append((kind, sys._getframe(2).f_code.co_filename))  # the caller of json.load(s)
        return value

    monkeypatch.setattr(json, "loads", lambda *a, **k: seen(real_loads(*a, **k)))
    monkeypatch.setattr(json, "load", lambda *a, **k: seen(real_load(*a, **k)))
    reader = accounting.StoreReader(str(store))
    assert accounting.audit(reader).status == "ok"
    accounting.table_list(reader, accounting.connect(reader))
    accounting.load_counts(str(store / "store.json"))
    load_counts(str(store))
    load_counts(str(plan_path))
    load_plan(plan_path)
    out = tmp_path / "mixture"
    materialize(plan, out, shard_bytes=4096)
    assert realised_ledger(out, plan)["ok"]
    load_mixture(str(out), streaming=True)

    assert {k for k, _ in parsed} == {"store.json", "_ledger.json", "plan.json", "manifest.json"}
    outside = sorted({(k, f) for k, f in parsed if not Path(f).as_posix().endswith(FORMAT_MODULES)})
    assert outside == [], outside
