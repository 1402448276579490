"""Running the build's own fingerprint step over documents, and the rule as it stood before (every 13-gram of the
benchmark fields indexed) to show which real documents it got wrong."""

from __future__ import annotations

import re

import numpy as np
from datatrove.data import Document

from mixture.decontam.tokens import words
from mixture.pipelines.prepare.decontaminate import settings
from mixture.pipelines.prepare.fingerprint import Fingerprint
from mixture.spec.models import Decontamination
from mixture.text.shingles import WordHashes

from .realtext import Doc, humaneval_path

FIELDS = ["prompt", "canonical_solution"]
DETAIL = re.compile(r'^(?P<bench>\S+) item (?P<index>\d+)(?: \((?P<id>[^)]*)\))? (?P<field>\S+): "(?P<passage>[^"]*)" '
                    r"\((?P<mine>\d+) matching (?P<n>\d+)-grams(?:, (?P<all>\d+) in all)?\)$")


def humaneval_benchmark(fields: list[str] = FIELDS) -> list[dict]:
    """The benchmark as the build passes it to its steps (pipelines.context.BuildContext.benchmarks)."""
    return [{"name": "humaneval", "uri": str(humaneval_path()), "fields": list(fields), "id_field": "task_id"}]


def contaminated(docs: list[Doc], benchmarks: list[dict] | None = None, **spec) -> dict[str, str]:
    """{document id: drop detail} of the documents the build's Fingerprint step marks as contaminated."""
    step = Fingerprint(None, settings(Decontamination(**spec), benchmarks or humaneval_benchmark()))
    out = step.run(Document(text=d.text, id=d.id) for d in docs)
    return {d.id: d.metadata["contaminated"] for d in out if "contaminated" in d.metadata}


def every_ngram_matches(docs: list[Doc], records: list[dict], fields: list[str] = FIELDS, n: int = 13) -> set[str]:
    """The documents sharing any word n-gram with the records' fields (each and joined), every n-gram indexed as
    before the content rule: the thirteen zeros of a doctest included."""
    texts = []
    for rec in records:
        parts = [str(rec[f]) for f in fields if rec.get(f)]
        texts += [*parts, " ".join(parts)]
    index = np.unique(WordHashes.of(texts).ngrams(n)[0])
    out = set()
    for start in range(0, len(docs), 256):
        batch = docs[start:start + 256]
        grams, doc = WordHashes.of([d.text for d in batch]).ngrams(n)
        out |= {batch[i].id for i in np.unique(doc[np.isin(grams, index)])}
    return out


def parse_detail(detail: str) -> dict:
    m = DETAIL.match(detail)
    assert m, f"drop detail not of the form 'bench item i (id) field: \"words\" (k matching n-grams)': {detail!r}"
    return m.groupdict()


def same_words(a: str, b: str) -> bool:
    return [w.casefold() for w in words(a)] == [w.casefold() for w in words(b)]


def quoted_words_in(passage: str, text: str) -> bool:
    """The quoted words (a truncated quote's last, cut word left out) are a run of the words of `text`."""
    quoted = [w.casefold() for w in words(passage)]
    if passage.endswith("…"):
        quoted = quoted[:-1]
    whole = [w.casefold() for w in words(text)]
    k = len(quoted)
    return k > 0 and any(whole[i:i + k] == quoted for i in range(len(whole) - k + 1))
