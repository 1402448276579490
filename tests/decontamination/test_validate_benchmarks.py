"""`mixture validate` refuses a decontamination benchmark it cannot use, naming the benchmark, the field and the
fields its records do have: a missing file, fields missing from (most of) the records, no n-gram that carries
content, an unreadable record. HumanEval is the real benchmark; numpy's random-number test vectors are the numbers."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app

from . import realtext

HAVE = "task_id, prompt, entry_point, canonical_solution, test"  # HumanEval's fields, as the error lists them


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text('{"id": "1", "text": "hello world"}\n')
    return tmp_path


def validate(workdir: Path, benchmark: dict, **decontamination) -> tuple[int, str]:
    spec = {"name": "t", "sources": [{"name": "a", "uri": "data", "format": "jsonl"}], "store": {"uri": "store"},
            "processing": {"decontamination": {"benchmarks": [benchmark], **decontamination}}}
    path = workdir / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(app, ["validate", str(path)])
    return result.exit_code, " ".join((result.output + (result.stderr if result.stderr_bytes is not None else "")).split())


def write_records(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_humaneval_with_its_fields_validates(workdir):
    code, out = validate(workdir, {"name": "humaneval", "uri": str(realtext.humaneval_path()),
                                   "fields": ["prompt", "canonical_solution"], "id_field": "task_id"})
    assert code == 0, out


def test_fields_left_at_their_default_name_the_fields_the_records_have(workdir):
    code, out = validate(workdir, {"name": "humaneval", "uri": str(realtext.humaneval_path())})
    assert code == 2, out
    for field in ("question", "answer"):
        assert (f"processing.decontamination.benchmarks[0].fields: benchmark 'humaneval': field '{field}' is missing "
                f"or empty in 164 of its 164 records; its records have: {HAVE}") in out, out


def test_a_field_missing_in_most_records_is_an_error_and_in_a_few_is_not(workdir, tmp_path):
    records = realtext.humaneval_records()
    most = [{k: v for k, v in r.items() if k != "prompt" or i % 3 == 0} for i, r in enumerate(records)]
    code, out = validate(workdir, {"name": "he", "uri": write_records(tmp_path / "most.jsonl", most),
                                   "fields": ["prompt", "canonical_solution"]})
    assert code == 2 and "field 'prompt' is missing or empty in 109 of its 164 records" in out, out
    assert "its records have: task_id, entry_point, canonical_solution, test, prompt (55)" in out, out
    few = [{**r, "prompt": ""} if i < 10 else r for i, r in enumerate(records)]
    code, out = validate(workdir, {"name": "he", "uri": write_records(tmp_path / "few.jsonl", few),
                                   "fields": ["prompt", "canonical_solution"]})
    assert code == 0, out


def test_an_id_field_the_records_lack_is_an_error(workdir):
    code, out = validate(workdir, {"name": "humaneval", "uri": str(realtext.humaneval_path()),
                                   "fields": ["prompt"], "id_field": "id"})
    assert code == 2, out
    assert ("processing.decontamination.benchmarks[0].id_field: benchmark 'humaneval': field 'id' is missing or "
            f"empty in 164 of its 164 records; its records have: {HAVE}") in out, out


def test_fields_too_short_for_an_ngram_are_an_error(workdir):
    code, out = validate(workdir, {"name": "humaneval", "uri": str(realtext.humaneval_path()),
                                   "fields": ["entry_point"]})
    assert code == 2, out
    assert ("processing.decontamination.benchmarks[0].fields: benchmark 'humaneval' yields no 13-gram to match: "
            "none of its 164 records has 13 words in entry_point") in out, out


def test_a_benchmark_of_numbers_yields_no_usable_ngram(workdir, tmp_path):
    spec = importlib.util.find_spec("numpy")
    folder = Path(spec.origin).parent / "random" / "tests" / "data"
    records = [{"question": f"{path.stem} values", "answer": " ".join(path.read_text().split()[:200])}
               for path in sorted(folder.glob("*.csv"))]
    assert len(records) >= 4
    code, out = validate(workdir, {"name": "vectors", "uri": write_records(tmp_path / "v.jsonl", records)})
    assert code == 2, out
    assert "benchmark 'vectors' yields no 13-gram to match: all" in out and "no_content" in out, out
    assert "lower processing.decontamination.ngram or min_content_words" in out


def test_an_unreadable_record_names_the_file_and_line(workdir, tmp_path):
    lines = gzip.decompress(realtext.humaneval_path().read_bytes()).decode().splitlines()
    lines[3] = lines[3][:40]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, out = validate(workdir, {"name": "he", "uri": str(path), "fields": ["prompt"]})
    assert code == 2, out
    assert f"benchmarks[0].uri: benchmark 'he': {path}, line 4: not a JSON record" in out, out


def test_min_content_words_above_the_ngram_is_an_error(workdir):
    code, out = validate(workdir, {"name": "humaneval", "uri": str(realtext.humaneval_path()),
                                   "fields": ["prompt"]}, ngram=4)
    assert code == 2 and "min_content_words (5) cannot exceed ngram (4)" in out, out
