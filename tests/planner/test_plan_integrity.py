"""A plan is checked and identified by its content: hand edits that break it are refused, an edited plan claiming
the old plan_id is refused, a finished mixture of another plan is not overwritten, one materialize at a time."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from test_materialize_integrity import make_plan
from typer.testing import CliRunner

from mixture.cli import app
from mixture.planner.formats import read_plan
from mixture.planner.realised import realised_ledger
from mixture.store.formats import FormatError

MATERIALIZE = ["--shard-bytes", "8KB"]


def edit(plan: Path, to: Path, change, drop_id: bool = False) -> Path:
    data = json.loads(plan.read_text())
    change(data)
    if drop_id:
        del data["plan_id"]
    to.write_text(json.dumps(data))
    return to


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(("weights", "field", "says"), [
    ({"c00q1": 0.2, "c00q3": 0.1, "c01q2": 0.1, "c02q4": 0.1}, "phases[0].weights", "sum to 0.5"),
    ({"c00q1": 0.5, "c00q3": 0.4, "c01q2": 0.2, "c02q4": -0.1}, "phases[0].weights.c02q4", "negative"),
    ({"c00q1": float("nan"), "c00q3": 0.3, "c01q2": 0.2, "c02q4": 0.1}, "phases[0].weights.c00q1", "finite"),
])
def test_edited_weights_are_refused_by_every_command(tmp_path: Path, synthetic_store: Path, weights, field, says):
    plan = make_plan(tmp_path, synthetic_store)

    def change(data):  # the phase's weights, where a trainer config takes them from
        data["phases"][0]["weights"] = weights

    edited = edit(plan, tmp_path / "edited.json", change, drop_id=True)
    with pytest.raises(FormatError) as refused:
        read_plan(str(edited))
    assert field in refused.value.fields and says in str(refused.value)
    runner = CliRunner()
    for args in (["export", str(edited), "--format", "olmo"],
                 ["materialize", str(edited), "--out", str(tmp_path / "mix"), *MATERIALIZE],
                 ["realised", str(tmp_path / "mix"), str(edited)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert field in one_line(res.output) and "Traceback" not in res.output and "NaN" not in res.stdout.split(
            "error:")[0]


def test_an_edited_plan_is_another_plan_and_never_reuses_the_old_mixture(tmp_path: Path, synthetic_store: Path):
    plan_path = make_plan(tmp_path, synthetic_store)
    plan = read_plan(str(plan_path))

    def more_tokens(data):  # what materialize draws: a cell's tokens (and its phase's budget with it)
        data["cells"][0]["phases"]["a"]["tokens"] += 500
        data["phases"][0]["tokens"] += 500

    claiming = edit(plan_path, tmp_path / "claiming.json", more_tokens)
    with pytest.raises(FormatError, match="not the hash of the plan's content") as refused:
        read_plan(str(claiming))
    assert refused.value.fields == ["plan_id"]
    edited_path = edit(plan_path, tmp_path / "edited.json", more_tokens, drop_id=True)
    edited = read_plan(str(edited_path))
    assert edited.plan_id != plan.plan_id
    cosmetic = edit(plan_path, tmp_path / "renamed.json", lambda d: d.update(name="renamed", warnings=[]))
    assert read_plan(str(cosmetic)).plan_id == plan.plan_id  # the name and warnings are not what it draws

    runner = CliRunner()
    out = tmp_path / "mix"
    assert runner.invoke(app, ["materialize", str(plan_path), "--out", str(out), *MATERIALIZE]).exit_code == 0
    before = {p.name: p.read_bytes() for p in (out / "phase=a").iterdir()}
    res = runner.invoke(app, ["materialize", str(edited_path), "--out", str(out), *MATERIALIZE])
    assert res.exit_code == 1
    assert "holds the finished mixture of another plan" in one_line(res.output) and "--replace" in res.output
    assert {p.name: p.read_bytes() for p in (out / "phase=a").iterdir()} == before
    # realised: the old mixture is not the edited plan's, exactly (the edit is far below the tolerance)
    ledger = realised_ledger(out, edited)
    assert not ledger["ok"] and ledger["plan_mismatch"]
    assert [r["cell"] for r in ledger["rows"] if any("another plan" in p for p in r["problems"])] == [
        edited.cells[0].cell]
    res = runner.invoke(app, ["materialize", str(edited_path), "--out", str(out), *MATERIALIZE, "--replace"])
    assert res.exit_code == 0, res.output
    assert realised_ledger(out, edited)["ok"] and not realised_ledger(out, plan)["ok"]


def test_one_materialize_at_a_time(tmp_path: Path, synthetic_store: Path):
    plan = make_plan(tmp_path, synthetic_store)
    out = tmp_path / "mix"
    out.mkdir()
    holder = {"owner": "ana@here", "host": socket.gethostname(), "pid": os.getppid(), "started": "2026-12-01T08:00:00Z",
              "token": "t"}
    (out / "_materialize.lock").write_text(json.dumps(holder))
    runner = CliRunner()
    res = runner.invoke(app, ["materialize", str(plan), "--out", str(out), *MATERIALIZE])
    assert res.exit_code == 1
    text = one_line(res.output)
    assert f"is locked by another materialize: ana@here pid {os.getppid()}" in text and "--break-lock" in text
    assert not (out / "manifest.json").exists()
    res = runner.invoke(app, ["materialize", str(plan), "--out", str(out), *MATERIALIZE, "--break-lock"])
    assert res.exit_code == 0, res.output
    assert (out / "manifest.json").exists() and not (out / "_materialize.lock").exists()


def test_an_unwritable_output_is_a_message(tmp_path: Path, synthetic_store: Path):
    plan = make_plan(tmp_path, synthetic_store)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    res = CliRunner().invoke(app, ["materialize", str(plan), "--out", str(blocker / "mix"), *MATERIALIZE])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "cannot write the mixture" in one_line(res.output)


def test_a_mixture_inside_a_source_folder_is_refused(tmp_path: Path, synthetic_store: Path):
    plan = make_plan(tmp_path, synthetic_store)
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec.read_text().replace("corpus/*.jsonl", "corpus"))  # a folder source: read recursively
    data = json.loads(plan.read_text())
    data["source"]["spec"] = str(spec)  # not what the plan draws: its id stays
    folder_plan = tmp_path / "folder-plan.json"
    folder_plan.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["materialize", str(folder_plan), "--out", str(tmp_path / "corpus" / "mix"),
                                   *MATERIALIZE])
    assert res.exit_code == 1, res.output
    assert "is inside the folder of source" in one_line(res.output) and "would read the mixture as input" in \
        one_line(res.output)
    assert not (tmp_path / "corpus" / "mix").exists()


def test_two_materializes_of_different_plans_started_together(tmp_path: Path, synthetic_store: Path):
    """Started at once into one folder: one publishes its own plan's mixture, the other exits 1 with one line (the
    lock's holder, or the finished mixture of another plan), never a traceback and never the other plan's shards."""
    from tests.robustness.helpers import kill_group, start

    plan_path = make_plan(tmp_path, synthetic_store)

    def more_tokens(data):
        data["cells"][0]["phases"]["a"]["tokens"] += 500
        data["phases"][0]["tokens"] += 500

    plans = [plan_path, edit(plan_path, tmp_path / "edited.json", more_tokens, drop_id=True)]
    out = tmp_path / "mix"
    procs = [start(["materialize", str(p), "--out", str(out), *MATERIALIZE], tmp_path) for p in plans]
    try:
        done = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                kill_group(p)
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 1], (codes, done)
    winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
    said = one_line(done[loser][0] + done[loser][1])
    assert "is locked by another materialize" in said or "holds the finished mixture of another plan" in said, said
    assert "Traceback" not in done[loser][1] + done[winner][1]
    assert realised_ledger(out, read_plan(str(plans[winner])))["ok"]
    assert not realised_ledger(out, read_plan(str(plans[loser])))["ok"]
    assert not (out / "_materialize.lock").exists()
