"""Human summaries of plans, ladders and realised ledgers as rich tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from mixture.planner.formats import Plan, PlanWarning
from mixture.spec.amounts import humanize

WARN_STYLE = {"over_cap": "red", "empty_cell": "red", "ladder_vanish": "red", "zero_sequences": "yellow"}


def _e(x: float | None) -> str:
    return "∞" if x is None else f"{x:.3f}"


def print_plan(plan: Plan, console: Console) -> None:
    ex = plan.exposure
    console.print(
        f"[bold]{plan.name}[/]  plan {plan.plan_id}  counts: {plan.source.counts} "
        f"({plan.source.counts_kind}, {len(plan.cells)} cells, {humanize(plan.available_tokens)} tokens)"
    )
    prop = ex.proportional
    console.print(
        f"budget {humanize(plan.budget)} over {len(plan.phases)} phases · proportional exposure "
        f"{'-' if prop is None else f'{prop:.3f}'} · max exposure {_e(ex.max)} ({ex.max_cell}) · cap {ex.cap:g}"
    )
    t = Table(title="Phases", title_justify="left")
    for col in ("phase", "tokens", "steps", "components", "cells w>0", "zero seq/block"):
        t.add_column(col, justify="right" if col != "phase" else "left")
    for ph in plan.phases:
        comps = [c for c in ph.components if not c.validation]
        steps = f"{ph.start_step:,}–{ph.end_step:,}" if ph.start_step is not None and ph.end_step is not None else "-"
        t.add_row(
            ph.name, humanize(ph.tokens), steps, str(len(comps)),
            str(sum(1 for w in ph.weights.values() if w > 0)),
            str(sum(1 for c in comps if c.weight > 0 and c.sequences == 0)),
        )
    console.print(t)
    if plan.steps:
        s = plan.steps
        console.print(
            f"steps: {s.total_steps:,} of {s.batch_sequences:,} × {plan.settings.seq_len:,} tokens; "
            f"boundaries on multiples of m = {s.m} (B = {plan.settings.block_sequences:,}); starts {s.starts}"
        )
    if plan.tail:
        tail = plan.tail
        console.print(f"tail: {len(tail.cells)} cells under {humanize(tail.min_tokens)} tokens "
                      f"({humanize(tail.tokens)}) mixed as one component")
    if plan.validation:
        console.print("validation (weight 0): " + ", ".join(v.name for v in plan.validation))
    top = Table(title="Top-10 exposure (epochs)", title_justify="left")
    top.add_column("#", justify="right")
    top.add_column("cell")
    top.add_column("available", justify="right")
    top.add_column("drawn", justify="right")
    for ph in plan.phases:
        top.add_column(f"w {ph.name}", justify="right")
    top.add_column("epochs", justify="right")
    for i, row in enumerate(plan.top_exposure, 1):
        e = row.exposure
        style = "red" if e is None or e > ex.cap else ""
        top.add_row(str(i), row.cell, humanize(row.available_tokens), humanize(row.tokens),
                    *(f"{row.weights[ph.name]:.4g}" for ph in plan.phases), f"[{style}]{_e(e)}[/]" if style else _e(e))
    console.print(top)
    if plan.repair:
        console.print(f"[cyan]repaired plan[/] (from {plan.repair.repaired_from}): {plan.repair.message}")
    print_warnings(plan.warnings, console)


def print_warnings(warnings: list[PlanWarning], console: Console) -> None:
    if not warnings:
        console.print("[green]no warnings[/]")
        return
    console.print(f"[bold]{len(warnings)} warning{'s' if len(warnings) != 1 else ''}[/]")
    for w in warnings:
        console.print(f"  [{WARN_STYLE.get(w.code, 'yellow')}]{w.code}[/]: {w.message}", soft_wrap=True)


def print_ladder(plan: Plan, console: Console) -> None:
    if not plan.ladder:
        console.print("no ladder rungs: add `ladder:` to the mixture section")
        return
    t = Table(title="Scaling ladder (simulated epoching: N_c → ⌊N_c·X/T⌋)", title_justify="left")
    for col in ("rung", "tokens", "scale", *[p.name for p in plan.phases], "steps", "max ΔE", "vanished"):
        t.add_column(col, justify="left" if col in ("rung", "vanished") else "right")
    for r in plan.ladder:
        steps = f"{r.steps.total_steps:,} {r.steps.starts}" if r.steps else "-"
        van = r.vanished
        t.add_row(
            r.name, humanize(r.tokens), f"{r.scale:.4g}",
            *(humanize(r.phase_tokens[p.name]) for p in plan.phases),
            steps, f"{r.max_exposure_change:.3g}",
            f"[red]{len(van)}: {', '.join(van[:6])}{' …' if len(van) > 6 else ''}[/]" if van else "0",
        )
    console.print(t)


TOLERANCE_WHY = (
    "Checked exactly (the draw is deterministic): each shard's size and xxh64 against manifest.json, each phase and "
    "cell's tokens against the draw it records, and the draw against this plan's tokens. Against the plan's targets "
    "a cell may miss by up to its largest document (the draw takes whole documents: it stops at the boundary just "
    "below or just above the target), a phase by up to the sum of its cells' (the tolerance column; the draw "
    "carries each cell's error to the next, so a phase total stays within about one document).")


def print_realised(ledger: dict[str, Any], console: Console, limit: int = 40) -> None:
    t = Table(title=f"Realised vs planned: {ledger['dir']}", title_justify="left")
    for col in ("phase", "budget", "planned", "realised", "drift", "tolerance", "ok"):
        t.add_column(col, justify="left" if col == "phase" else "right")
    for p in ledger["phases"]:
        t.add_row(p["phase"], f"{p['budget']:,}", f"{p['planned_tokens']:,}", f"{p['realised_tokens']:,}",
                  f"{p['drift']:+,}", f"{p['tolerance']:,}", "[green]yes[/]" if p["ok"] else "[red]NO[/]")
    console.print(t)
    console.print(TOLERANCE_WHY, style="dim", markup=False)
    epochs = {e["cell"]: e for e in ledger["epochs"]}
    c = Table(title="Per cell (flagged first)", title_justify="left")
    for col in ("phase", "cell", "planned", "realised", "drift", "docs", "epochs plan", "epochs real", "ok"):
        c.add_column(col, justify="left" if col in ("phase", "cell") else "right")
    rows = sorted(ledger["rows"], key=lambda r: (r["ok"], -abs(r["drift"])))
    for r in rows[:limit]:
        e = epochs.get(r["cell"], {})
        c.add_row(r["phase"], r["cell"], f"{r['planned_tokens']:,}", f"{r['realised_tokens']:,}", f"{r['drift']:+,}",
                  f"{r['docs']:,}", f"{e.get('planned', 0):.3f}", f"{e.get('realised', 0):.3f}",
                  "[green]yes[/]" if r["ok"] else "[red]" + "; ".join(r["problems"]) + "[/]")
    console.print(c)
    if len(rows) > limit:
        console.print(f"… {len(rows) - limit} more rows (use --format json)")
    for problem in ledger.get("corrupt", [])[:10]:
        console.print(problem, style="red", markup=False)
    if ledger.get("plan_mismatch"):
        console.print(f"manifest.json was written for plan {ledger['manifest_plan_id']}, not this plan "
                      f"({ledger['plan_id']}): compare it with the plan it was materialized from", style="red",
                      markup=False)
    if ledger["unplanned"]:
        console.print(f"[red]unplanned shards content:[/] {', '.join(ledger['unplanned'][:10])}")
    if ledger["ok"]:
        console.print("[green]realised matches the plan[/]")
    else:
        found = [f"{len(ledger['flagged'])} phase/cell pairs off" if ledger["flagged"] else "",
                 f"{len(ledger.get('corrupt', []))} shard(s) not as the manifest recorded" if ledger.get("corrupt")
                 else "", "another plan's mixture" if ledger.get("plan_mismatch") else ""]
        console.print(f"[red]realised does not match the plan: {'; '.join(f for f in found if f) or 'see above'}[/]")
