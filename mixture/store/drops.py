"""Every reason a record does not reach the store, defined once: its counter in store.json, its label, and where
its rows live. store.json's counters, the audit, the build summary and the explorer all derive from `REASONS`."""

from __future__ import annotations

from dataclasses import dataclass

QUARANTINE_DIR = "_quarantine"
DROPPED_DIR = "_dropped"


def dropped_dir(reason: str) -> str:
    """`_dropped/<reason>`: the folder of the documents dropped for `reason`."""
    return f"{DROPPED_DIR}/{reason}"


@dataclass(frozen=True)
class DropReason:
    """One way a record leaves the build: counted in store.json under `counter` (in `counters` and in each
    `sources[]` entry), its rows kept as Parquet under `folder` by the tasks of `stages`."""

    name: str  # the reason (the folder name under _dropped/, and the rows' `reason` column there)
    counter: str  # key in store.json `counters` and `sources[]`
    label: str  # human label (build summary, explorer)
    description: str
    folder: str  # store-relative folder of its rows
    stages: tuple[str, ...]  # the build stages whose tasks write those rows
    breakdown: tuple[str, str] | None = None  # (column of its rows, store.json key of the counts by that column)

    @property
    def quarantined(self) -> bool:
        """Bad input (kept as raw records in `_quarantine/`) rather than a dropped document (`_dropped/`)."""
        return self.folder == QUARANTINE_DIR


# In the order a record meets them in the build summary and the explorer's funnel.
REASONS: tuple[DropReason, ...] = (
    DropReason("bad_input", "bad_input", "bad input",
               "a record that cannot be read as a document (invalid JSON or UTF-8, no or empty text, a wrong type, "
               "a repeated id), kept raw with the reason", QUARANTINE_DIR, ("prepare", "assign"),
               ("reason", "bad_input_by_reason")),
    DropReason("filtered", "filtered", "filtered",
               "a document a quality gate rejects (length, words, symbol ratio, repeated lines); `detail` names "
               "the gate and its measured value against the limit (`<gate>: …`)", dropped_dir("filtered"), ("prepare",), ("detail", "filtered_by_reason")),
    DropReason("exact_duplicate", "exact_duplicate_dropped", "exact duplicate",
               "a document whose normalised text equals a kept document's", dropped_dir("exact_duplicate"),
               ("assign",)),
    DropReason("fuzzy_duplicate", "fuzzy_duplicate_dropped", "fuzzy duplicate",
               "a near duplicate of a kept document (MinHash LSH, verified on the pair)", dropped_dir("fuzzy_duplicate"), ("assign",)),
    DropReason("contaminated", "contaminated_dropped", "contaminated",
               "a document sharing content-carrying n-grams with a benchmark (decontamination); `detail` names the "
               "benchmark item, the field and the document's matching words", dropped_dir("contaminated"),
               ("prepare",)),
)
BY_NAME = {r.name: r for r in REASONS}
BY_COUNTER = {r.counter: r for r in REASONS}
COUNTERS = tuple(r.counter for r in REASONS)
DROPPED_REASONS = tuple(r.name for r in REASONS if not r.quarantined)  # the folders under _dropped/


def reason(name: str) -> DropReason:
    """The registered reason `name`; raises KeyError naming the known ones."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown drop reason {name!r}; known: {', '.join(BY_NAME)}") from None


def dropped_by(stage: str) -> tuple[DropReason, ...]:
    """The `_dropped/` reasons whose rows the tasks of `stage` write."""
    return tuple(r for r in REASONS if stage in r.stages and not r.quarantined)
