"""The `pool` duplicate profile: a web-crawl source per variant whose duplicates look like a real pool's — exact
and near copies within and across variants and sources, template families with a heavy tail, chains of near copies
(A ~ B ~ C with A ≁ C) that run on from variant to variant — and its ground truth."""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass, field

import xxhash

from .assemble import Group, group_weights
from .model import Source
from .mutate import EXACT_VARIANTS, exact_copy, near_copy
from .textutil import SHINGLE_SIZE as SHINGLE
from .textutil import jaccard, normalize, words
from .variants import DEFAULT_GROUP, Rewriter

SOURCE = "web-crawl"
PROFILES = ("planted", "pool")  # `planted`: the demo corpus as it always was; `pool`: with the web-crawl source
TRUTH = ("pool_copies", "pool_families", "pool_chains", "pool_kept")
MEDIAN_WORDS, SIGMA = 520, 0.5  # page length: log-normal, ~900 cl100k tokens at the median (web pages: 600-1,200)
PAGE_MIN_WORDS = 300  # at least 3-4 paragraphs
PARAGRAPH_WORDS = 120  # the longest paragraph a page takes
TEMPLATE_MIN_WORDS = 500  # a family's template: long enough that 10 changed slots keep members at Jaccard >= 0.8
SLOTS = 10  # the words a family member fills in its template
LARGEST_FAMILY = 256  # members per variant of the largest family at scale 1 (~1.5 % of a variant's documents)
CHAIN_STEP = 0.0222  # share of a chain page's words replaced per link: Jaccard ~0.80 next, ~0.64 two links apart
LINKS = 4  # links each chain gains per variant
_TOKEN_RE = re.compile(r"(\s+)")


@dataclass(frozen=True)
class PoolCounts:
    """Documents of the web-crawl source in one variant at `scale`."""

    pages: int
    copies: int
    families: int
    chains: int
    largest: int

    @classmethod
    def at(cls, scale: float) -> PoolCounts:
        return cls(pages=max(60, round(2000 * scale)), copies=max(20, round(1800 * scale)),
                   families=max(4, round(40 * min(1.0, scale))), chains=max(3, round(30 * scale)),
                   largest=max(12, round(LARGEST_FAMILY * scale)))

    def family_size(self, rank: int) -> int:
        """Members per variant of the family of `rank` (1 = the largest): a Zipf tail, at least 2."""
        return max(2, round(self.largest / rank))


@dataclass
class _Doc:
    key: float
    id: str
    text: str


@dataclass
class WebCrawl:
    """What the profile adds to one variant: the source and its ground truth (TRUTH's keys)."""

    source: Source
    truth: dict[str, list[dict]] = field(default_factory=dict)


def _rng(seed: int, *name: object) -> random.Random:
    return random.Random(f"{seed}:pool:" + ":".join(map(str, name)))


def _length(rng: random.Random, minimum: int = PAGE_MIN_WORDS) -> int:
    return int(min(4000, max(minimum, rng.lognormvariate(math.log(MEDIAN_WORDS), SIGMA))))


def _page(groups: list[Group], cum: list[int], rng: random.Random, target: int) -> str:
    """A title, then single paragraphs of at most PARAGRAPH_WORDS words from random origins until `target` words:
    no long run of one origin, so two pages (or a page and a web-like page, which takes runs of 1-3 paragraphs)
    sharing a paragraph stay far apart and only the planted copies are near duplicates."""
    title = rng.choices(groups, cum_weights=cum)[0].title
    parts, count = [title], 0
    while count < target:
        g = rng.choices(groups, cum_weights=cum)[0]
        p = g.paragraphs[rng.randrange(len(g.paragraphs))]
        if len(p.split()) <= PARAGRAPH_WORDS:
            parts.append(p)
            count += len(p.split())
    return normalize("\n\n".join(parts))


def _slots(tokens: list[str]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t.isalpha() and len(t) > 2]


def _word(vocab: list[str], like: str, *key: object) -> str:
    w = vocab[xxhash.xxh3_64_intdigest(":".join(map(str, key))) % len(vocab)]
    return w.capitalize() if like[:1].isupper() else w


class Pool:
    """The profile's documents for one seed and scale: pages (as a variant reads them), templates and chains."""

    def __init__(self, groups: list[Group], vocab: list[str], seed: int, scale: float,
                 rewriter: Rewriter | None):
        self.groups, self.vocab, self.seed, self.rewriter = groups, vocab, seed, rewriter
        self.cum = group_weights(groups)
        self.counts = PoolCounts.at(scale)

    def page(self, variant: int, i: int) -> str:
        """Base page i of `variant`: assembled from real paragraphs, its words swapped as the variant's are."""
        rng = _rng(self.seed, "page", variant, i)
        text = _page(self.groups, self.cum, rng, _length(rng))
        return self.rewriter.document(variant, DEFAULT_GROUP, text) if self.rewriter and variant else text

    def template(self, family: int) -> list[str]:
        rng = _rng(self.seed, "family", family)
        return _TOKEN_RE.split(_page(self.groups, self.cum, rng, _length(rng, TEMPLATE_MIN_WORDS)))

    def member(self, template: list[str], family: int, variant: int, m: int) -> str:
        """Member m of a family in `variant`: its template with SLOTS evenly spread words filled in."""
        slots = _slots(template)
        step = max(1, len(slots) // SLOTS)
        out = list(template)
        for j in range(min(SLOTS, len(slots))):
            i = slots[j * step + step // 2] if j * step + step // 2 < len(slots) else slots[j]
            out[i] = _word(self.vocab, template[i], self.seed, family, variant, m, j)
        return "".join(out)

    def chain(self, c: int, links: int) -> list[str]:
        """Links 0 … links-1 of chain c: each replaces CHAIN_STEP of the words, at least SHINGLE words apart from
        one another and from those the link before replaced, so each breaks its own shingles."""
        rng = _rng(self.seed, "chain", c)
        tokens = _TOKEN_RE.split(_page(self.groups, self.cum, rng, _length(rng, TEMPLATE_MIN_WORDS)))
        at = list(itertools.accumulate(len(words(t)) for t in tokens))  # a token's word position
        slots = _slots(tokens)
        k = max(1, round(CHAIN_STEP * at[-1]))
        out, last = ["".join(tokens)], []
        for step in range(1, links):
            order = list(slots)
            _rng(self.seed, "chain", c, step).shuffle(order)
            picks: list[int] = []
            for i in order:
                if len(picks) == k:
                    break
                if all(abs(at[i] - at[j]) >= SHINGLE for j in (*picks, *last)):
                    picks.append(i)
            for i in picks:
                tokens[i] = _word(self.vocab, tokens[i], self.seed, "chain", c, step, i)
            last = picks
            out.append("".join(tokens))
        return out


def web_crawl(pool: Pool, variant: int, first: int, prefix: str, others: list[tuple[str, dict]]) -> WebCrawl:
    """The web-crawl source of `variant` (`first`: the first variant of the series, where families and chains
    start). `others`: (source name, record) of the variant's other web pages a copy may be taken from (written
    earlier in spec order)."""
    c, seed = pool.counts, pool.seed
    src = Source(name=SOURCE, category="web", fmt="jsonl.zst",
                 license="PSF-2.0 and package licenses (assembled real paragraphs)",
                 description=("Web-crawl-like pages with a real pool's duplicate structure: exact and near copies "
                              "within and across variants and sources, template families with a heavy tail, "
                              "chains of near copies"))
    truth: dict[str, list[dict]] = {k: [] for k in TRUTH}
    rng = _rng(seed, "variant", variant)
    docs: list[_Doc] = []
    pages = [pool.page(variant, i) for i in range(c.pages)]
    ids = [f"{prefix}crawl-{i:06d}" for i in range(c.pages)]
    docs += [_Doc(float(i), ids[i], t) for i, t in enumerate(pages)]

    # copies: of this variant's pages (after their original), of the variant before's (any place), of other sources
    earlier: list[tuple[str, str, str]] = []  # (source, id, text) of the variant before's pages
    if variant > first:
        wanted = sorted({rng.randrange(c.pages) for _ in range(c.copies // 3)})
        earlier = [(SOURCE, f"{_prefix(variant - 1)}crawl-{i:06d}", pool.page(variant - 1, i)) for i in wanted]
    for j in range(c.copies):
        kind = "exact" if j % 5 < 3 else "near"
        r = rng.random()
        if r < 0.25 and others:
            name, rec = others[rng.randrange(len(others))]
            of, original, text, key = name, rec["id"], rec["text"], rng.uniform(0, c.pages)
        elif r < 0.55 and earlier:
            of, original, text = earlier[rng.randrange(len(earlier))]
            key = rng.uniform(0, c.pages)
        else:
            o = rng.randrange(c.pages)
            of, original, text, key = SOURCE, ids[o], pages[o], rng.uniform(o + 0.5, c.pages)
        entry = {"id": f"{prefix}crawl-copy-{j:06d}", "duplicate_of": original, "of_source": of, "kind": kind}
        if kind == "exact":
            copy = exact_copy(text, EXACT_VARIANTS[j % len(EXACT_VARIANTS)], rng)
        else:
            try:
                copy, jac = near_copy(text, rng, pool.vocab)
            except ValueError:  # too short for a near copy: an exact one
                copy, entry["kind"] = exact_copy(text, "identical", rng), "exact"
            else:
                entry["jaccard"] = round(jac, 4)
        docs.append(_Doc(key, entry["id"], copy))
        truth["pool_copies"].append(entry)
        truth["pool_kept"].append({"id": original, "why": f"the original of {kind} copies"})

    for f in range(c.families):
        template, size = pool.template(f), c.family_size(f + 1)
        members = [f"{prefix}crawl-f{f:03d}-{m:05d}" for m in range(size)]
        for m, member_id in enumerate(members):
            key = -1.0 if (variant == first and m == 0) else rng.uniform(0, c.pages)
            docs.append(_Doc(key, member_id, pool.member(template, f, variant, m)))
        root = f"{_prefix(first)}crawl-f{f:03d}-00000"
        truth["pool_families"].append({"family": f, "root": root, "members": members})
        if variant == first:
            truth["pool_kept"].append({"id": root, "why": f"the first member of template family {f}"})

    for ch in range(c.chains):
        start = (variant - first) * LINKS
        texts = pool.chain(ch, start + LINKS)
        keys = sorted(rng.uniform(0, c.pages) for _ in range(LINKS))
        links = []
        for k in range(start, start + LINKS):
            links.append(f"{prefix}crawl-chain{ch:03d}-{k:04d}")
            docs.append(_Doc(keys[k - start], links[-1], texts[k]))
        truth["pool_chains"].append({
            "chain": ch, "links": links,
            "after": f"{_prefix(variant - 1)}crawl-chain{ch:03d}-{start - 1:04d}" if start else None,
            "jaccard_next": [round(jaccard(texts[k - 1], texts[k]), 4) for k in range(max(start, 1), len(texts))],
            "jaccard_skip": [round(jaccard(texts[k - 2], texts[k]), 4) for k in range(max(start, 2), len(texts))]})
        if not start:
            truth["pool_kept"].append({"id": links[0], "why": f"the first link of chain {ch}"})

    docs.sort(key=lambda d: (d.key, d.id))
    src.records = [{"id": d.id, "text": d.text} for d in docs]
    truth["pool_kept"] = list({e["id"]: e for e in truth["pool_kept"]}.values())
    return WebCrawl(src, truth)


def _prefix(variant: int) -> str:
    """The id prefix of a variant's documents (corpus.py: none in variant 0)."""
    return f"v{variant}/" if variant else ""
