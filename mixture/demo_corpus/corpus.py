"""Write the demo corpus: every source, the benchmark, MANIFEST.json and ground_truth.json, published atomically."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import random
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import benchmark as bm
from .assemble import Group, dialogue_modules, paragraph_pool, vocabulary
from .code_sources import (
    is_test_module,
    package_code,
    package_code_files,
    read_stdlib,
    stdlib_code,
    stdlib_docstrings,
    stdlib_py_files,
)
from .crawl import PROFILES, Pool, web_crawl
from .docstrings import Docstring, extract, module_name
from .local_files import list_files, rel, site_dirs, stdlib_root
from .model import RawLine, Source
from .multilingual import multilingual
from .names import BENCHMARK, GROUND_TRUTH, MANIFEST
from .plant import Planted, synthetic_dialogues, web_like
from .shards import write_source
from .text_sources import licenses, package_docs, python_reference, structured_data
from .textutil import dumps_line, jaccard
from .tokens import ENCODING, approx_tokens
from .variants import DEFAULT_GROUP, Rewriter

TRUTH_KEYS = ("exact_duplicates", "near_duplicates", "exempt_near_duplicates", "contaminated", "malformed",
              "large_documents")
_DIST_RE = re.compile(r"^([^/]+)-([^-/]+)\.dist-info/METADATA$")


class _Steps:
    """A rich progress bar over the writing steps (silent when disabled)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description:<32}"), BarColumn(), TimeElapsedColumn(),
                                console=Console(stderr=True), transient=False)
            self.task = self.bar.add_task("demo corpus", total=total)
            self.bar.start()

    def step(self, what: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, description=what, advance=1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.update(self.task, description="demo corpus written")
            self.bar.stop()


@contextmanager
def _steps(enabled: bool, total: int) -> Iterator[_Steps]:
    s = _Steps(enabled, total)
    try:
        yield s
    finally:
        s.close()


def _check_target(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MANIFEST).exists())):
        raise FileExistsError(
            f"{out} exists and is not a demo corpus (no {MANIFEST}); choose an empty or new folder")


def write_demo_corpus(out: str | os.PathLike, *, seed: int = 0, scale: float = 1.0, progress: bool = True,
                      variant: int = 0, duplicates: str = "planted") -> dict:
    """Write the demo corpus to `out` (replacing an earlier demo corpus there) and return its manifest.

    Deterministic for a given seed, scale, variant, Python version and set of installed packages. `variant` > 0
    writes the same documents with their words swapped (variants.py): n variants hold n times the distinct text.
    `duplicates="pool"` adds the web-crawl source with a real pool's duplicate structure (crawl.py).
    """
    return write_demo_variants({variant: out}, seed=seed, scale=scale, progress=progress,
                               duplicates=duplicates)[variant]


def write_demo_variants(outs: Mapping[int, str | os.PathLike], *, seed: int = 0, scale: float = 1.0,
                        progress: bool = True, duplicates: str = "planted") -> dict[int, dict]:
    """Write variant v of the demo corpus to `outs[v]` for every v, drawing the documents once; the manifests."""
    if not 0 < scale <= 10:
        raise ValueError(f"scale must be in (0, 10], got {scale}")
    if duplicates not in PROFILES:
        raise ValueError(f"duplicates must be one of {', '.join(PROFILES)}, got {duplicates!r}")
    if any(int(v) != v or v < 0 for v in outs):
        raise ValueError(f"variants are whole numbers >= 0, got {sorted(outs)}")
    targets = {int(v): Path(o) for v, o in sorted(outs.items())}
    for out in targets.values():
        _check_target(out)
    manifests = {}
    with _steps(progress, 9 + (13 + (duplicates == "pool")) * len(targets)) as steps:
        drawn = _draw(int(seed), float(scale), steps)
        drawn.duplicates = duplicates
        for variant, out in targets.items():
            manifests[variant] = _publish(out, lambda staging, v=variant: _write(staging, drawn, v, steps))
    return manifests


def _publish(out: Path, write: Callable[[Path], dict]) -> dict:
    """`write` into a staging folder beside `out`, then swap it in (an earlier corpus there is replaced)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        manifest = write(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        out.rename(old)
    staging.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    return manifest


@dataclass
class _Drawn:
    """The documents of one seed and scale, before the planted sources are assembled and anything is written."""

    seed: int
    scale: float
    sources: list[Source]  # the eight sources of real files, in manifest order
    groups: list[Group]  # paragraphs the web-like pages are assembled from
    vocab: list[str]
    modules: list[list[Docstring]]  # docstrings the dialogues are assembled from
    bench: list[dict]
    held: list[Path]
    site_listing: list[tuple[str, Path]]
    rewriter: Rewriter | None = None  # learnt from the first variant > 0 written
    duplicates: str = "planted"  # crawl.PROFILES

    def rng(self, name: str) -> random.Random:
        return random.Random(f"{self.seed}:{name}")  # str seeds hash with SHA-512: stable across processes


def _draw(seed: int, scale: float, steps: _Steps) -> _Drawn:
    def rng(name: str) -> random.Random:
        return random.Random(f"{seed}:{name}")

    steps.step("listing files")
    root = stdlib_root()
    stdlib_listing = [(rel(p, root), p) for p in list_files(root, skip_site_packages=True)]
    site_listing = sorted((rel(p, s), p) for s in site_dirs() for p in list_files(s))
    stdlib_py = stdlib_py_files(root)

    steps.step("benchmark (held-out modules)")
    site_names = {p.name for _, p in site_listing if p.suffix == ".py"}
    held, cands = bm.collect(bm.held_out_order(stdlib_py, site_names, rng("benchmark")), root)
    held_set = set(held)

    steps.step("stdlib modules")
    stdlib_texts = read_stdlib([x for x in stdlib_py if x[0] not in held_set], scale, rng("stdlib"))
    steps.step("docstrings")
    by_module = {module_name(r): extract(t, module_name(r)) for r, t in stdlib_texts if not is_test_module(r)}
    docstrings = [d for m in sorted(by_module) for d in by_module[m]]
    steps.step("reference, package docs")
    reference = python_reference(scale, rng("python-reference"))
    pkg_docs = package_docs(site_listing, scale, rng("package-docs"))
    steps.step("licenses, structured data")
    lic = licenses(stdlib_listing, site_listing, scale, rng("licenses"))
    structured = structured_data(stdlib_listing, site_listing, scale, rng("structured-data"))
    steps.step("multilingual")
    multi = multilingual(root, stdlib_texts, site_listing, scale, rng("multilingual"))

    steps.step("benchmark decontamination")
    doc_src = stdlib_docstrings(by_module)
    survivors = bm.drop_overlapping(cands, doc_src.texts() + reference.texts() + pkg_docs.texts())
    bench = bm.records(survivors)
    holds = bm.guard(survivors[: len(bench)])
    steps.step("code sources")
    code = stdlib_code([(r, t) for r, t in stdlib_texts if not holds(t)])
    pkg_code = package_code(package_code_files(site_listing), scale, rng("package-code"), holds)

    groups = paragraph_pool(docstrings, {r["topic"]: r["text"] for r in reference.records}, pkg_docs.records)
    return _Drawn(seed, scale, [code, pkg_code, doc_src, reference, pkg_docs, lic, multi, structured], groups,
                  vocabulary(groups), dialogue_modules(docstrings), bench, held, site_listing)


def _write(out: Path, drawn: _Drawn, variant: int, steps: _Steps) -> dict:
    prefix = f"v{variant}/" if variant else ""
    steps.step("web-like pages")
    web = web_like(drawn.groups, drawn.vocab, drawn.bench, drawn.scale, drawn.rng("web-like"), id_prefix=prefix)
    steps.step("synthetic dialogues")
    synth = synthetic_dialogues(drawn.modules, drawn.vocab, drawn.scale, drawn.rng("synthetic-dialogues"),
                                id_prefix=prefix)
    sources = [*drawn.sources, synth.source, web.source]
    if variant:
        if drawn.rewriter is None:
            steps.step("learning word swaps")
            drawn.rewriter = Rewriter((_group(r), r["text"]) for src in sources for r in src.records
                                      if isinstance(r, dict))
        steps.step(f"variant {variant}: swapping words")
        sources = _variant_sources(sources, drawn.rewriter, variant, prefix, _pasted(web, drawn.bench))
        web.source, synth.source = sources[-1], sources[-2]
        for planted in (web, synth):
            _rejaccard(planted)

    truth: dict[str, list[dict]] = {k: [] for k in TRUTH_KEYS}
    if drawn.duplicates == "pool":
        steps.step("web-crawl pages (pool duplicates)")
        pool = Pool(drawn.groups, drawn.vocab, drawn.seed, drawn.scale, drawn.rewriter)
        crawl = web_crawl(pool, variant, min(variant, 1), prefix, _copyable(web))
        sources.append(crawl.source)
        truth.update(crawl.truth)
    entries = []
    for src in sources:
        if not src.records:
            continue
        steps.step(f"writing {src.name}")
        shards = write_source(out, src)
        planted = next((p for p in (web, synth) if p.source is src), None)
        if planted is not None:
            _resolve(planted, shards, truth)
        entries.append(_entry(src, shards))

    (out / "benchmarks").mkdir()
    (out / BENCHMARK).write_text("".join(dumps_line(r) + "\n" for r in drawn.bench), encoding="utf-8")
    manifest = {
        "format": 1,
        "name": "mixture-demo-corpus",
        "seed": drawn.seed,
        "scale": drawn.scale,
        **({"variant": variant} if variant else {}),
        **({"duplicates": drawn.duplicates} if drawn.duplicates != "planted" else {}),
        "python_version": platform.python_version(),
        "tokenizer": f"tiktoken:{ENCODING}",
        "sources": entries,
        "benchmarks": [{"name": "demo-bench", "path": BENCHMARK, "format": "jsonl", "id_field": "id",
                        "question_field": "question", "answer_field": "answer", "records": len(drawn.bench),
                        "held_out_modules": sorted(module_name(h) for h in drawn.held)}],
        "ground_truth": GROUND_TRUTH,
        "totals": {"files": sum(e["files"] for e in entries), "docs": sum(e["docs"] for e in entries),
                   "approx_tokens": sum(e["approx_tokens"] for e in entries)},
        "packages": sorted(f"{m.group(1)}=={m.group(2)}" for r, _ in drawn.site_listing
                           if (m := _DIST_RE.match(r))),
    }
    ground_truth = {
        "seed": drawn.seed,
        "scale": drawn.scale,
        **({"variant": variant} if variant else {}),
        "normalisation": "NFC; CRLF and CR to LF; trailing spaces and tabs stripped per line; outer whitespace "
                         "stripped",
        "shingles": "5-word shingles of lower-cased \\w+ words; Jaccard of the shingle sets",
        **truth,
    }
    (out / GROUND_TRUTH).write_text(json.dumps(ground_truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def _group(record: dict) -> str:
    """The language group a record's words are swapped within: its `lang` label (multilingual), else the default."""
    return str(record.get("lang") or DEFAULT_GROUP)


def _copyable(web: Planted) -> list[tuple[str, dict]]:
    """(source, record) of the web-like pages a web-crawl copy may repeat: well formed, not planted themselves."""
    planted = {t["id"] for k in ("exact_duplicates", "near_duplicates", "contaminated", "large_documents")
               for t in web.truth.get(k, [])}
    return [(web.source.name, r) for r in web.source.records
            if isinstance(r, dict) and isinstance(r.get("text"), str) and r.get("id") not in planted]


def _pasted(web: Planted, bench: list[dict]) -> dict[str, list[str]]:
    """{id: [the benchmark text pasted into it]} of the contaminated pages (kept verbatim in every variant)."""
    items = {b["id"]: f"{b['question']}\n{b['answer']}" for b in bench}
    return {t["id"]: [items[t["benchmark_id"]]] for t in web.truth["contaminated"]}


def _variant_sources(sources: list[Source], rewriter: Rewriter, variant: int, prefix: str,
                     keep: dict[str, list[str]]) -> list[Source]:
    """Copies of `sources` with every text swapped for `variant` and every id prefixed (planted ones already are)."""
    out = []
    for src in sources:
        copy = dataclasses.replace(src, records=[])
        for r in src.records:
            if isinstance(r, dict):
                r = dict(r)
                if "id" in r and not str(r["id"]).startswith(prefix):
                    r["id"] = prefix + r["id"]
                if isinstance(r.get("text"), str):
                    r["text"] = rewriter.document(variant, _group(r), r["text"], keep.get(r.get("id", ""), ()))
            copy.records.append(r)
        out.append(copy)
    return out


def _rejaccard(planted: Planted) -> None:
    """The near-duplicate Jaccard values of the ground truth, measured again on the variant's texts."""
    text = {r["id"]: r["text"] for r in planted.source.records if isinstance(r, dict)}
    for key in ("near_duplicates", "exempt_near_duplicates"):
        for item in planted.truth.get(key, []):
            item["jaccard"] = round(jaccard(text[item["id"]], text[item["duplicate_of"]]), 4)


def _resolve(planted: Planted, shards: list[tuple[str, int, int]], truth: dict[str, list[dict]]) -> None:
    """Turn record positions of malformed entries into (file, line) and merge into the ground truth."""
    for key, items in planted.truth.items():
        for item in items:
            if key == "malformed":
                pos = item["index"]
                relpath, first, _ = next(s for s in shards if s[1] <= pos < s[1] + s[2])
                item = {"source": item["source"], "file": relpath, "record": pos - first, "reason": item["reason"]}
            truth[key].append(item)


def _entry(src: Source, shards: list[tuple[str, int, int]]) -> dict:
    raw_chars = sum(r.text_chars for r in src.records if isinstance(r, RawLine))
    texts = src.texts()
    return {
        "name": src.name,
        "category": src.category,
        "license": src.license,
        "format": src.fmt,
        "uri_glob": f"{src.name}/*.{src.fmt}",
        "text_field": src.text_field,
        "id_field": src.id_field,
        "exempt_from_fuzzy_dedup": src.exempt_from_fuzzy_dedup,
        "files": len(shards),
        "docs": len(src.records),
        "chars": sum(len(t) for t in texts),
        "approx_tokens": approx_tokens(texts, raw_chars),
        "description": src.description,
    }
