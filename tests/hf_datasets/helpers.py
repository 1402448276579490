"""Hugging Face datasets written from the demo corpus's real text, with planted bad records, and a spec over them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def real_records(corpus: Path, source: str) -> list[dict]:
    """The records (id, text) of one Parquet source of the demo corpus, in file order."""
    tables = [pq.read_table(f, columns=["id", "text"]) for f in sorted((corpus / source).glob("*.parquet"))]
    return pa.concat_tables(tables).to_pylist()


# planted bad records: (id, text value or MISSING) and the quarantine reason each must get
MISSING = object()
BAD = [("bad-missing", MISSING, "missing_text"), ("bad-int", 7, "wrong_type"), ("bad-empty", "", "empty_text"),
       ("bad-blank", "  \n\t ", "empty_text")]


def with_bad(records: list[dict], at: list[int]) -> tuple[list[dict], dict[int, str]]:
    """`records` with the BAD records inserted at positions `at` (of the result); returns (rows, {row: reason})."""
    rows = list(records)
    where = {}
    for pos, (rid, text, reason) in zip(at, BAD, strict=True):
        rows.insert(pos, {"id": rid} if text is MISSING else {"id": rid, "text": text})
        where[pos] = reason
    return rows, where


def write_datasets(root: Path, corpus: Path) -> dict:
    """Four datasets: a saved DatasetDict (mixed-type text column: a `Json` feature), a saved Dataset in three Arrow
    files, a folder of JSONL files and a folder of Parquet files (the last two for load_dataset). Returns what each
    holds: rows per dataset and where the bad records are."""
    import datasets

    structured = real_records(corpus, "structured-data")
    multilingual = real_records(corpus, "multilingual")
    code = real_records(corpus, "package-code")
    assert len(structured) >= 150 and len(code) >= 60, "the demo corpus is smaller than this test expects"

    # (a Json column decodes a string that parses as JSON to its value: this one holds prose and code only)
    train, train_bad = with_bad(multilingual + code[:40], [3, 20, 21, 50])
    features = datasets.Features({"id": datasets.Value("string"), "text": datasets.Json()})
    dd = datasets.DatasetDict({
        "train": datasets.Dataset.from_list(train, features=features),
        "validation": datasets.Dataset.from_list(code[40:50], features=features),
    })
    dd.save_to_disk(str(root / "saved_dict"), num_shards={"train": 2, "validation": 1})

    one = datasets.Dataset.from_list([{"text": r["text"], "kind": r["id"]} for r in structured[:80]])
    one.save_to_disk(str(root / "saved_one"), num_shards=3)

    # load_dataset takes the column types from the first data file: the mixed one goes first
    jsonl, jsonl_bad = with_bad(code[50:], [0, 1, 2, 5])
    folder = root / "jsonl_folder" / "data"
    folder.mkdir(parents=True)
    half = (len(jsonl) + 8) // 2  # three files: the bad records in the first, the rest in two halves
    parts = (jsonl[:8], jsonl[8:half], jsonl[half:])
    for k, part in enumerate(parts):
        (folder / f"part-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))

    pq_folder = root / "parquet_folder" / "data"
    pq_folder.mkdir(parents=True)
    rest = structured[80:]
    for k, part in enumerate((rest[: len(rest) // 2], rest[len(rest) // 2 :])):
        pq.write_table(pa.Table.from_pylist(part), pq_folder / f"train-{k:05d}-of-00002.parquet")

    return {"train_bad": train_bad, "train_rows": len(train), "jsonl_bad": jsonl_bad,
            "jsonl_files": [len(p) for p in parts]}


def datasets_spec(root: Path, tasks: int, store: str = "store") -> dict:
    """Every good record is kept (no dedup, no decontamination, permissive filters): the store holds exactly the
    datasets minus the bad records."""
    return {
        "name": "hf-datasets",
        "seed": 0,
        "sources": [
            {"name": "saved-dict", "uri": str(root / "saved_dict"), "format": "datasets", "split": "train"},
            {"name": "saved-one", "uri": str(root / "saved_one"), "format": "datasets", "id_field": None,
             "category": "specialized"},
            {"name": "jsonl-folder", "uri": str(root / "jsonl_folder"), "format": "datasets", "category": "code"},
            {"name": "parquet-folder", "uri": str(root / "parquet_folder"), "format": "datasets", "streaming": False,
             "category": "code"},
        ],
        "processing": {
            "filters": {"length": {"min_chars": 1, "min_words": 1},
                        "heuristics": {"max_symbol_ratio": 1.0, "max_duplicate_line_ratio": 1.0}},
            "dedup": {"exact": {"enabled": False}, "fuzzy": {"enabled": False}},
            "decontamination": {"enabled": False},
        },
        "partition": {"clusters": {"k": 3, "fine_k": 12, "min_share": 0.02, "embedding_dim": 16}},
        "store": {"uri": str(root / store), "samples_per_cell": 2, "exemplars_per_cell": 1},
        "execution": {"executor": "local", "tasks": tasks, "workers": 1},
    }
