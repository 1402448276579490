"""Units of the demo corpus: planted copies, shard splitting, planted counts at full scale."""

from __future__ import annotations

import random
from pydoc_data.topics import topics

import pytest

from mixture.demo_corpus import jaccard, normalize
from mixture.demo_corpus.model import RawLine, Source
from mixture.demo_corpus.mutate import EXACT_VARIANTS, exact_copy, near_copy
from mixture.demo_corpus.plant import Counts
from mixture.demo_corpus.shards import split
from mixture.demo_corpus.textutil import words

REAL = normalize(topics["class"])  # real text of several hundred words


def test_normalisation_matches_the_project_rules() -> None:
    assert normalize("  e\u0301t\u00e9 \r\nline two  \t\r\n\n") == "\u00e9t\u00e9\nline two"


@pytest.mark.parametrize("variant", sorted(set(EXACT_VARIANTS)))
def test_exact_copies_normalise_to_the_original(variant: str) -> None:
    copy = exact_copy(REAL, variant, random.Random(3))
    assert normalize(copy) == REAL
    assert (copy == REAL) == (variant == "identical")


@pytest.mark.parametrize("seed", range(5))
def test_near_copies_change_about_one_word_in_a_hundred(seed: int) -> None:
    vocab = sorted({w for w in words(topics["for"] + topics["while"]) if w.isalpha() and len(w) > 3})
    copy, jac = near_copy(REAL, random.Random(seed), vocab)
    assert 0.9 <= jac < 1.0 and jac == jaccard(REAL, copy)
    changed = sum(a != b for a, b in zip(REAL.split(), copy.split(), strict=True))
    assert 1 <= changed <= len(REAL.split()) / 90


def test_split_balances_shards_and_keeps_every_record() -> None:
    src = Source("s", "web", "x", "jsonl", "d", bytes_per_file=1000, min_files=3)
    src.records = [{"id": str(i), "text": "x" * (50 + i)} for i in range(100)] + [RawLine(b"{", "invalid_json")]
    bounds = split(src)
    assert 3 <= len(bounds) <= 8
    assert bounds[0][0] == 0 and bounds[-1][1] == len(src.records)
    assert all(a < b and b == c for (a, b), (c, _) in zip(bounds, bounds[1:], strict=False))


def test_full_scale_plants_the_required_counts() -> None:
    web, dia = Counts.web(1.0), Counts.dialogues(1.0)
    assert web.exact + dia.exact >= 40 and web.near >= 30 and web.contaminated >= 25
    assert web.malformed_each >= 2 and 2_500_000 <= web.large_chars <= 3_500_000
    small = Counts.web(0.05)
    assert (small.exact, small.near, small.contaminated, small.malformed_each) >= (8, 6, 5, 1)
    assert small.large_chars >= 1_200_000


def test_structured_data_does_not_depend_on_where_the_environment_is() -> None:
    """Installed scripts' RECORD lines (their shebang names the venv's Python), the editable finder's (it names
    this checkout) and direct_url.json (likewise) made the demo corpus, and so every demo figure, differ between two
    clones."""
    import sys
    from pathlib import Path

    from mixture.demo_corpus.local_files import list_files, rel, site_dirs, stdlib_root
    from mixture.demo_corpus.text_sources import location_free, structured_data

    root = stdlib_root()
    stdlib = [(rel(p, root), p) for p in list_files(root, skip_site_packages=True)]
    site = sorted((rel(p, s), p) for s in site_dirs() for p in list_files(s))
    assert any(r.endswith(".dist-info/RECORD") for r, _ in site)
    src = structured_data(stdlib, site, 1.0, random.Random(0))
    records = [r for r in src.records if r["id"].endswith("/RECORD")]
    assert records and not any(line.startswith(("../", "__editable__")) or "direct_url.json," in line
                               for r in records for line in r["text"].splitlines())
    assert not any(r["id"].endswith("direct_url.json") for r in src.records)
    checkout = str(Path(__file__).resolve().parents[2])
    assert not [r["id"] for r in src.records if sys.prefix in r["text"] or checkout in r["text"]]
    assert location_free("RECORD", "../../../bin/x,sha256=a,1\r\npkg/a.py,sha256=b,2\r\n") == "pkg/a.py,sha256=b,2\r\n"
    assert location_free("RECORD", "__editable___m_finder.py,sha256=c,3\r\nm.dist-info/direct_url.json,sha256=d,6\n") == ""
    assert location_free("WHEEL", "../x\n") == "../x\n"


def test_package_code_takes_a_file_found_in_two_site_packages_once(tmp_path) -> None:
    """A venv whose .pth adds another venv's site-packages lists pip twice: the record ids (relative paths) stay
    unique, so no package-code record is quarantined as a duplicate id."""
    from mixture.demo_corpus.code_sources import package_code_files

    a, b = tmp_path / "a" / "pip" / "main.py", tmp_path / "b" / "pip" / "main.py"
    listing = sorted([("pip/main.py", a), ("pip/main.py", b), ("pip/util.py", b), ("x.dist-info/y.py", a)])
    assert package_code_files(listing) == [("pip/main.py", a), ("pip/util.py", b)]
