"""Where one document came from and what happened to it: row fields, decisions, and the phases that draw it."""

from __future__ import annotations

import pandas as pd

from mixture.explorer.composition import cluster_labels, quality_names
from mixture.explorer.fmt import score
from mixture.explorer.plan_view import PlanView
from mixture.overview import numbers
from mixture.store.formats import StoreArtifact
from mixture.store.layout import cell_name

FIELDS = ["id", "source", "category", "origin", "content_type", "language", "language_score", "raw_score",
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


def fields(doc: dict, info: StoreArtifact) -> pd.DataFrame:
    """The document's lineage fields as a two-column table, with its cell and domain label."""
    k = info.partition.k
    names = quality_names(info)
    rows = [(f, _field_text(f, doc.get(f))) for f in FIELDS if f in doc]
    c, q = int(doc["cluster"]), int(doc["quality"])
    rows.append(("cell", cell_name(c, q, k)))
    rows.append(("domain", f"{c} · {cluster_labels(info).get(c, '?')}"))
    rows.append(("quality bucket", f"Q{q} {names[q] if q < len(names) else ''}"))
    return pd.DataFrame({"field": [r[0] for r in rows], "value": [str(r[1]) for r in rows]})


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
