"""A store built from `pool`-profile demo corpora (mixture/demo_corpus/crawl.py) against their ground truth: every
named kept document kept (one that its own source's text holds a verified near duplicate of is listed apart), every
near-duplicate drop verified at the threshold against a kept document, how many of the planted copies, family
members and chain links went, and the duplicates' share of the input.

`python -m bench.pool_truth STORE CORPUS_VARIANT...` prints the figures as JSON."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds

from mixture.demo_corpus.crawl import SOURCE
from mixture.store.formats import read_store_artifact

DETAIL = re.compile(r"near duplicate of '(.+)' \((.+?), .*\): word (\d+)-gram Jaccard ([0-9.]+)(?: \(.*\))?$")
DUPLICATE_REASONS = ("exact_duplicate", "fuzzy_duplicate")


def _table(files: list[Path], columns: list[str]) -> list[dict]:
    return ds.dataset([str(f) for f in files]).to_table(columns=columns).to_pylist() if files else []


def store_facts(store: Path) -> tuple[dict[str, int], dict[str, list[dict]]]:
    """({kept id: its characters}, {reason: dropped rows}) of a local store; ids are unique across the demo's
    sources."""
    kept = {r["id"]: r["n_chars"] for r in _table(sorted(store.glob("cluster=*/quality=*/*.parquet")),
                                                  ["id", "n_chars"])}
    dropped = {d.name: _table(sorted(d.glob("*.parquet")), ["id", "source", "detail", "n_chars"])
               for d in sorted((store / "_dropped").iterdir()) if d.is_dir()}
    return kept, dropped


def check(store: Path, variants: list[Path]) -> dict:
    """The store's decisions against the ground truth of every variant it was built from (spec order = the
    variants' order)."""
    truth = [json.loads((v / "ground_truth.json").read_text()) for v in variants]
    art = read_store_artifact(str(store / "store.json"))
    threshold = art.near_duplicates.threshold if art.near_duplicates else None
    kept, dropped = store_facts(store)
    gone = {r["id"]: reason for reason, rows in dropped.items() for r in rows}
    fuzzy = dropped.get("fuzzy_duplicate", [])
    unverified, verified = [], {}
    for row in fuzzy:
        m = DETAIL.match(row["detail"] or "")
        if not m or float(m.group(4)) < threshold or m.group(1) not in kept:
            unverified.append(row)
        else:
            verified[row["id"]] = (m.group(1), float(m.group(4)))

    copies = [e for t in truth for e in t.get("pool_copies", [])]
    families = [f for t in truth for f in t.get("pool_families", [])]
    members = [m for f in families for m in f["members"] if m != f["root"]]
    links = [(i, link) for t in truth for c in t.get("pool_chains", []) for i, link in enumerate(c["links"])]
    planted = {e["id"] for e in copies} | {m for f in families for m in f["members"]} | {link for _, link in links}
    # an original the crawl copied from another source may itself be a near duplicate in that source's real text
    # (two pages of one README): dropped for an unplanted kept document, verified at the threshold, it is not lost
    named = [e for t in truth for e in t.get("pool_kept", [])]
    in_source = [{**e, "near_duplicate_of": verified[e["id"]][0], "jaccard": verified[e["id"]][1]} for e in named
                 if e["id"] not in kept and e["id"] in verified and verified[e["id"]][0] not in planted]
    lost = [e for e in named if e["id"] not in kept and e["id"] not in {x["id"] for x in in_source}]

    def share(ids: list[str]) -> dict:
        reasons = Counter(gone.get(i, "kept" if i in kept else "absent") for i in ids)
        return {"planted": len(ids), **dict(sorted(reasons.items()))}

    chars_in = sum(kept.values()) + sum(r["n_chars"] or 0 for rows in dropped.values() for r in rows)
    dup_chars = sum(r["n_chars"] or 0 for reason in DUPLICATE_REASONS for r in dropped.get(reason, []))
    return {
        "threshold": threshold,
        "named_kept": len(named), "named_kept_lost": len(lost), "lost_examples": lost[:5],
        "named_near_duplicates_in_source": in_source,
        "fuzzy_drops": len(fuzzy), "fuzzy_drops_unverified": len(unverified), "unverified_examples": unverified[:3],
        "exact_copies": share([e["id"] for e in copies if e["kind"] == "exact"]),
        "near_copies": share([e["id"] for e in copies if e["kind"] == "near"]),
        "family_members": share(members),
        "chain_links": share([link for _, link in links]),
        "records_in": art.counters.records_in, "documents_kept": len(kept),
        "duplicate_chars": dup_chars, "chars_in": chars_in, "duplicate_share": round(dup_chars / chars_in, 4),
        "crawl_source": SOURCE,
    }


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        raise SystemExit(__doc__)
    print(json.dumps(check(Path(args[0]), [Path(a) for a in args[1:]]), indent=1))


if __name__ == "__main__":
    main()
