"""Where one document came from and what happened to it: row fields, decisions, the checks a kept document passed
(with the evidence the store holds), the documents a dropped one duplicates, and the phases that draw it."""

from __future__ import annotations

import re

import pandas as pd

from mixture.composition import numbers
from mixture.composition.figures import quality_names, readable_labels
from mixture.composition.labels import DomainLabel, label_of
from mixture.explorer.fmt import score
from mixture.explorer.plan_view import PlanView
from mixture.store.formats import StoreArtifact
from mixture.store.layout import cell_name

TWIN = re.compile(r"'([^']+)'")  # the kept document a duplicate's detail names: "same text as 'id' (…)"
FIELDS = ["id", "source", "category", "origin", "content_type", "code_language", "language", "language_score", "raw_score",
          "quality_score", "n_tokens", "n_chars", "cluster", "quality", "fine_cluster", "cluster_distance"]


def decisions(doc: dict | None, doc_id: str, dropped: pd.DataFrame, quarantine: pd.DataFrame,
              info: StoreArtifact) -> list[dict]:
    """Every recorded decision about `doc_id`: kept (with its cell), dropped (reason, detail), quarantined."""
    out = []
    k = info.partition.k
    if doc is not None:
        cell = cell_name(int(doc["cluster"]), int(doc["quality"]), k)
        out.append({"decision": "kept", "reason": "", "detail": f"written to cell {cell}", "where": cell})
    if not dropped.empty and "id" in dropped:
        for r in dropped[dropped.id == doc_id].to_dict("records"):
            out.append({"decision": "dropped", "reason": r.get("reason", ""), "detail": r.get("detail", ""),
                        "where": r.get("origin", "")})
    origin = (doc or {}).get("origin")
    if origin and not quarantine.empty and {"file", "record"} <= set(quarantine.columns):
        keys = quarantine.file.astype(str) + ":" + quarantine.record.astype(str)
        for r in quarantine[keys == origin].to_dict("records"):
            out.append({"decision": "quarantined", "reason": r.get("reason", ""), "detail": r.get("detail", ""),
                        "where": origin})
    return out


def fields(doc: dict, info: StoreArtifact, labels: dict[int, DomainLabel] | None = None) -> pd.DataFrame:
    """The document's lineage fields as a two-column table: its cell, domain and bucket first, then its row."""
    k = info.partition.k
    names = quality_names(info)
    c, q = int(doc["cluster"]), int(doc["quality"])
    rows = [("cell", cell_name(c, q, k)), ("domain", f"{c} · {label_of(readable_labels(info, labels), c).text}"),
            ("quality bucket", f"Q{q} {names[q] if q < len(names) else ''}")]
    rows += [(f, _field_text(f, doc.get(f))) for f in FIELDS if f in doc]
    return pd.DataFrame({"field": [r[0] for r in rows], "value": [str(r[1]) for r in rows]})


DROPPED_FIELDS = ["id", "source", "origin", "reason", "n_chars"]  # what `_dropped/` keeps of one, beside its text head


def _dropped_row(doc_id: str, dropped: pd.DataFrame) -> dict | None:
    if dropped.empty or "id" not in dropped:
        return None
    rows = dropped[dropped.id == doc_id]
    return rows.iloc[0].to_dict() if len(rows) else None


def dropped_fields(doc_id: str, dropped: pd.DataFrame) -> pd.DataFrame | None:
    """A dropped document's own fields as a two-column table (None when `_dropped/` has no row of it)."""
    row = _dropped_row(doc_id, dropped)
    if row is None:
        return None
    rows = [(f, numbers.count(row[f]) if f == "n_chars" and row.get(f) is not None else row.get(f))
            for f in DROPPED_FIELDS if f in row]
    return pd.DataFrame({"field": [r[0] for r in rows], "value": [str(r[1]) for r in rows]})


def dropped_head(doc_id: str, dropped: pd.DataFrame) -> str:
    """The head of a dropped document's text, as `_dropped/` keeps it ('' when none)."""
    row = _dropped_row(doc_id, dropped)
    return str(row.get("text_head") or "") if row is not None else ""


def twin(reason: str, detail: str) -> str | None:
    """The kept document a dropped duplicate's detail names ("same text as 'X' (…)", "near duplicate of 'X' …")."""
    if reason not in ("exact_duplicate", "fuzzy_duplicate"):
        return None
    m = TWIN.search(detail or "")
    return m.group(1) if m else None


def duplicates_of(doc_id: str, dropped: pd.DataFrame) -> dict[str, list[str]]:
    """{reason: ids} of the dropped documents whose detail names `doc_id` as the kept one they duplicate."""
    if dropped.empty or "detail" not in dropped:
        return {}
    out: dict[str, list[str]] = {}
    for r in dropped[dropped.detail.astype(str).str.contains(f"'{doc_id}'", regex=False)].itertuples():
        if twin(str(r.reason), str(r.detail)) == doc_id:
            out.setdefault(str(r.reason), []).append(str(r.id))
    return out


def _spec_filters(info: StoreArtifact) -> dict[str, object]:
    """The quality gates' settings from the spec the store was built from (store.json provenance), flattened."""
    spec = info.provenance.spec
    filters = (spec.get("processing") or {}).get("filters") or {}
    flat: dict[str, object] = {}
    for group, settings in filters.items():
        if isinstance(settings, dict):
            flat |= {k: v for k, v in settings.items() if v is not None and not isinstance(v, dict | list)}
        elif settings is not None:
            flat[group] = settings
    return flat


def near_duplicate_cut(info: StoreArtifact) -> float | None:
    """The word n-gram Jaccard similarity at or above which a candidate pair counted as near duplicates: what the
    verification compared against (store.json `near_duplicates.threshold`; else the spec's fuzzy `threshold`),
    which is the LSH threshold (`dedup.fuzzy_threshold`) only when the spec sets no threshold of its own."""
    if info.near_duplicates is not None:
        return info.near_duplicates.threshold
    if info.dedup is None:
        return None
    return info.dedup.fuzzy.get("threshold") or info.dedup.fuzzy_threshold


def _setting(v: object) -> str:
    return numbers.count(v) if isinstance(v, int) and not isinstance(v, bool) else str(v)


def checks(doc: dict, info: StoreArtifact, dropped: pd.DataFrame) -> list[dict]:
    """The checks a kept document passed, each with the evidence store.json and `_dropped/` hold: quality gates,
    exact dedup, near dedup, decontamination. `evidence` is Markdown (escaped by the caller's data: numbers,
    settings and names from store.json)."""
    out = []
    gates = _spec_filters(info)
    n_chars = doc.get("n_chars")
    evidence = " · ".join(f"{k} {_setting(v)}" for k, v in gates.items()) or "the spec's gates"
    if n_chars is not None:
        evidence += f"; its length: {numbers.count(n_chars)} characters"
    dropped_by = sum(info.filtered_by_reason.values())
    evidence += f"; the gates dropped {numbers.count(dropped_by)} documents of this build" + (
        f" ({', '.join(f'{k} {numbers.count(v)}' for k, v in sorted(info.filtered_by_reason.items()))})"
        if info.filtered_by_reason else "")
    out.append({"check": "quality gates", "result": "passed", "evidence": evidence})
    dups = duplicates_of(str(doc.get("id")), dropped)
    dedup = info.dedup
    if dedup is None or dedup.exact:
        n = len(dups.get("exact_duplicate", []))
        out.append({"check": "exact dedup", "result": "passed",
                    "evidence": "no earlier document had its normalised text; "
                                + (f"{n} later copies of it were dropped" if n else "no copy of it was dropped")})
    else:
        out.append({"check": "exact dedup", "result": "not run", "evidence": "exact dedup is off in this build"})
    source = next((s for s in info.sources if s.name == doc.get("source")), None)
    fuzzy = dedup.fuzzy if dedup is not None else {}
    if source is not None and source.exempt_from_fuzzy_dedup:
        out.append({"check": "near dedup", "result": "exempt",
                    "evidence": f"its source {source.name} is exempt from fuzzy dedup (exact dedup still applies)"})
    elif dedup is not None and fuzzy.get("enabled", True):
        n = len(dups.get("fuzzy_duplicate", []))
        out.append({"check": "near dedup", "result": "passed",
                    "evidence": f"MinHash LSH ({fuzzy.get('permutations', '?')} permutations, "
                                f"{fuzzy.get('bands', '?')} bands) found no earlier kept document at word "
                                f"{fuzzy.get('ngram', '?')}-gram Jaccard ≥ {near_duplicate_cut(info):.3f}; "
                                + (f"{n} near duplicates of it were dropped" if n else "no near duplicate of it "
                                   "was dropped")})
    else:
        out.append({"check": "near dedup", "result": "not run", "evidence": "fuzzy dedup is off in this build"})
    dec = info.decontamination
    if dec is not None and dec.benchmarks:
        names = ", ".join(f"{b.name} ({numbers.count(b.items)} items)" for b in dec.benchmarks)
        out.append({"check": "decontamination", "result": "passed",
                    "evidence": ("none" if dec.min_matches == 1 else f"fewer than {dec.min_matches}")
                                + f" of its {dec.ngram}-grams match {names}; "
                                f"{numbers.count(info.counters.contaminated_dropped)} documents of this build "
                                "were dropped as contaminated"})
    else:
        out.append({"check": "decontamination", "result": "not run", "evidence": "no benchmark in this build's spec"})
    return out


def _field_text(name: str, value: object) -> object:
    if isinstance(value, float) and name.endswith(("_score", "_distance")):
        return score(value)
    if name in ("n_tokens", "n_chars") and value is not None:
        return numbers.count(value)
    return value


def phases_drawing(plan: PlanView | None, cell: str) -> pd.DataFrame:
    """Phases of the plan that give this cell a positive weight, with weight, tokens and the cell's epochs."""
    if plan is None:
        return pd.DataFrame()
    rows = [{"phase": p.name, "weight": p.weights.get(cell, 0.0), "tokens": p.weights.get(cell, 0.0) * p.tokens}
            for p in plan.phases if p.weights.get(cell, 0.0) > 0]
    df = pd.DataFrame(rows, columns=["phase", "weight", "tokens"])
    df["weight"] = [numbers.weight(w) for w in df.weight]
    df["tokens"] = [numbers.tokens(t) for t in df.tokens]
    df["cell epochs"] = numbers.epochs(plan.exposure.get(cell))
    return df
