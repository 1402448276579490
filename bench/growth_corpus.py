"""The growth benchmark's inputs: variants 1 … n of the demo corpus (mixture/demo_corpus/variants.py), cached on disk
by their parameters, joined into one corpus per size with hard links."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import tiktoken

from bench.build_bench import ENCODING, input_texts

CORPUS_CODE = Path(__file__).resolve().parent.parent / "mixture" / "demo_corpus"
COUNTS = "input_tokens.json"  # per variant: its well-formed records and their exact tokens


def default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mixture" / "growth-bench"


def generator_key() -> str:
    """Hash of the demo corpus generator's code: a cached variant written by other code is written again."""
    h = hashlib.sha256()
    for p in sorted(CORPUS_CODE.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def variant_dir(cache: Path, seed: int, scale: float, variant: int, duplicates: str = "planted") -> Path:
    profile = "" if duplicates == "planted" else f"-{duplicates}"
    return cache / f"demo-seed{seed}-scale{scale:g}{profile}-{generator_key()}" / f"v{variant:03d}"


def _complete(folder: Path) -> bool:
    return (folder / "MANIFEST.json").exists() and (folder / COUNTS).exists()


def ensure_variants(cache: Path, seed: int, scale: float, variants: list[int], log=print,
                    duplicates: str = "planted") -> dict[int, Path]:
    """Variants `variants` of the demo corpus of `seed`, `scale` and duplicate profile `duplicates` under `cache`
    (written when missing, in one call that draws the documents once), each with the exact token count of its
    well-formed records."""
    from mixture.demo_corpus.corpus import write_demo_variants

    folders = {v: variant_dir(cache, seed, scale, v, duplicates) for v in variants}
    missing = {v: f for v, f in folders.items() if not _complete(f)}
    if missing:
        t = time.perf_counter()
        write_demo_variants(missing, seed=seed, scale=scale, progress=False, duplicates=duplicates)
        log(f"  wrote variants {', '.join(map(str, missing))} of the demo corpus (seed {seed}, scale {scale:g}) in "
            f"{time.perf_counter() - t:.0f} s under {next(iter(missing.values())).parent}")
        enc = tiktoken.get_encoding(ENCODING)
        for folder in missing.values():
            texts = input_texts(folder)
            counts = {"records": len(texts), "tokens": sum(len(enc.encode_ordinary(x)) for x in texts),
                      "chars": sum(map(len, texts))}
            (folder / COUNTS).write_text(json.dumps(counts))
    return folders


def input_counts(folder: Path) -> dict:
    return json.loads((folder / COUNTS).read_text())


def crawl_source(corpus: Path) -> list[dict]:
    """The spec entry of the web-crawl source when `corpus` holds one (the `pool` duplicate profile), else none."""
    from mixture.demo_corpus.crawl import SOURCE

    if not (corpus / SOURCE).is_dir():
        return []
    return [{"name": SOURCE, "uri": str(corpus / SOURCE), "format": "jsonl.zst", "category": "web",
             "license": "PSF-2.0"}]


def assemble(out: Path, variants: list[Path]) -> Path:
    """One corpus at `out` holding every given variant: `<source>/v<NNN>-<file>` hard links to the cached files
    (copies across filesystems) and variant 1's benchmark, so the demo spec's source folders read them all."""
    want = {}
    for folder in variants:
        tag = folder.name  # v001
        manifest = json.loads((folder / "MANIFEST.json").read_text())
        for source in manifest["sources"]:
            for f in sorted((folder / source["name"]).iterdir()):
                want[Path(source["name"]) / f"{tag}-{f.name}"] = f
    want[Path("benchmarks") / "demo-bench.jsonl"] = variants[0] / "benchmarks" / "demo-bench.jsonl"
    have = {p.relative_to(out) for p in out.rglob("*") if p.is_file()} if out.exists() else set()
    if have != set(want):
        shutil.rmtree(out, ignore_errors=True)
        for rel, src in want.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, out / rel)
            except OSError:
                shutil.copyfile(src, out / rel)
    return out


# disk per variant at demo scale 1 (measured): its files ~40 MB; a store ~35 MB; the build's work files ~50 MB
VARIANT_BYTES, STORE_BYTES, WORK_BYTES = 45e6, 35e6, 50e6


def disk_needed(variants: int, scale: float, stores: int) -> tuple[float, float]:
    """(bytes for the cached corpora, bytes for the builds at the largest size: `stores` stores kept side by side
    and one build's work files)."""
    return variants * scale * VARIANT_BYTES, variants * scale * (stores * STORE_BYTES + WORK_BYTES)


def disk_free(path: Path) -> int:
    path.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        return shutil.disk_usage(path).free
    return 0
