"""Variants of the demo corpus: the same documents with their words consistently swapped for other words of the
same corpus, so that n variants hold n times as much distinct text with the same mix (README.md, "Variants")."""

from __future__ import annotations

import builtins
import keyword
import math
import random
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from functools import cache

import xxhash

# characters that are units on their own: scripts written without spaces (as the decontamination's n-grams count
# them) and the supplementary planes (historic and minority scripts, CLDR names in them)
CHAR_UNIT = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00010000-\U0010ffff]")
RATE = 0.5  # share of the swappable words a variant replaces
COMMON = 200  # the corpus's most frequent words are swapped only in documents made of little else
MIN_CHANGED = 0.05  # below this share of changed words a document is rewritten with every eligible word swapped
DEFAULT_GROUP = ""  # documents without a language label; a labelled one swaps within its language's words
KEEP = frozenset(w.lower() for w in (*keyword.kwlist, *dir(builtins), "self", "cls"))  # code stays code


@cache
def unit_re() -> re.Pattern:
    """Runs of letters and combining marks (the vowel signs of Indic scripts are marks, not letters), CJK left
    out; `split` keeps the runs at odd positions. One character class (~700 ranges): an alternation of a letter
    class and a mark class made the split 5x slower."""
    ranges: list[list[int]] = []
    for cp in range(0x10000):
        ch = chr(cp)
        if unicodedata.category(ch)[0] in "LM" and not CHAR_UNIT.match(ch):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    return re.compile("([" + "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "")
                                     for a, b in ranges) + "]+)")


def _script(word: str) -> str:
    return unicodedata.name(word[0], "?").split(" ", 1)[0]


def _band(count: int) -> int:
    """Frequency band: a word becomes one about as frequent, so the text keeps its statistics (and token count)."""
    return min(12, int(math.log2(count)))


def camel_parts(unit: str) -> list[str]:
    """A run of letters cut where a new word starts in it: `maximumPageSize` -> maximum, Page, Size; `HTTPServer`
    -> HTTP, Server."""
    parts, start = [], 0
    for i in range(1, len(unit)):
        a, b = unit[i - 1], unit[i]
        if (a.islower() and b.isupper()) or (
                a.isupper() and b.isupper() and i + 1 < len(unit) and unit[i + 1].islower()):
            parts.append(unit[start:i])
            start = i
    parts.append(unit[start:])
    return parts


def _cased(like: str, word: str) -> str:
    """`word` (lower case, as long as `like`) in the letter case of `like` (lower, Title or UPPER)."""
    if not like[:1].isupper():
        return word
    if like.isupper() and len(like) > 1:
        up = word.upper()
        return up if len(up) == len(word) else word
    head = word[:1].upper()
    return head + word[1:] if len(head) == 1 else word


class Rewriter:
    """Word swaps learnt from a corpus. A unit is a run of letters (cut into words where a capital starts a new
    word) or one CJK character. Variant `v` replaces a seeded RATE of the swappable words (eligible: not a Python
    keyword or builtin, longer than two letters unless CJK; swappable: eligible and not among the COMMON most
    frequent) by another eligible word of the same language group, script, length and frequency band, the same
    way in every document, keeping the letter case; digits go through a seeded permutation. A document in which
    under MIN_CHANGED of the words changed (JSON keys, a three-line test module) is rewritten with every eligible
    word swapped. Whitespace, punctuation and lengths stay as they are, so exact and near duplicates inside a
    variant stay duplicates and malformed or oversized records keep their kind, while two variants of a document
    share few word 5-grams."""

    def __init__(self, documents: Iterable[tuple[str, str]], *, rate: float = RATE, common: int = COMMON):
        """`documents`: (language group, text); DEFAULT_GROUP for unlabelled text."""
        self.rate = rate
        units: dict[str, Counter] = defaultdict(Counter)  # group -> units as written
        for group, text in documents:
            units[group].update(unit_re().split(text)[1::2])
            if CHAR_UNIT.search(text):
                units[group].update(CHAR_UNIT.findall(text))
        words: dict[str, Counter] = {}  # group -> lower-case words
        total: Counter = Counter()
        for group, c in units.items():
            w: Counter = Counter()
            for unit, n in c.items():
                for part in camel_parts(unit):
                    w[part.lower()] += n
            words[group] = w
            total.update(w)
        self.common = {u for u, _ in total.most_common(common)}
        self.units = {g: sorted(u for u in c if len(u.lower()) == len(u)) for g, c in sorted(units.items())}
        self.pools: dict[str, dict[str, list[str]]] = {}  # group -> eligible word -> the words it may become
        for group, w in sorted(words.items()):
            eligible = sorted(u for u in w if self._eligible(u))
            fine: dict[tuple, list[str]] = defaultdict(list)
            coarse: dict[tuple, list[str]] = defaultdict(list)
            for u in eligible:
                fine[(_script(u), len(u), _band(w[u]))].append(u)
                coarse[(_script(u), len(u))].append(u)
            pools = {}
            for u in eligible:
                pool = fine[(_script(u), len(u), _band(w[u]))]
                pool = pool if len(pool) > 1 else coarse[(_script(u), len(u))]
                if len(pool) > 1:
                    pools[u] = pool
            self.pools[group] = pools

    @staticmethod
    def _eligible(word: str) -> bool:
        if len(word) == 1 and CHAR_UNIT.match(word):
            return unicodedata.category(word)[0] in "LM"
        return word not in KEEP and len(word) > 2 and len(word.upper()) == len(word)

    def tables(self, variant: int, group: str = DEFAULT_GROUP, strong: bool = False) -> tuple[dict[str, str], dict]:
        """({unit as written: its replacement}, str.translate table for CJK characters and digits) of `variant` for
        the units of `group`; `strong`: every eligible word swapped, common ones too."""
        pools = self.pools.get(group, {})
        picked: dict[str, str | None] = {}
        words: dict[str, str] = {}
        chars: dict[int, str] = self._digits(variant)
        for unit in self.units.get(group, ()):
            parts = []
            for part in camel_parts(unit):
                low = part.lower()
                if low not in picked:
                    picked[low] = self._pick(variant, group, low, pools.get(low), strong)
                new = picked[low]
                parts.append(part if new is None else _cased(part, new))
            new_unit = "".join(parts)
            if new_unit == unit:
                continue
            if len(unit) == 1 and CHAR_UNIT.match(unit):
                chars[ord(unit)] = new_unit
            else:
                words[unit] = new_unit
        return words, chars

    def _pick(self, variant: int, group: str, low: str, pool: list[str] | None, strong: bool) -> str | None:
        if pool is None or (low in self.common and not strong):
            return None
        h = xxhash.xxh3_64_intdigest(f"{variant}\x00{group}\x00{low}")
        if not strong and (h & 0xFFFFFFFF) >= self.rate * 2**32:
            return None
        i = (h >> 32) % len(pool)
        return pool[i] if pool[i] != low else pool[(i + 1) % len(pool)]

    @staticmethod
    def _digits(variant: int) -> dict[int, str]:
        perm = list("0123456789")
        random.Random(f"digits:{variant}").shuffle(perm)
        return {ord(a): b for a, b in zip("0123456789", perm, strict=True)}

    @staticmethod
    def rewrite(text: str, words: dict[str, str], chars: dict, keep: Iterable[str] = ()) -> tuple[str, float]:
        """`text` with its units swapped by the tables of `tables`, and the share of its word units that changed
        (1.0 when it has none); every string of `keep` in it stays verbatim (a benchmark item pasted into a
        document must still match the benchmark)."""
        for k in keep:
            if k and k in text:
                done = [Rewriter.rewrite(part, words, chars, keep) for part in text.split(k)]
                return k.join(t for t, _ in done), min(s for _, s in done)
        parts = unit_re().split(text)
        units = parts[1::2]
        changed = sum(map(words.__contains__, units)) / len(units) if units else 1.0
        return "".join(map(words.get, parts, parts)).translate(chars), changed

    def document(self, variant: int, group: str, text: str, keep: Iterable[str] = ()) -> str:
        """`text` as it reads in `variant` (tables of the last variant asked are kept)."""
        out, changed = self.rewrite(text, *self._tables(variant, group, False), keep)
        if changed < MIN_CHANGED:
            out, _ = self.rewrite(text, *self._tables(variant, group, True), keep)
        return out

    def _tables(self, variant: int, group: str, strong: bool) -> tuple[dict[str, str], dict]:
        cache = self.__dict__.setdefault("_cache", {})
        if cache.get("variant") != variant:
            cache.clear()
            cache["variant"] = variant
        key = (group, strong)
        if key not in cache:
            cache[key] = self.tables(variant, group, strong)
        return cache[key]
