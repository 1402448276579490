"""What `validate` checks of a decontamination benchmark before a build: its records can be read, the fields the spec
names are in them, and they yield at least one n-gram that carries content."""

from __future__ import annotations

from mixture.decontam.index import BenchmarkIndex, BenchmarkSource
from mixture.decontam.records import BenchmarkReadError, field_problems, read_records


def benchmark_problems(source: BenchmarkSource, check_id_field: bool, ngram: int, min_content_words: int,
                       max_number_share: float) -> list[tuple[str, str]]:
    """(key of the benchmark's spec entry, message) for each problem; [] for a usable benchmark."""
    name = source.name
    try:
        records = read_records(source.uri)
    except BenchmarkReadError as exc:
        return [("uri", f"benchmark {name!r}: {exc}")]
    except OSError as exc:
        return [("uri", f"benchmark {name!r}: cannot read {source.uri!r}: {type(exc).__name__}: {exc}")]
    problems = field_problems(name, records, list(source.fields), source.id_field if check_id_field else None)
    if problems:
        return problems
    report = BenchmarkIndex([source], ngram, min_content_words, max_number_share).reports[0]
    if report.ngrams_indexed:
        return []
    skipped = {reason: n for reason, n in report.ngrams_skipped.items() if n}
    why = (f"all {sum(skipped.values()):,} of its {ngram}-grams are left out ("
           + ", ".join(f"{reason} {n:,}" for reason, n in skipped.items()) + ")") if skipped else \
        f"none of its {len(records):,} records has {ngram} words in {', '.join(source.fields)}"
    return [("fields", f"benchmark {name!r} yields no {ngram}-gram to match: {why}; name the fields that hold its "
                       f"text, or lower processing.decontamination.ngram or min_content_words")]
