"""The draw plan of `mixture materialize`, decided without reading any text: which documents each cell gives each
phase (seeded passes), their interleaved order and the shard each one goes to."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import xxhash

from mixture.accounting.document_rows import DocumentIndex
from mixture.planner.formats import ManifestCell, ManifestCellPhase, Plan, PlanCell


class MaterializeError(RuntimeError):
    """The plan cannot be drawn from this store (the message names the cell and what to do)."""


# the columns of a materialized shard, in order (what `mixture.datasets.load_mixture` reads)
SHARD_SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()), ("n_tokens", pa.int64()), ("source", pa.string()),
                          ("cell", pa.string()), ("cluster", pa.int16()), ("quality", pa.int8()), ("pass", pa.int32())])
# the draw plan as tables for the tasks: one row per drawn document in training order, one row per shard
DRAWS_SCHEMA = pa.schema([("shard", pa.int32()), ("cell", pa.int32()), ("file", pa.int32()), ("row", pa.int64()),
                          ("pass", pa.int32()), ("n_tokens", pa.int64())])
GROUPS_SCHEMA = pa.schema([("shard", pa.int32()), ("group", pa.int32())])
SHARDS_SCHEMA = pa.schema([("shard", pa.int32()), ("phase", pa.int32()), ("part", pa.int32()), ("rows", pa.int64()),
                           ("tokens", pa.int64()), ("chars", pa.int64())])


def phase_dir(name: str) -> str:
    return f"phase={name}"


def shard_name(part: int) -> str:
    return f"part-{part:05d}.parquet"


@dataclass(frozen=True)
class WorkFiles:
    """The files of a materialize run under DIR/_materialize/ (a path on the output's filesystem): datatrove's logging
    dir (completions/, logs/, stats/) and work/: the draw plan, its key (written last) and each task's shards."""

    root: str  # DIR, without protocol

    @property
    def logging(self) -> str:
        return f"{self.root}/_materialize"

    @property
    def work(self) -> str:
        return f"{self.logging}/work"

    @property
    def key(self) -> str:
        return f"{self.work}/key.json"

    @property
    def draws(self) -> str:
        return f"{self.work}/draws.parquet"

    @property
    def shards(self) -> str:
        return f"{self.work}/shards.parquet"

    @property
    def files(self) -> str:
        return f"{self.work}/files.parquet"

    @property
    def drawn(self) -> str:
        """The manifest without its shards (Manifest): what every cell drew, known before any text is read."""
        return f"{self.work}/drawn.json"

    def written(self, rank: int) -> str:
        return f"{self.work}/written/{rank:05d}.json"

    @property
    def groups(self) -> str:
        """GROUPS_SCHEMA: the group of shards each shard is written in (decided once, kept by a resumed run)."""
        return f"{self.work}/groups.parquet"

    @property
    def scatter_logging(self) -> str:
        """datatrove's logging dir of the scatter tasks (the gather tasks' is `logging`)."""
        return f"{self.logging}/scatter"

    @property
    def shuffle(self) -> str:
        """The scatter's output: shuffle/SSSSS-FFFFF.parquet, flush F of scatter task S, a shuffle file of the
        groups (pipelines/dedup/shuffle.py: a byte range per group, gather task g reads range g of each)."""
        return f"{self.logging}/shuffle"

    @property
    def bucket_files(self) -> str:
        """A glob of every scatter file."""
        return f"{self.shuffle}/*.parquet"

    def bucket_file(self, task: int, flush: int) -> str:
        return f"{self.shuffle}/{task:05d}-{flush:05d}.parquet"


@dataclass
class CellStream:
    """A cell's documents in draw order: seeded permutation 0, then 1, ... (`passes`), with running token sums."""

    stream: np.ndarray  # row of the cell's documents (in id order)
    passes: np.ndarray  # which permutation (pass) the row comes from
    tokens: np.ndarray  # n_tokens of each drawn row
    cum: np.ndarray  # cumulative tokens


@dataclass
class CellDraw:
    """One cell's drawn stream cut into phases: stream[cuts[p-1]:cuts[p]] is what phase p takes."""

    stream: np.ndarray
    passes: np.ndarray
    cuts: list[int]
    tokens: np.ndarray


def cell_seed(seed: int, cell: str, pass_index: int) -> np.random.Generator:
    return np.random.default_rng([seed, xxhash.xxh64_intdigest(cell.encode()), pass_index])


def cell_stream(n_tokens: np.ndarray, total_target: int, seed: int, cell: str, phases: int = 1) -> CellStream:
    """Enough seeded passes over the cell to cover `total_target` tokens plus one document of slack per phase."""
    n, N = len(n_tokens), int(n_tokens.sum())
    if total_target == 0:
        empty = np.zeros(0, dtype=np.int64)
        return CellStream(empty, empty, empty, empty)
    if N <= 0:
        raise MaterializeError(f"cell {cell}: the plan draws {total_target} tokens but the store has none in it")
    count = total_target // N + 1 + -(-phases * int(n_tokens.max()) // N)
    stream = np.concatenate([cell_seed(seed, cell, j).permutation(n) for j in range(count)])
    tokens = n_tokens[stream]
    return CellStream(stream, np.repeat(np.arange(count), n), tokens, np.cumsum(tokens))


def choose_cut(cum: np.ndarray, start: int, target: int, carry: int) -> tuple[int, int]:
    """End position of a draw of `target` tokens from stream position `start`: the document boundary just below or
    just above the target, whichever keeps `carry + error` closest to zero (a target below half a document can
    take none). Returns (end, error)."""
    if target <= 0:
        return start, 0
    base = int(cum[start - 1]) if start > 0 else 0
    i = int(np.searchsorted(cum, base + target, side="left"))
    if i >= len(cum):  # the stream has slack for this; stay safe anyway
        return len(cum), int(cum[-1]) - base - target
    over = int(cum[i]) - base - target
    under = (int(cum[i - 1]) if i > 0 else 0) - base - target
    if abs(carry + under) <= abs(carry + over):
        return i, under
    return i + 1, over


def cut_phases(st: CellStream, targets: list[int], carries: list[int]) -> list[int]:
    """Cut one cell's stream phase by phase; `carries[p]`: the error of phase p so far over the cells before this
    one, updated in place (so each phase total stays within about one document)."""
    cuts, start = [], 0
    for p, target in enumerate(targets):
        end, err = choose_cut(st.cum, start, target, carries[p])
        carries[p] += err
        cuts.append(end)
        start = end
    return cuts


def draw_phases(streams: dict[str, CellStream], targets: dict[str, list[int]], n_phases: int) -> dict[str, list[int]]:
    """Cut every cell's stream phase by phase. Each (phase, cell) is within one document of its target; the
    error is carried from cell to cell (in the given order) so each phase total stays within about one document."""
    carries = [0] * n_phases
    return {c: cut_phases(st, targets[c], carries) for c, st in streams.items()}


def draw_cell(n_tokens: np.ndarray, targets: list[int], seed: int, cell: str) -> CellDraw:
    """One cell alone: seeded passes cut at each phase target (whole passes, then a fresh permutation's prefix)."""
    st = cell_stream(n_tokens, int(sum(targets)), seed, cell, len(targets))
    cuts = draw_phases({cell: st}, {cell: list(targets)}, len(targets))[cell]
    end = cuts[-1] if cuts else 0
    return CellDraw(st.stream[:end], st.passes[:end], cuts, st.tokens[:end])


def interleave(parts: list[np.ndarray]) -> np.ndarray:
    """Order for the concatenation of per-cell token sequences so that every prefix holds the cells in their token
    proportions: document i of a cell sits at (tokens before it + half its own) / the cell's tokens of the phase.
    Ties go to the earlier cell, then the earlier document."""
    keys, cells, pos = [], [], []
    for k, tok in enumerate(parts):
        if len(tok) == 0:
            continue
        cum = np.cumsum(tok, dtype=np.float64)
        keys.append((cum - tok / 2.0) / cum[-1])
        cells.append(np.full(len(tok), k, dtype=np.int64))
        pos.append(np.arange(len(tok), dtype=np.int64))
    if not keys:
        return np.zeros(0, dtype=np.int64)
    key, cell, p = np.concatenate(keys), np.concatenate(cells), np.concatenate(pos)
    return np.lexsort((p, cell, key))


def shard_numbers(chars: np.ndarray, shard_chars: int) -> np.ndarray:
    """Shard of each document of a phase in training order: a new shard starts at the first document whose
    characters before it reach the next multiple of `shard_chars`; shards are numbered 0, 1, … without gaps."""
    if len(chars) == 0:
        return np.zeros(0, dtype=np.int64)
    start = (np.cumsum(chars) - chars) // shard_chars
    return np.unique(start, return_inverse=True)[1].reshape(-1)


@dataclass
class PhaseDraws:
    """One phase in training order: the draws (DRAWS_SCHEMA, `shard` numbered over every phase) and its shards."""

    draws: pa.Table
    shards: pa.Table


@dataclass
class DrawPlan:
    """What materialize writes, decided from the documents' sizes alone: per used cell its store counts, per
    (phase, cell) what it drew, and per phase the draws in training order with their shards."""

    cells: list[PlanCell]  # the used cells, in plan order (a draw's `cell` is a position here)
    files: list[str]  # the store's shards the draws read (a draw's `file` is a position here)
    cell_info: dict[str, ManifestCell]
    drawn: list[dict[str, ManifestCellPhase]]  # per phase: per cell
    phases: list[PhaseDraws] = field(default_factory=list)

    @property
    def n_shards(self) -> int:
        return sum(p.shards.num_rows for p in self.phases)


def plan_draws(plan: Plan, index: DocumentIndex, seed: int, shard_chars: int,
               progress: Callable[[str, int, int], None] | None = None) -> DrawPlan:
    """Draw every used cell (seeded passes cut at its phase targets), interleave each phase and cut it into shards
    of about `shard_chars` characters. Holds the index and the draws (a few integers per document), no text."""
    used = plan.used_cells()
    names = [p.name for p in plan.phases]
    ends = index.cell_bounds(len(used))
    carries = [0] * len(names)
    per_cell: list[tuple[np.ndarray, np.ndarray, list[int]]] = []  # (index rows drawn, passes, cuts)
    info: dict[str, ManifestCell] = {}
    drawn: list[dict[str, ManifestCellPhase]] = [{} for _ in names]
    for i, cell in enumerate(used):
        lo, hi = (int(ends[i - 1]) if i else 0), int(ends[i])
        n_tok = index.n_tokens[lo:hi]
        targets = [cell.phases[n].tokens for n in names]
        st = cell_stream(n_tok, sum(targets), seed, cell.cell, len(names))
        cuts = cut_phases(st, targets, carries)
        end = cuts[-1] if cuts else 0
        per_cell.append((lo + st.stream[:end], st.passes[:end], cuts))
        avail = int(n_tok.sum())
        info[cell.cell] = ManifestCell(available_tokens=avail, planned_available_tokens=cell.available_tokens,
                                       docs_in_store=hi - lo, max_doc_tokens=int(n_tok.max()) if hi > lo else 0)
        for p in range(len(names)):
            a, b = (cuts[p - 1] if p else 0), cuts[p]
            tokens = int(st.tokens[a:b].sum())
            drawn[p][cell.cell] = ManifestCellPhase(
                planned_tokens=targets[p], docs=b - a, tokens=tokens,
                passes=sorted({int(x) for x in st.passes[a:b]}), epochs=tokens / avail if avail else 0.0)
        if progress:
            progress("draw", i + 1, len(used))
    out = DrawPlan(list(used), index.files, info, drawn)
    offset = 0
    for p in range(len(names)):
        phase = _phase_draws(per_cell, p, index, shard_chars, offset)
        offset += phase.shards.num_rows
        out.phases.append(phase)
    return out


def _phase_draws(per_cell: list[tuple[np.ndarray, np.ndarray, list[int]]], p: int, index: DocumentIndex,
                 shard_chars: int, offset: int) -> PhaseDraws:
    rows, passes, cells = [], [], []
    for k, (drawn, passes_k, cuts) in enumerate(per_cell):
        a, b = (cuts[p - 1] if p else 0), cuts[p]
        rows.append(drawn[a:b])
        passes.append(passes_k[a:b])
        cells.append(np.full(b - a, k, dtype=np.int32))
    order = interleave([index.n_tokens[r] for r in rows])
    at = np.concatenate(rows)[order] if rows else np.zeros(0, np.int64)
    tokens, chars = index.n_tokens[at], index.n_chars[at]
    part = shard_numbers(chars, shard_chars)
    draws = pa.table({
        "shard": pa.array((part + offset).astype(np.int32)),
        "cell": pa.array(np.concatenate(cells)[order] if cells else np.zeros(0, np.int32)),
        "file": pa.array(index.file[at]),
        "row": pa.array(index.row[at]),
        "pass": pa.array((np.concatenate(passes)[order] if passes else np.zeros(0)).astype(np.int32)),
        "n_tokens": pa.array(tokens),
    }, schema=DRAWS_SCHEMA)
    n = int(part[-1]) + 1 if len(part) else 0
    shards = pa.table({
        "shard": pa.array(np.arange(offset, offset + n, dtype=np.int32)),
        "phase": pa.array(np.full(n, p, dtype=np.int32)),
        "part": pa.array(np.arange(n, dtype=np.int32)),
        "rows": pa.array(np.bincount(part, minlength=n).astype(np.int64)),
        "tokens": pa.array(np.bincount(part, weights=tokens, minlength=n).astype(np.int64)),
        "chars": pa.array(np.bincount(part, weights=chars, minlength=n).astype(np.int64)),
    }, schema=SHARDS_SCHEMA)
    return PhaseDraws(draws, shards)


def task_shards(n_shards: int, tasks: int, rank: int) -> range:
    """The shards task `rank` of `tasks` writes: a contiguous range, the same size within one."""
    return range(rank * n_shards // tasks, (rank + 1) * n_shards // tasks)


def passes_within(chars: list[int], budget: int) -> Iterator[tuple[int, int]]:
    """Consecutive groups [i, j) of shards whose characters add up to at most `budget` (at least one shard each)."""
    i = 0
    while i < len(chars):
        j, held = i + 1, chars[i]
        while j < len(chars) and held + chars[j] <= budget:
            held += chars[j]
            j += 1
        yield i, j
        i = j


def shard_groups(chars: np.ndarray, tasks: int, budget: int) -> np.ndarray:
    """Group of each shard: task by task (`task_shards`), consecutive shards whose characters add up to at most
    `budget` (one shard when a shard is bigger); groups numbered 0, 1, … over every task."""
    out = np.zeros(len(chars), dtype=np.int32)
    n = 0
    for rank in range(tasks):
        mine = task_shards(len(chars), tasks, rank)
        for a, b in passes_within([int(c) for c in chars[mine.start:mine.stop]], budget):
            out[mine.start + a:mine.start + b] = n
            n += 1
    return out
