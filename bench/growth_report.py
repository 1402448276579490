"""The growth benchmark's analysis and its docs sections: growth exponents, the goals (PASS/FAIL), the tables of
docs/performance.md and the projection to the reference 25.6T-token pool in docs/scaling.md."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mixture.pipelines.dedup.minhash_buckets import ANCHORS
from mixture.spec.models import FuzzyDedup
from mixture.stages import costs

REPO = Path(__file__).resolve().parent.parent
SCALING_DOC = REPO / "docs" / "scaling.md"
BEGIN, END = "<!-- growth-bench:begin -->", "<!-- growth-bench:end -->"
PROJECTION_BEGIN, PROJECTION_END = "<!-- growth-projection:begin -->", "<!-- growth-projection:end -->"
RAW_POOL = 25.6e12  # raw tokens of the reference pool (docs/scaling.md)
CORES, POOL_TASKS, FIT_SAMPLE = 1000, 8000, 50_000  # cluster, execution.tasks and the default fit sample there
# stages whose work does not grow with the tokens by design, and what it grows with
NOT_PER_TOKEN = {"fit": "the fit sample (`partition.clusters.sample_docs`, the same at every size)",
                 "finalize": "tasks and cells (it merges every task's shard facts and writes every cell's ledger)"}
# stages whose work grows with the near-duplicate candidate pairs, which grow with the corpus's duplicates (the pool
# corpus's pairs per document grow with its size by design): their exponents and projection are against the pairs
PER_PAIR = ("minhash_route", "minhash_verify")
DRIVER_STAGES = ("finalize",)  # run by the driver alone: a single task, whatever the registry holds
LINEAR, FLAT, SINGLE_SHARE, SPEEDUP, VS_TOKENIZER = 0.1, 1.2, 0.10, 1.8, 0.5  # the goals of issue 15
STEADY = 0.05  # a per-token stage's CPU exponent, over repeated interleaved builds
MIB = 2**20
FULL_KEPT = 500e6  # kept tokens at the largest size of a full run
MARIN_CANDIDATES = 5_951_299_430  # candidate documents of Marin's fuzzy dedup of the pool (marin-community/marin #8237)


def exponent(xs: list[float], ys: list[float]) -> float | None:
    """Slope of the least-squares line through (log x, log y): y ∝ x^slope. None under two distinct sizes or
    with a zero."""
    if len(set(xs)) < 2 or min(ys) <= 0:
        return None
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def exponent_interval(xs: list[float], ys: list[float]) -> tuple[float, float, float] | None:
    """(slope, low, high): the least-squares slope of log y on log x and its 95 % interval (Student's t on the
    slope's standard error); None under three points, two distinct sizes or with a zero."""
    from scipy import stats

    if len(xs) < 3 or len(set(xs)) < 2 or min(ys) <= 0:
        return None
    fit = stats.linregress(np.log(xs), np.log(ys))
    half = float(stats.t.ppf(0.975, len(xs) - 2) * fit.stderr)
    return float(fit.slope), float(fit.slope) - half, float(fit.slope) + half


def per_token_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float, float] | None:
    """(k, low, high, a): y = a + b·x^k by least squares (a ≥ 0 the seconds that do not grow with the input: a
    stage's pool start, imports, listings), k with its 95 % interval (Student's t on its standard error, n − 3
    degrees of freedom). A plain log-log slope reads such fixed seconds as sublinear growth; k is the exponent of the
    part that grows. None under five points or three distinct sizes, or when the fit fails."""
    from scipy import optimize, stats

    if len(xs) < 5 or len(set(xs)) < 3 or min(ys) <= 0:
        return None
    x = np.asarray(xs, float) / max(xs)  # sizes as shares of the largest: b is then the largest size's growing part
    y = np.asarray(ys, float)
    try:
        (a, _, k), cov = optimize.curve_fit(lambda v, a, b, k: a + b * v**k, x, y, p0=(min(ys) / 2, max(ys), 1.0),
                                            bounds=([0, 0, 0.2], [np.inf, np.inf, 3.0]))
    except (RuntimeError, ValueError):
        return None
    err = float(np.sqrt(cov[2, 2]))
    if not math.isfinite(err):
        return None
    half = float(stats.t.ppf(0.975, len(xs) - 3)) * err
    return float(k), float(k) - half, float(k) + half, float(a)


def linear_cost(rows: list[tuple[float, float, float, float]]) -> costs.LinearCost | None:
    """(stage tasks, T · P, work, CPU seconds) of builds → the stage's fixed, per-task, per-range and per-unit seconds
    by non-negative least squares, with its R²; None unless the builds vary the tasks and the work apart (four
    independent columns) or when the CPU does not vary."""
    from scipy import optimize

    x = np.array([[1.0, t, r, w] for t, r, w, _ in rows])
    y = np.array([c for *_, c in rows])
    if len(rows) < 5 or np.linalg.matrix_rank(x / x.max(axis=0)) < 4 or y.var() == 0:
        return None
    coef, _ = optimize.nnls(x, y)
    r2 = 1 - float(((y - x @ coef) ** 2).sum() / ((y - y.mean()) ** 2).sum())
    return costs.LinearCost(fixed=coef[0], per_task=coef[1], per_range=coef[2], per_unit=coef[3], r2=r2)


def merge_rounds(stages: list[dict]) -> list[dict]:
    """A stage run in rounds (`<stage>/<round>` as the build times them) as one stage: wall and CPU summed, the
    largest peak, its star rounds counted (`rounds`: those named rNNN); other stages as they are, in order."""
    out: dict[str, dict] = {}
    for st in stages:
        name, _, round_ = st["stage"].partition("/")
        star = int(bool(re.fullmatch(r"r\d+", round_)))
        if name not in out:
            out[name] = {**st, "stage": name, **({"rounds": star} if round_ else {})}
            continue
        merged = out[name]
        merged["rounds"] = merged.get("rounds", 0) + star
        for key in ("wall", "cpu", "task_cpu"):
            if key in st:
                merged[key] = merged.get(key, 0.0) + st[key]
        for key in ("driver_peak", "peak_rss", "longest_task"):
            if key in st:
                merged[key] = max(merged.get(key) or 0, st[key] or 0)
    return list(out.values())


def mix(artifact: dict) -> dict:
    """What a store's input was made of, as shares: records dropped per reason (of the records read), kept tokens
    per source category and per language, near-duplicate candidate pairs per kept document."""
    c = artifact["counters"]
    read = max(1, c["records_in"])
    drops = {k: v / read for k, v in c.items() if k not in ("records_in", "records_out", "tokens_out")}
    tokens = max(1, c["tokens_out"])
    categories: dict[str, float] = defaultdict(float)
    for s in artifact["sources"]:
        categories[s["category"]] += s["tokens_kept"] / tokens
    languages = {x["language"]: x["tokens"] / tokens for x in (artifact.get("language") or {}).get("languages", [])}
    nd = artifact.get("near_duplicates") or {}
    return {"drops": drops, "categories": dict(categories), "languages": languages,
            "pairs_per_doc": nd.get("pairs_considered", 0) / max(1, c["records_out"])}


def single_task_stages(spec_path: Path, tasks: int) -> list[str]:
    """Stages the registry runs as one task for this spec and task count (mixture/stages/registry.py), then the
    driver's own stages."""
    from mixture.spec.load import load_spec
    from mixture.stages import registry as stage_registry

    spec = load_spec(str(spec_path))
    return [s.name for s in stage_registry.planned(spec) if s.task_count(spec, tasks) == 1] + list(DRIVER_STAGES)


def pool_tasks(spec_path: Path) -> dict[str, int]:
    """Tasks of every stage with `execution.tasks` = POOL_TASKS (docs/scaling.md's T for the reference pool)."""
    from mixture.spec.load import load_spec
    from mixture.stages import registry as stage_registry

    spec = load_spec(str(spec_path))
    return {s.name: s.task_count(spec, POOL_TASKS) for s in stage_registry.planned(spec)} | dict.fromkeys(DRIVER_STAGES, 1)


@dataclass
class Goal:
    name: str
    passed: bool
    detail: str

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'} {self.name}: {self.detail}"


def _fmt_tokens(n: float) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"


def _row(label: str, cells) -> str:
    """A markdown table row."""
    return f"| {label} | " + " | ".join(cells) + " |"


def _hours(h: float) -> str:
    return f"{h:,.1f}" if h < 100 else f"{h:,.0f}"


def _exp(b: float | None) -> str:
    return "–" if b is None else f"{b:.2f}"


class Report:
    """The figures of one run (growth.json) and what they say."""

    def __init__(self, results: dict, fixed_tasks: dict | None = None):
        """`fixed_tasks`: a run of the same corpus at one T for every size (`--fixed-tasks`, or the run's own `one_t`
        series); with this run's T growing with the input, the cost model's rates take each stage's fitted fixed,
        per-task, per-range and per-unit seconds (`linear_costs`) instead of its exponent."""
        fixed_tasks = fixed_tasks or results.get("one_t")  # the run's own series at one T, if it has one
        self.fixed_tasks = Report(fixed_tasks) if fixed_tasks else None
        for s in results["scales"]:
            for b in [*s["builds"].values(), *s.get("repeats", [])]:
                b["stages"] = merge_rounds(b["stages"])
        self.r = results
        self.scales = results["scales"]
        self.series_w = max(int(w) for w in self.scales[0]["builds"])
        self.series = [s["builds"][str(self.series_w)] for s in self.scales]
        self.largest = self.scales[-1]
        self.kept = [b["counters"]["tokens_out"] for b in self.series]
        self.names = [s["stage"] for s in self.series[-1]["stages"]]

    # ---------------------------------------------------------------------------------------------- figures

    def stage(self, build: dict, name: str) -> dict:
        return next((s for s in build["stages"] if s["stage"] == name), {"wall": 0.0, "cpu": 0.0, "peak_rss": 0})

    def values(self, name: str, key: str) -> list[float]:
        return [self.stage(b, name)[key] for b in self.series]

    def exponents(self, name: str, xs: list[float] | None = None) -> tuple[float | None, float | None]:
        """The stage's wall and CPU exponents over the series, against `xs` (default: the kept tokens)."""
        xs = xs or self.kept
        return exponent(xs, self.values(name, "wall")), exponent(xs, self.values(name, "cpu"))

    def series_pairs(self) -> list[float]:
        return [self.candidate_pairs(b) for b in self.series]

    def repeats(self) -> list[tuple[float, dict]]:
        """(kept tokens, build) of every repeated build of the series (the sizes interleaved, `--repeats`); the
        series itself when the run has none."""
        out = []
        for s, kept in zip(self.scales, self.kept, strict=True):
            out += [(kept, b) for b in s.get("repeats", [s["builds"][str(self.series_w)]])]
        return out

    def interval(self, name: str) -> tuple[float, float, float] | None:
        """The stage's CPU exponent over every repeated build, with its 95 % interval."""
        runs = self.repeats()
        return exponent_interval([k for k, _ in runs], [self.stage(b, name)["cpu"] for _, b in runs])

    @staticmethod
    def candidate_pairs(build: dict) -> float:
        """A build's near-duplicate candidate pairs (its report's `pairs_considered`)."""
        return build["mix"]["pairs_per_doc"] * build["counters"]["records_out"]

    def cost_rows(self, name: str) -> list[tuple[float, float, float, float]]:
        """(the stage's tasks, T · P, its work, CPU seconds) of every repeated build: work in input tokens, or in
        candidate pairs for a stage scaled by them; P = T (`execution.partitions` unset in the growth spec)."""
        work = self.series_pairs() if self.by_pairs(name) else [s["input_tokens"] for s in self.scales]
        at = {k: (s["tasks"], w) for k, s, w in zip(self.kept, self.scales, work, strict=True)}
        out = []
        for k, b in self.repeats():
            st, (t, w) = self.stage(b, name), at[k]
            out.append((float(st.get("tasks", t)), float(t * t), float(w), float(st["cpu"])))
        return out

    def linear_costs(self) -> dict[str, costs.LinearCost]:
        """Per stage that grows with the input (not `NOT_PER_TOKEN`): its CPU as fixed, per-task, per-range and
        per-unit seconds over this run's builds and the fixed-T run's (`linear_cost`); none without that run."""
        if self.fixed_tasks is None:
            return {}
        fits = {n: linear_cost(self.cost_rows(n) + self.fixed_tasks.cost_rows(n))
                for n in self.names if n not in NOT_PER_TOKEN}
        return {n: f for n, f in fits.items() if f is not None}

    def by_pairs(self, name: str) -> bool:
        """Whether the stage is measured and projected against the candidate pairs (every size has some)."""
        return name in PER_PAIR and min(self.series_pairs()) > 0

    def pairs_interval(self, name: str) -> tuple[float, float, float] | None:
        """The stage's CPU exponent against the candidate pairs over every repeated build (a size's pairs are its
        series build's: the same spec and input), with its 95 % interval."""
        pairs = dict(zip(self.kept, self.series_pairs(), strict=True))
        runs = self.repeats()
        return exponent_interval([pairs[k] for k, _ in runs], [self.stage(b, name)["cpu"] for _, b in runs])

    def pairs_growth(self) -> tuple[float, float, float] | None:
        """The candidate pairs' exponent against the input tokens over the sizes (the corpus's, not a stage's)."""
        return exponent_interval([s["input_tokens"] for s in self.scales], self.series_pairs())

    def per_token(self, name: str) -> tuple[float, float, float, float] | None:
        """The stage's CPU over every repeated build as fixed seconds plus a growing part (`per_token_fit`)."""
        runs = self.repeats()
        return per_token_fit([k for k, _ in runs], [self.stage(b, name)["cpu"] for _, b in runs])

    def build_exponents(self) -> tuple[float | None, float | None]:
        return (exponent(self.kept, [b["wall"] for b in self.series]),
                exponent(self.kept, [b["cpu"] for b in self.series]))

    def single_share(self, build: dict) -> float:
        return sum(self.stage(build, n)["wall"] for n in self.r["single_task"]) / build["wall"]

    def by_workers(self) -> dict[int, dict]:
        return {int(w): b for w, b in sorted(self.largest["builds"].items(), key=lambda x: int(x[0]))}

    def throughput(self, w: int) -> dict | None:
        """Build against the bare tokenizer on `w` cores at the largest size: input tokens (every well-formed
        record) per second for both, and kept tokens per second against the tokenizer on kept text."""
        t = self.largest.get("tokenizer", {}).get(str(w))
        if t is None:
            return None
        b = self.largest["builds"][str(w)]
        build_in, bare_in = self.largest["input_tokens"] / b["wall"], t["input_tokens"] / t["input_seconds"]
        build_kept, bare_kept = b["counters"]["tokens_out"] / b["wall"], t["kept_tokens"] / t["kept_seconds"]
        return {"build_in": build_in, "bare_in": bare_in, "ratio_in": build_in / bare_in, "build_kept": build_kept,
                "bare_kept": bare_kept, "ratio_kept": build_kept / bare_kept, "calls": (t["input_call"], t["kept_call"])}

    # ------------------------------------------------------------------------------------------------ goals

    def goals(self) -> list[Goal]:
        out = []
        for name in self.names:
            if name in NOT_PER_TOKEN:
                continue
            bw, bc = self.exponents(name, self.series_pairs() if self.by_pairs(name) else None)
            if bw is None or bc is None:
                continue
            ok = all(abs(b - 1) <= LINEAR for b in (bw, bc))
            how = "" if ok else ("; superlinear" if max(bw, bc) > 1 + LINEAR else
                                 "; sublinear: fixed costs still weigh at these sizes")
            share = self.stage(self.series[-1], name)["wall"] / self.series[-1]["wall"]
            out.append(Goal(f"`{name}` grows linearly{' with its candidate pairs' * self.by_pairs(name)} "
                            f"(exponent 1.0 ± {LINEAR})", ok,
                            f"wall {bw:.2f}, CPU {bc:.2f}{how} ({share:.1%} of the largest build's wall time)"))
            ci = self.pairs_interval(name) if self.by_pairs(name) else self.interval(name)
            if ci is not None:
                against = " against its candidate pairs" if self.by_pairs(name) else ""
                out.append(Goal(f"`{name}` CPU exponent{against} 1.00 ± {STEADY}, its 95 % interval inside 1.00 ± {LINEAR}",
                                abs(ci[0] - 1) <= STEADY and abs(ci[1] - 1) <= LINEAR and abs(ci[2] - 1) <= LINEAR,
                                f"{ci[0]:.3f} [{ci[1]:.3f}, {ci[2]:.3f}] over {len(self.repeats())} builds"))
        first, last = self.series[0], self.series[-1]
        for name in self.names:
            a, b = self.stage(first, name)["peak_rss"], self.stage(last, name)["peak_rss"]
            if a and b:
                out.append(Goal(f"`{name}` peak memory per task flat (within {FLAT - 1:.0%})", b / a <= FLAT,
                                f"{a / MIB:,.0f} → {b / MIB:,.0f} MiB ({b / a:.2f}×) from {self.scales[0]['variants']} to "
                                f"{self.largest['variants']} variants"))
        shares = [self.single_share(b) for b in self.series]
        falling = all(y <= x for x, y in zip(shares, shares[1:], strict=False))
        out.append(Goal(f"single-task stages under {SINGLE_SHARE:.0%} of the wall time at the largest size and falling",
                        shares[-1] < SINGLE_SHARE and falling,
                        f"{', '.join(f'`{n}`' for n in self.r['single_task'])}: "
                        + " → ".join(f"{s:.1%}" for s in shares)))
        ws = self.by_workers()
        if 1 in ws and 2 in ws:
            sp = ws[1]["wall"] / ws[2]["wall"]
            out.append(Goal(f"two workers ≥ {SPEEDUP}× one at the largest size", sp >= SPEEDUP,
                            f"{ws[1]['wall']:.1f} s / {ws[2]['wall']:.1f} s = {sp:.2f}×" + self._ceiling(sp)))
        for w in ws:
            t = self.throughput(w)
            if t:
                out.append(Goal(f"throughput ≥ {VS_TOKENIZER}× the bare tokenizer on {w} worker{'s' * (w > 1)}",
                                t["ratio_in"] >= VS_TOKENIZER,
                                f"{t['ratio_in']:.3f}× on the input ({t['build_in'] / 1e6:.2f}M against "
                                f"{t['bare_in'] / 1e6:.2f}M tok/s); on the kept text {t['ratio_kept']:.3f}×"))
        if self.fixed_tasks is not None:  # the store's documents do not depend on T
            same = [(s["variants"], b["counters"] == f["counters"] and b.get("pairs_verified") == f.get("pairs_verified"))
                    for s, b, f in zip(self.scales, self.series, self.fixed_tasks.series, strict=True)]
            out.append(Goal(f"the builds at T = {self.fixed_tasks.scales[0]['tasks']} keep the documents of the series' "
                            "(counters and verified pairs equal at every size)", all(ok for _, ok in same),
                            ", ".join(f"{n}×: {'equal' if ok else 'DIFFER'}" for n, ok in same)))
        if "ray" in self.r:
            ray = self.r["ray"]
            out.append(Goal(f"Ray store equals the local one ({ray['variants']} variants)", ray["same"], ray["detail"]))
        return out

    def machine_speedup(self) -> float | None:
        """The bare tokenizer's own speed-up from 1 to 2 cores on the input: what this machine gives two CPU-bound
        processes that share nothing."""
        t1, t2 = (self.largest.get("tokenizer", {}).get(w) for w in ("1", "2"))
        if not (t1 and t2):
            return None
        return (t2["input_tokens"] / t2["input_seconds"]) / (t1["input_tokens"] / t1["input_seconds"])

    def _ceiling(self, sp: float) -> str:
        m = self.machine_speedup()
        return "" if m is None else (f"; the bare tokenizer itself gains {m:.2f}× from a second process on this "
                                     f"machine, so the build reaches {sp / m:.0%} of the machine's own speed-up")

    def goal_lines(self) -> list[str]:
        return [g.line() for g in self.goals()]

    # ------------------------------------------------------------------------------------------ performance

    def performance_section(self) -> str:
        a, m = self.r["args"], self.r["machine"]
        heads = " | ".join(f"{s['variants']}×" for s in self.scales)
        cols = "|---|" + "---:|" * len(self.scales)
        lines = [
            BEGIN, "## Growth: the build from 1 to n variants of the demo corpus (`bench/growth_bench.py`)", "",
            f"Machine: {m['machine']}; `uname -a`: {m['uname']}. Load average (1/5/15 min) before the run: "
            f"{self.r['load_start']}, after: {self.r['load_end']}; before and after each build in the rows below.",
            "",
            f"Reproduce: `{self.r.get('cmd', 'python -m bench.growth_bench')}` (one command; the corpora are cached "
            "under `~/.cache/mixture/growth-bench`, so a rerun skips writing them; `--skip-build --out DIR` "
            "re-renders these sections from `DIR/growth.json`; `--quick` is a smoke run that publishes nothing).",
            "",
            f"Input n× = variants 1 … n of the demo corpus at scale {a['base_scale']:g} (seed {a['seed']}; "
            "`mixture demo-corpus --variant`, mixture/demo_corpus/README.md): the same documents in every "
            "variant with their words consistently swapped for words of the same language, script, length and "
            "frequency, so each variant keeps its own exact and near duplicates, contamination, malformed records "
            "and languages, and no variant duplicates another: kept tokens grow n× and the mix stays put (second "
            "table)"
            + ("; with `--duplicates pool` each variant also holds a web-crawl source whose duplicates look like a "
               "real pool's (mixture/demo_corpus/crawl.py: exact and near copies within and across variants and "
               "sources, template families with a Zipf tail whose largest holds ~1.5 % of the documents at every "
               "size, chains of near copies that run on across variants), checked against its ground truth "
               "(bench/pool_truth.py)" if a.get("duplicates") == "pool" else "")
            + ". One spec over all of them (specs/demo.yaml's sources, k = "
            f"{a['k']}, fine_k = {a['fine_k']}, `sample_docs` = {a['sample_docs']:,} at every size), "
            f"{a['tasks_per_variant']} tasks per variant for every per-file stage (every task reads the same input "
            f"at every size). Every size is built with {self.series_w} workers"
            + "".join(f", the largest also with {w} worker{'s' * (w > 1)}" for w in self.by_workers() if w != self.series_w)
            + "; each build from an empty store in a fresh process. Per stage: wall seconds, CPU seconds "
            "(the driver and the worker processes of the stage), and the peak resident memory of the largest task "
            "(each task's own `VmHWM`, reset as it starts, from `_build/<stage>/usage/`; the driver's for "
            "`finalize`). Exponents: slope of log time against log kept tokens, least squares over the sizes (CPU: over "
            "every repeated build, with its 95 % interval). Beside it the CPU seconds as a + b·tokens^k over every "
            "repeated build: a, the seconds a stage spends whatever its input (its pool, imports, listings), which "
            "a plain slope reads as sublinear growth; k, the exponent of the part that grows, with its interval (three "
            "parameters from a few sizes: wide where identical builds differ, so the projection keeps the plain slope).",
            *self._reduced(),
            "",
            f"| | {heads} |", cols,
            _row("input records", (f"{s['input_records']:,}" for s in self.scales)),
            _row("input tokens (every well-formed record)", (f"{s['input_tokens']:,}" for s in self.scales)),
            _row("tasks per per-file stage", (str(s["tasks"]) for s in self.scales)),
            _row("documents kept", (f"{b['counters']['records_out']:,}" for b in self.series)),
            _row("**tokens kept**", (f"**{_fmt_tokens(k)}**" for k in self.kept)),
            _row("kept tokens per variant", (f"{k / s['variants'] / 1e6:.2f}M" for k, s in zip(self.kept, self.scales, strict=True))),
            _row("build wall time", (f"{b['wall']:.1f} s" for b in self.series)),
            _row("build CPU time", (f"{b['cpu']:.1f} s" for b in self.series)),
            _row("kept tokens per wall second", (f"{k / b['wall'] / 1e6:.2f}M" for k, b in zip(self.kept, self.series, strict=True))),
            _row("load average before → after", (f"{b['load_before'].split(' /')[0]} → {b['load_after'].split(' /')[0]}" for b in self.series)),
            "", "The mix at every size (shares of the records read, of the kept tokens):", "",
            f"| | {heads} |", cols,
        ]
        lines += self._mix_rows() + self._truth_rows() + self._truth_notes()
        bw, bc = self.build_exponents()
        lines += ["", f"Per stage ({self.series_w} workers; exponents over the sizes; the whole build: wall "
                  f"{_exp(bw)}, CPU {_exp(bc)}):", "",
                  f"| stage | wall {heads} | CPU {heads} | exponent wall / CPU | CPU = a + b·tokens^k: k, a | "
                  f"peak per task {heads} |",
                  "|---|" + "---:|" * (2 * len(self.scales) + 2 + len(self.scales))]
        for name in self.names:
            ew, ec = self.exponents(name)
            ci = self.interval(name)
            ec_text = _exp(ec) if ci is None else f"{ci[0]:.2f} [{ci[1]:.2f}, {ci[2]:.2f}]"
            walls = " | ".join(f"{x:.2f}" for x in self.values(name, "wall"))
            cpus = " | ".join(f"{x:.2f}" for x in self.values(name, "cpu"))
            peaks = " | ".join(f"{x / MIB:,.0f}" for x in self.values(name, "peak_rss"))
            note = " ¹" if name in NOT_PER_TOKEN else ""
            fit = self.per_token(name)
            fit_text = "–" if fit is None else f"{fit[0]:.2f} [{fit[1]:.2f}, {fit[2]:.2f}], {fit[3]:.2f} s"
            lines.append(f"| `{name}`{note} | {walls} | {cpus} | {_exp(ew)} / {ec_text} | {fit_text} | {peaks} |")
        docs_1x = self.series[0]["counters"]["records_out"]
        lines += ["", "Seconds, and MiB for the peaks. ¹ Not per token by design: "
                  + "; ".join(f"`{k}` grows with {v}" for k, v in NOT_PER_TOKEN.items()) + ". `sample` tokenizes "
                  "the fit sample's documents and `assign` all others, so with the sample fixed `sample` grows less "
                  "than linearly and `assign` more, the more so the larger the sample against the smallest size's "
                  f"documents (here {self.r['args']['sample_docs']:,} of {docs_1x:,}); together they are linear."]
        lines += self._runs_rows()
        lines += self._one_t_rows()
        lines += self._workers_rows()
        lines += ["", "Goals (issue 15):", ""] + [f"- {g.line()}" for g in self.goals()] + [END]
        return "\n".join(lines) + "\n"

    def _reduced(self) -> list[str]:
        if self.kept[-1] >= FULL_KEPT:
            return []
        return ["", f"**A reduced run**: its largest size keeps {_fmt_tokens(self.kept[-1])} tokens, under the "
                f"{FULL_KEPT / 1e6:.0f}M of the full run (`python -m bench.growth_bench`), whose figures replace these."]

    def _mix_rows(self) -> list[str]:
        mixes = [b["mix"] for b in self.series]
        rows = []
        for key in mixes[-1]["drops"]:
            rows.append(f"| dropped: {key.removesuffix('_dropped').replace('_', ' ')} | "
                        + " | ".join(f"{x['drops'].get(key, 0):.2%}" for x in mixes) + " |")
        for cat in sorted(mixes[-1]["categories"], key=lambda c: -mixes[-1]["categories"][c]):
            rows.append(_row(f"tokens: {cat}", (f"{x['categories'].get(cat, 0):.1%}" for x in mixes)))
        langs = sorted(mixes[-1]["languages"], key=lambda c: -mixes[-1]["languages"][c])[:4]
        for lang in langs:
            rows.append(_row(f"tokens: language {lang}", (f"{x['languages'].get(lang, 0):.1%}" for x in mixes)))
        rows.append("| near-duplicate candidate pairs per kept document | "
                    + " | ".join(f"{x['pairs_per_doc']:.3f}" for x in mixes) + " |")
        return rows

    def _runs_rows(self) -> list[str]:
        """Every repeated build in the order it ran: its size, the machine's load and the bare tokenizer's rate on a
        fixed probe text just before it, its CPU."""
        runs = [b for s in self.scales for b in s.get("repeats", [])]
        if not runs:
            return []
        lines = ["", "Every build of the series in the order it ran (the sizes interleaved; the load average and the "
                 "bare tokenizer's rate on one core over a fixed probe text just before each build: a build on a "
                 "loaded or slower machine shows here):", "",
                 "| order | variants | load (1 min) | bare tokenizer, tok/s | build CPU s |", "|---:|---:|---:|---:|---:|"]
        for b in sorted(runs, key=lambda b: b["order"]):
            lines.append(f"| {b['order']} | {b['variants']} | {b['load_before'].split(' /')[0]} | "
                         f"{b['probe_rate']:,.0f} | {b['cpu']:.1f} |")
        return lines

    def _one_t_rows(self) -> list[str]:
        """The sizes at one T beside the series, and each stage's CPU fitted over both (`linear_costs`)."""
        f = self.fixed_tasks
        if f is None:
            return []
        fits = self.linear_costs()

        def interval(rep: Report, name: str) -> str:
            ci = rep.pairs_interval(name) if rep.by_pairs(name) else rep.interval(name)
            return "–" if ci is None else f"{ci[0]:.2f} [{ci[1]:.2f}, {ci[2]:.2f}]"

        def median(rep: Report, name: str) -> float:
            builds = rep.largest.get("repeats") or [rep.series[-1]]
            return float(np.median([rep.stage(b, name)["cpu"] for b in builds]))

        t0, t1, tf = self.scales[0]["tasks"], self.largest["tasks"], f.scales[0]["tasks"]
        lines = ["", f"The same sizes at T = {tf} ({f.r.get('cmd', '--fixed-tasks')}), beside the series' T = {t0} … "
                 f"{t1}: exponents over every repeated build (`{'`, `'.join(n for n in self.names if self.by_pairs(n))}` "
                 f"against its candidate pairs), CPU seconds at {self.largest['variants']}× (median of the repeats), "
                 "and each stage's CPU over the builds of both as fixed + per task + per T·P + per unit of work, by "
                 "non-negative least squares (the cost model's `LinearCost`; its own task count, P = T; none for a "
                 "stage whose tasks do not vary, nor for `fit` and `finalize`):", "",
                 f"| stage | exponent, T = {t0} … {t1} | T = {tf} | CPU s at {self.largest['variants']}×, T = {t1} | "
                 f"T = {tf} | fixed s | per task ms | per T·P ms | per unit | R² |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name in self.names:
            fit = fits.get(name)
            if fit is None:
                fitted = "– | – | – | – | –"
            else:
                unit = f"{fit.per_unit * 1e6:.3g} µs a pair" if self.by_pairs(name) else f"{fit.per_unit * 1e9:.3g} ns a token"
                fitted = (f"{fit.fixed:.2f} | {fit.per_task * 1e3:.1f} | {fit.per_range * 1e3:.2f} | {unit} | "
                          f"{fit.r2:.3f}")
            lines.append(f"| `{name}` | {interval(self, name)} | {interval(f, name)} | {median(self, name):.2f} | "
                         f"{median(f, name):.2f} | {fitted} |")
        return lines

    def _truth_rows(self) -> list[str]:
        """The pool profile's ground truth at every size (bench/pool_truth.py), when the corpus has one."""
        truths = [s.get("truth") for s in self.scales]
        if not all(truths):
            return []

        def gone(t: dict, key: str, reason: str) -> str:
            return f"{t[key].get(reason, 0):,} of {t[key]['planted']:,}"

        return [
            _row("pool truth: named kept documents lost", (f"{t['named_kept_lost']} of {t['named_kept']:,}" for t in truths)),
            _row("pool truth: named originals dropped as near duplicates in their own source ²",
                 (f"{len(t.get('named_near_duplicates_in_source', []))}" for t in truths)),
            _row("pool truth: near-duplicate drops not verified", (f"{t['fuzzy_drops_unverified']} of {t['fuzzy_drops']:,}" for t in truths)),
            _row("pool truth: exact copies dropped", (gone(t, "exact_copies", "exact_duplicate") for t in truths)),
            _row("pool truth: near copies dropped", (gone(t, "near_copies", "fuzzy_duplicate") for t in truths)),
            _row("pool truth: template family members dropped", (gone(t, "family_members", "fuzzy_duplicate") for t in truths)),
            _row("pool truth: chain links kept (every other one)", (gone(t, "chain_links", "kept") for t in truths)),
            _row("duplicates' share of the input characters", (f"{t['duplicate_share']:.1%}" for t in truths)),
        ]

    def _truth_notes(self) -> list[str]:
        """² under the truth rows: each named original the crawl took from another source and that source's own
        text holds a verified near duplicate of (bench/pool_truth.py), with its evidence and the sizes it was in."""
        seen: dict[str, dict] = {}
        for s in self.scales:
            for e in (s.get("truth") or {}).get("named_near_duplicates_in_source", []):
                seen.setdefault(e["id"], {**e, "sizes": []})["sizes"].append(f"{s['variants']}×")
        if not seen:
            return []
        cases = "; ".join(f"`{e['id']}` ({e['why']}) near duplicate of `{e['near_duplicate_of']}`, word n-gram "
                          f"Jaccard {e['jaccard']:.3f} verified (at {', '.join(e['sizes'])})" for e in seen.values())
        return ["", "² Not lost: an original the crawl copied from another source that the source's own text holds a "
                "near duplicate of, kept in its place (not one of the planted documents), at or above the threshold: "
                + cases + "."]

    def _workers_rows(self) -> list[str]:
        ws = self.by_workers()
        if len(ws) < 2:
            return []
        heads = " | ".join(f"{w} worker{'s' * (w > 1)}" for w in ws)
        lines = ["", f"The largest size ({self.largest['variants']}×, {_fmt_tokens(self.kept[-1])} kept tokens) on "
                 + " and ".join(str(w) for w in ws) + " workers, and the bare tokenizer (bench/build_bench.py's "
                 "fastest call on as many cores, on the input of the first "
                 f"{self.r['args']['tokenizer_variants']} variant{'s' * (self.r['args']['tokenizer_variants'] > 1)} "
                 "and on a like share of the store's kept text; "
                 "its rate applies to all):", "",
                 f"| | {heads} |", "|---|" + "---:|" * len(ws)]
        lines.append(_row("build wall time", (f"{b['wall']:.1f} s" for b in ws.values())))
        for name in self.names:
            lines.append(_row(f"`{name}`", (f"{self.stage(b, name)['wall']:.2f} s" for b in ws.values())))
        tps = {w: self.throughput(w) for w in ws}
        if all(tps.values()):
            lines += [
                _row("build: input tokens per second", (f"{t['build_in']:,.0f}" for t in tps.values())),
                _row("bare tokenizer on the input, tokens per second", (f"{t['bare_in']:,.0f}" for t in tps.values())),
                _row("**ratio on the input**", (f"**{t['ratio_in']:.3f}×**" for t in tps.values())),
                _row("build: kept tokens per second", (f"{t['build_kept']:,.0f}" for t in tps.values())),
                _row("bare tokenizer on kept text, tokens per second", (f"{t['bare_kept']:,.0f}" for t in tps.values())),
                _row("ratio on the kept text", (f"{t['ratio_kept']:.3f}×" for t in tps.values())),
                _row("fastest bare tokenizer call", (f"`{t['calls'][0]}`" for t in tps.values())),
            ]
        if 1 in ws and 2 in ws:
            sp = ws[1]["wall"] / ws[2]["wall"]
            lines += ["", f"Speed-up of 2 workers over 1 at the largest size: {sp:.2f}× (per stage: "
                      + ", ".join(f"`{n}` {self.stage(ws[1], n)['wall'] / max(1e-9, self.stage(ws[2], n)['wall']):.2f}×"
                                  for n in self.names) + ")" + self._ceiling(sp) + "."]
        return lines

    # ------------------------------------------------------------------------------------------- projection

    def cpu_exponent(self, name: str) -> float | None:
        """The stage's CPU exponent the projection applies: over every repeated build (the table's, with its
        interval), or over the series where the run has no repeats. The series alone moved `assign`'s from 0.99 to
        1.03 between two runs, which the projection magnifies over five orders of magnitude (+500 core-hours)."""
        ci = self.pairs_interval(name) if self.by_pairs(name) else self.interval(name)
        return ci[0] if ci is not None else self.exponents(name)[1]

    def rates(self, objects: dict[str, costs.ObjectRate] | None = None) -> costs.Rates:
        """The cost model's rates (mixture/stages/costs.py) from this run: per stage its CPU seconds at the largest
        size (1 worker if measured), its CPU exponent (`cpu_exponent`) and largest task's peak; `objects` as
        bench/cost_rates.py fits them. `fit` is scaled by its sample, `finalize` by the tasks, `minhash_verify` by
        the candidate pairs (`PER_PAIR`, with their growth with the tokens), every other stage by the tokens."""
        build = self.by_workers().get(1, self.series[-1])
        linear = self.linear_costs()
        stages = []
        for name in self.names:
            scaled_by, reference = (("sample", self.r["args"]["sample_docs"]) if name == "fit" else
                                    ("tasks", self.largest["tasks"]) if name == "finalize" else
                                    ("pairs", self.candidate_pairs(build)) if self.by_pairs(name) else
                                    ("tokens", self.largest["input_tokens"]))
            st = self.stage(build, name)
            rounds = (costs.RoundsRate(rounds=st["rounds"], pairs=build.get("pairs_verified", 0))
                      if "rounds" in st else None)
            stages.append(costs.StageRate(stage=name, cpu_seconds=st["cpu"], scaled_by=scaled_by, reference=reference,
                                          exponent=self.cpu_exponent(name), peak_rss=int(st.get("peak_rss") or 0),
                                          objects=(objects or {}).get(name, costs.ObjectRate()), rounds=rounds,
                                          linear=linear.get(name)))
        t = self.throughput(1)
        measured = (f"{self.r.get('cmd', 'python -m bench.growth_bench')} (load average {self.r.get('load_start', '?')} "
                    f"at its start, {self.r.get('load_end', '?')} at its end)")
        if linear:
            f = self.fixed_tasks.r
            measured += (f", with {f.get('cmd', 'python -m bench.growth_bench --fixed-tasks')} (load average "
                         f"{f.get('load_start', '?')} at its start, {f.get('load_end', '?')} at its end) for the fitted costs")
        return costs.Rates(machine=self.r["machine"]["machine"], measured=measured,
                           input_tokens=self.largest["input_tokens"],
                           kept_share=self.kept[-1] / self.largest["input_tokens"],
                           bare_tokenizer=t["bare_in"] if t else None,
                           candidate_pairs=self.candidate_pairs(build) or None,
                           pairs_exponent=(self.pairs_growth() or (None,))[0], stages=tuple(stages),
                           largest_component=costs.load_rates().largest_component)  # bench/components_bench.py's

    def projection_rows(self, candidate_pairs: float | None = None,
                        largest_component: float | None = None) -> list[dict]:
        """Per stage: CPU seconds at the largest size, its CPU exponent, and the cost model's core-hours and wall
        hours on CORES cores for RAW_POOL raw tokens (mixture/stages/costs.py `project`, the model `mixture estimate`
        applies to a spec), with `candidate_pairs` near-duplicate candidate pairs (None: grown as over the sizes)
        and a largest near-duplicate component of `largest_component` documents (None: not projected)."""
        rates = self.rates()
        tasks = self.r.get("pool_tasks", {})
        work = costs.Workload(input_tokens=RAW_POOL, tasks=POOL_TASKS, fit_sample=FIT_SAMPLE, stage_tasks={
            n: tasks.get(n, 1 if n in self.r["single_task"] else POOL_TASKS) for n in self.names},
            candidate_pairs=candidate_pairs, largest_component=largest_component)
        return [{"stage": c.stage, "cpu": r.cpu_seconds, "exponent": r.exponent, "how": c.scaled,
                 "core_hours": c.core_hours, "linear_hours": c.linear_core_hours, "tasks": c.tasks,
                 "wall_hours": c.wall_hours, "task_hours": c.task_hours}
                for r, c in zip(rates.stages, costs.project(rates, work, CORES), strict=True)]

    def component_scenarios(self, rows: list[dict]) -> list[str]:
        """The projection with the largest near-duplicate component's star rounds through `minhash_cluster`
        (bench/components_bench.py's measured path), for sizes up to Marin's candidate cluster."""
        path, stage = costs.load_rates().largest_component, "minhash_cluster"
        if path is None or stage not in self.names:
            return []
        cases = [("none (components like the growth corpus's): the table above", None),
                 *((f"{m / 1e6:,.0f}M documents", m) for m in (1e7, 1e8)),
                 (f"Marin's candidate cluster: {costs.MARIN_LARGEST / 1e6:,.0f}M documents", costs.MARIN_LARGEST)]
        lines = [f"The largest near-duplicate component's edges are kept in the partitions of their larger ends in "
                 f"`{stage}`'s star rounds, spread over its tasks like the other pairs (no task holds a document's "
                 "larger neighbours): each of its rounds adds its share to every task. Its path, measured on one "
                 f"component of {path.members:,} documents and {path.pairs:,} verified pairs at {path.tasks} tasks "
                 f"(`{path.measured.split(' (')[0]}`): the longest task of its star rounds {path.star_seconds:.1f} s "
                 f"in {path.rounds} rounds (the greedy's {path.greedy_rounds} rounds and finish, spread, "
                 f"{path.greedy_seconds:.1f} s on their longest tasks); scaled by its documents and spread over the "
                 f"stage's tasks, in each of its own rounds (the measured {path.rounds}, "
                 f"{costs.ROUNDS_PER_DOUBLING:g} more per doubling of its documents, {costs.FINISH_ROUNDS} to be found "
                 "whole; at most the stage's), added to each task's share of the rest (an upper bound):", "",
                 f"| largest component | `{stage}` wall hours | its longest task, hours | "
                 f"critical path on {CORES:,} cores |", "|---|---:|---:|---:|"]
        for label, members in cases:
            case = rows if members is None else self.projection_rows(largest_component=members)
            c = next(r for r in case if r["stage"] == stage)
            lines.append(f"| {label} | {c['wall_hours']:,.2f} | {c['task_hours']:,.2f} | "
                         f"{_hours(sum(r['wall_hours'] for r in case))} h |")
        return [*lines, ""]

    def _projection_method(self) -> str:
        exp = ("a stage's CPU seconds times (pool tokens / measured tokens)^e, e its CPU growth exponent over the sizes "
               "and every repeated build (the table's), never under 1 (the linear figure beside)")
        fits = self.linear_costs()
        if not fits:
            return exp
        f, pairs = self.fixed_tasks, [n for n in fits if self.by_pairs(n)]
        return ("every stage that grows with its input by its CPU seconds fitted as fixed + per task + per T·P + per "
                "unit of work (input tokens" + "".join(f"; `{n}` candidate pairs" for n in pairs) + "), "
                "by non-negative least squares over the builds of this run (T = "
                f"{self.scales[0]['tasks']} … {self.largest['tasks']}, growing with the input) and of a run at T = "
                f"{f.scales[0]['tasks']} for every size (`{f.r.get('cmd', '--fixed-tasks')}`), R² "
                f"{min(x.r2 for x in fits.values()):.3f}–{max(x.r2 for x in fits.values()):.3f}: in a run whose T "
                "grows with its input, what a task and a shuffle's writer–reader pair cost reads as superlinear "
                "work; at the pool T = P = "
                f"{POOL_TASKS:,} (the table's `its tasks` and `T·P` hours are in its core-hours); other stages: "
                + exp)

    def pairs_scenarios(self, rows: list[dict]) -> list[str]:
        """The projection under other counts of the pool's candidate pairs: `minhash_verify`'s work is the corpus's
        duplicates, which this corpus cannot tell for the real pool."""
        per_pair = [n for n in self.names if self.by_pairs(n)]
        if not per_pair:
            return []
        rates, growth = self.rates(), self.pairs_growth()
        docs = RAW_POOL * self.largest["input_records"] / self.largest["input_tokens"]
        bands = FuzzyDedup.model_fields["bands"].default  # the growth spec's (specs/demo.yaml)
        grown = rates.pairs_at(RAW_POOL)
        cases = [(f"as at the largest size measured ({rates.candidate_pairs / self.largest['input_records']:.2f} per "
                  "input document, held)", rates.candidate_pairs * RAW_POOL / rates.input_tokens),
                 ("grown with the tokens as over the sizes (exponent "
                  + (f"{growth[0]:.2f} [{growth[1]:.2f}, {growth[2]:.2f}]" if growth else "–")
                  + "): the table above", grown),
                 (f"Marin's pool: {MARIN_CANDIDATES / 1e9:.2f}B candidate documents, one pair each", MARIN_CANDIDATES),
                 (f"… {ANCHORS} pairs each (a member of a large family paired with the same {ANCHORS} first members "
                  "in every band)", ANCHORS * MARIN_CANDIDATES),
                 (f"the bound: every document paired with {ANCHORS} members before it in each of {bands} bands",
                  ANCHORS * bands * docs)]
        lines = ["", f"`{'`, `'.join(per_pair)}` is scaled by the near-duplicate candidate pairs, and the pool's "
                 "pairs are a property of its duplicates that "
                 f"this corpus cannot tell. The projection with other counts (pool documents: {docs / 1e9:.1f}B at "
                 f"this corpus's {self.largest['input_tokens'] / self.largest['input_records']:,.0f} tokens per "
                 "record):", "",
                 "| the pool's candidate pairs | pairs | per input document | "
                 + " + ".join(f"`{n}`" for n in per_pair) + " core-hours | build core-hours | critical path on "
                 f"{CORES:,} cores |", "|---|---:|---:|---:|---:|---:|"]
        for label, pairs in cases:
            case = rows if pairs == grown else self.projection_rows(pairs)
            lines.append(f"| {label} | {pairs / 1e9:,.1f}B | {pairs / docs:.2f} | "
                         f"{_hours(sum(r['core_hours'] for r in case if r['stage'] in per_pair))} | "
                         f"{_hours(sum(r['core_hours'] for r in case))} | {_hours(sum(r['wall_hours'] for r in case))} h |")
        return [*lines, ""]

    def projection_section(self) -> str:
        rows = self.projection_rows()
        ws = self.by_workers()
        w = 1 if 1 in ws else self.series_w
        kept_share = self.kept[-1] / self.largest["input_tokens"]
        total_core = sum(r["core_hours"] for r in rows)
        total_wall = sum(r["wall_hours"] for r in rows)
        single = [r for r in rows if r["tasks"] == 1]
        lines = [
            PROJECTION_BEGIN,
            *[x for x in self._reduced() if x], *([""] if self._reduced() else []),
            f"Projected by `bench/growth_bench.py` from its largest size ({self.largest['variants']} variants, "
            f"{_fmt_tokens(self.largest['input_tokens'])} input tokens, {_fmt_tokens(self.kept[-1])} kept, "
            f"{kept_share:.0%}; CPU seconds of the build on {w} worker{'s' * (w > 1)}; {self.r['machine']['machine']}) to "
            f"{RAW_POOL / 1e12:.1f}T raw tokens ({RAW_POOL * kept_share / 1e12:.1f}T kept at the same share): "
            + self._projection_method() +
            f"; `finalize` by the tasks ({POOL_TASKS:,} against "
            f"{self.largest['tasks']}), `fit` by its sample ({FIT_SAMPLE:,} documents, the default, against "
            f"{self.r['args']['sample_docs']:,}). Wall on {CORES:,} cores: core-hours / min({CORES:,}, tasks), tasks "
            f"as the stage registry gives them for `execution.tasks: {POOL_TASKS:,}`; the stages run one after "
            "another, so their walls add up to the critical path.",
            "",
            "| stage | CPU s measured | exponent (CPU) | scaled by | tasks | core-hours (linear) | core-hours | "
            f"wall hours on {CORES:,} cores |",
            "|---|---:|---:|---|---:|---:|---:|---:|",
        ]
        for r in rows:
            lines.append(f"| `{r['stage']}` | {r['cpu']:.2f} | {_exp(r['exponent'])} | {r['how']} | {r['tasks']:,} | "
                         f"{_hours(r['linear_hours'])} | {_hours(r['core_hours'])} | {_hours(r['wall_hours'])} |")
        lines += [f"| **total** | {sum(r['cpu'] for r in rows):.1f} | | | | {_hours(sum(r['linear_hours'] for r in rows))} | "
                  f"**{_hours(total_core)}** | **{_hours(total_wall)}** |", ""]
        if single:
            worst = max(single, key=lambda r: r["wall_hours"])
            lines.append(
                f"Critical path on {CORES:,} cores: {_hours(total_wall)} h, of which the single-task stages "
                + ", ".join(f"`{r['stage']}` {_hours(r['wall_hours'])} h" for r in single)
                + f" ({sum(r['wall_hours'] for r in single) / max(total_wall, 1e-9):.0%}; the longest is "
                f"`{worst['stage']}`). A single task runs on one core as measured (more `cpus_per_task` help only "
                "where its own code uses threads: DuckDB); the per-token stages with T ≥ cores use every core"
                + "".join(f"; `minhash_buckets` runs {r['tasks']:,} tasks (one per band and slice of its first-hash "
                          "range: bands × ⌈T / bands⌉)" for r in rows if r["stage"] == "minhash_buckets") + ".")
        lines += self.pairs_scenarios(rows)
        lines += self.component_scenarios(rows)
        superlinear = [r["stage"] for r in rows if r["exponent"] is not None and r["exponent"] > 1 + LINEAR]
        if superlinear:
            lines.append(f"{', '.join(f'`{n}`' for n in superlinear)} grew faster than linearly over the measured "
                         f"sizes: the exponent is applied over {math.log10(RAW_POOL / self.largest['input_tokens']):.1f} "
                         f"orders of magnitude ({_hours(total_core)} core-hours against "
                         f"{_hours(sum(r['linear_hours'] for r in rows))} if linear), so a few hundredths of exponent "
                         "(or a noisy fit on a shared machine) move it a lot.")
        lines.append(PROJECTION_END)
        return "\n".join(lines) + "\n"
