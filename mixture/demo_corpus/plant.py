"""The two assembled sources with planted ground truth: web-like pages and exempt synthetic dialogues."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from .assemble import Group, dialogue, group_weights, long_document, n_words, web_document, web_length
from .docstrings import Docstring
from .model import RawLine, Record, Source
from .mutate import EXACT_VARIANTS, exact_copy, near_copy
from .textutil import dumps_line

MALFORMED_REASONS = ("invalid_json", "invalid_utf8", "missing_text", "empty_text", "wrong_type")
MAX_CHARS_FILTER = 1_000_000  # the demo spec's max_chars


@dataclass
class Counts:
    base: int
    exact: int
    near: int
    contaminated: int = 0
    malformed_each: int = 0
    large_chars: int = 0

    @classmethod
    def web(cls, scale: float) -> Counts:
        return cls(base=max(120, round(3000 * scale)), exact=max(8, round(48 * scale)),
                   near=max(6, round(36 * scale)), contaminated=max(5, round(30 * scale)),
                   malformed_each=max(1, round(4 * scale)), large_chars=max(1_250_000, round(3_000_000 * scale)))

    @classmethod
    def dialogues(cls, scale: float) -> Counts:
        return cls(base=max(60, round(2000 * scale)), exact=max(2, round(10 * scale)), near=max(4, round(30 * scale)))


@dataclass
class _Item:
    key: float
    make: Callable[[str], Record]  # id -> record
    base: int | None = None  # index of a base document
    copy_of: int | None = None  # base index this item copies
    truth: dict = field(default_factory=dict)  # kind plus extra fields


@dataclass
class Planted:
    source: Source
    truth: dict[str, list[dict]]  # ground-truth lists; malformed entries carry "index" (record position)


def _pick(rng: random.Random, pool: list[int], k: int, used: set[int]) -> list[int]:
    free = [i for i in pool if i not in used]
    picks = sorted(rng.sample(free, min(k, len(free))))
    used.update(picks)
    return picks


def _arrange(items: list[_Item], prefix: str, src: Source) -> dict[str, list[dict]]:
    """Sort items by key, give ids by position, resolve ground truth to ids."""
    order = sorted(range(len(items)), key=lambda i: (items[i].key, i))
    ids = {i: f"{prefix}-{pos:06d}" for pos, i in enumerate(order)}
    base_id = {items[i].base: ids[i] for i in order if items[i].base is not None}
    truth: dict[str, list[dict]] = {k: [] for k in ("exact_duplicates", "near_duplicates", "exempt_near_duplicates",
                                                      "contaminated", "malformed", "large_documents")}
    for pos, i in enumerate(order):
        it = items[i]
        src.records.append(it.make(ids[i]))
        t = dict(it.truth)
        kind = t.pop("kind", None)
        if kind is None:
            continue
        if kind == "malformed":
            truth[kind].append({"source": src.name, "index": pos, **t})
            continue
        entry = {"id": ids[i], "source": src.name}
        if it.copy_of is not None:
            entry["duplicate_of"] = base_id[it.copy_of]
        truth[kind].append({**entry, **t})
    return truth


def _doc(text: str) -> Callable[[str], Record]:
    return lambda i: {"id": i, "text": text}


def _malformed(reason: str, text: str, variant: int) -> Callable[[str], Record]:
    def make(i: str) -> Record:
        if reason == "invalid_json":
            line = dumps_line({"id": i, "text": text})
            bad = line[: len(line) // 2] if variant % 2 == 0 else repr({"id": i, "text": text[:400]})
            return RawLine(bad.encode(), reason, len(text) // 2)
        if reason == "invalid_utf8":
            head = dumps_line({"id": i, "text": text[:2000]})
            cut = head.find(" ", len(head) // 2)
            data = head[:cut].encode() + b"\xff\xfe\xc3(" + head[cut:].encode()
            return RawLine(data, reason, min(len(text), 2000))
        if reason == "missing_text":
            return RawLine(dumps_line({"id": i, "body": text}).encode(), reason)
        if reason == "empty_text":
            return RawLine(dumps_line({"id": i, "text": ""}).encode(), reason)
        value: object = 12345 + variant if variant % 2 == 0 else text.split("\n\n")[:3]
        return RawLine(dumps_line({"id": i, "text": value}).encode(), reason)

    return make


def _distinct(make: Callable[[], str], n: int) -> list[str]:
    """Up to n distinct texts drawn from `make` (at most 20·n draws)."""
    texts: list[str] = []
    seen: set[str] = set()
    for _ in range(20 * n):
        if len(texts) >= n:
            break
        t = make()
        if t not in seen:
            seen.add(t)
            texts.append(t)
    return texts


def _near_candidates(texts: list[str], need: int) -> list[int]:
    """Indexes of texts of 300-1000 words (near-copy originals), topped up with the longest others when too few
    (a small installation has few long texts)."""
    mid = [i for i, t in enumerate(texts) if 300 <= n_words(t) <= 1000]
    if len(mid) < need:
        taken = set(mid)
        rest = sorted((i for i in range(len(texts)) if i not in taken), key=lambda i: (-n_words(texts[i]), i))
        mid += rest[: need - len(mid)]
    return mid


def web_like(groups: list[Group], vocab: list[str], bench: list[dict], scale: float, rng: random.Random,
             id_prefix: str = "") -> Planted:
    src = Source(
        name="web-like", category="web", license="PSF-2.0 and package licenses (assembled real paragraphs)",
        fmt="jsonl",
        description=("Pages assembled from real paragraphs (docstrings, reference, package docs) with planted "
                     "exact/near duplicates, benchmark contamination, malformed records and one huge page"),
        bytes_per_file=3_000_000, min_files=3,
    )
    c = Counts.web(scale)
    cum = group_weights(groups)
    texts = _distinct(lambda: web_document(groups, cum, rng, web_length(rng)), c.base)
    n = len(texts)
    used: set[int] = set()
    n_near = max(1, round(c.near * 0.8))
    near_orig = _pick(rng, _near_candidates(texts, n_near), n_near, used)
    exact_orig = _pick(rng, list(range(n)), max(1, round(c.exact * 0.75)), used)
    cont = _pick(rng, list(range(n)), min(c.contaminated, len(bench)), used)
    bench = rng.sample(bench, len(cont))
    items: list[_Item] = []
    for b, i in zip(bench, cont, strict=False):  # contaminated: a benchmark question and answer pasted verbatim
        parts = texts[i].split("\n\n")
        parts.insert(rng.randint(1, len(parts)), f"{b['question']}\n{b['answer']}")
        texts[i] = "\n\n".join(parts)
    for i, t in enumerate(texts):
        truth = {"kind": "contaminated", "benchmark_id": bench[cont.index(i)]["id"]} if i in cont else {}
        items.append(_Item(float(i), _doc(t), base=i, truth=truth))
    for j in range(c.exact):
        o = exact_orig[j % len(exact_orig)]
        variant = EXACT_VARIANTS[j % len(EXACT_VARIANTS)]
        copy = exact_copy(texts[o], variant, rng)
        items.append(_Item(rng.uniform(o + 0.5, n), _doc(copy), copy_of=o,
                           truth={"kind": "exact_duplicates", "variant": variant}))
    for j in range(c.near):
        o = near_orig[j % len(near_orig)]
        copy, jac = near_copy(texts[o], rng, vocab)
        items.append(_Item(rng.uniform(o + 0.5, n), _doc(copy), copy_of=o,
                           truth={"kind": "near_duplicates", "jaccard": round(jac, 4)}))
    for r, reason in enumerate(MALFORMED_REASONS):
        for v in range(c.malformed_each):
            sample = texts[rng.randrange(n)]
            items.append(_Item(rng.uniform(0, n), _malformed(reason, sample, v + r),
                               truth={"kind": "malformed", "reason": reason}))
    big = long_document(groups, rng, c.large_chars)
    assert len(big) > MAX_CHARS_FILTER
    items.append(_Item(rng.uniform(n * 0.2, n * 0.8), _doc(big), truth={"kind": "large_documents", "chars": len(big)}))
    return Planted(src, _arrange(items, f"{id_prefix}web", src))


def synthetic_dialogues(modules: list[list[Docstring]], vocab: list[str], scale: float,
                        rng: random.Random, id_prefix: str = "") -> Planted:
    src = Source(
        name="synthetic-dialogues", category="synthetic",
        license="PSF-2.0 (assembled from stdlib docstrings)", fmt="jsonl.gz", exempt_from_fuzzy_dedup=True,
        description=("Seeded agentic dialogues (User/Assistant/Action/Observation turns) built from real "
                     "docstrings; planted near duplicates must survive (source exempt from fuzzy dedup)"),
    )
    c = Counts.dialogues(scale)
    weights = [len(m) for m in modules]
    texts = _distinct(lambda: dialogue(rng.choices(modules, weights)[0], rng), c.base)
    n = len(texts)
    used: set[int] = set()
    near_orig = _pick(rng, _near_candidates(texts, c.near), c.near, used)
    exact_orig = _pick(rng, list(range(n)), c.exact, used)
    items = [_Item(float(i), _doc(t), base=i) for i, t in enumerate(texts)]
    for o in near_orig:
        copy, jac = near_copy(texts[o], rng, vocab)
        items.append(_Item(rng.uniform(o + 0.5, n), _doc(copy), copy_of=o,
                           truth={"kind": "exempt_near_duplicates", "jaccard": round(jac, 4)}))
    for j, o in enumerate(exact_orig):
        variant = ("identical", "crlf")[j % 2]
        items.append(_Item(rng.uniform(o + 0.5, n), _doc(exact_copy(texts[o], variant, rng)), copy_of=o,
                           truth={"kind": "exact_duplicates", "variant": variant}))
    return Planted(src, _arrange(items, f"{id_prefix}dialogue", src))

