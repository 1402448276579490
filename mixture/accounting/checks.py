"""`audit(reader)`: check every invariant of docs/store.md, cheapest evidence first, naming each violation."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import pyarrow.parquet as pq

from mixture.accounting.footers import FileFacts, parquet_rows, scan_files
from mixture.accounting.footers import checksums as file_checksums
from mixture.accounting.reader import StoreReader
from mixture.fit.balance import cluster_balance
from mixture.store import drops, layout
from mixture.store.formats import FormatError, LedgerShard, StoreArtifact, StoreVersionError
from mixture.store.loss import store_loss

Status = Literal["pass", "fail", "skip"]
CHECKSUM_ALL_MAX_BYTES = 4 << 30
CHECKSUM_SAMPLE = 256


@dataclass
class Failure:
    """One violation: where (cell, shard or file), what differs, and the two values that disagree."""

    where: str
    what: str
    expected: Any = None
    found: Any = None
    expected_from: str = "expected"
    found_from: str = "found"

    def message(self) -> str:
        if self.expected is None and self.found is None:
            return f"{self.where}: {self.what}"
        return (f"{self.where}: {self.what}: {self.expected_from} {_fmt(self.expected)} "
                f"≠ {self.found_from} {_fmt(self.found)}")


def _fmt(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


@dataclass
class Check:
    name: str
    description: str
    status: Status = "pass"
    checked: int = 0
    failures: list[Failure] = field(default_factory=list)
    note: str = ""

    def fail(self, *args: Any, **kwargs: Any) -> None:
        self.failures.append(Failure(*args, **kwargs))
        self.status = "fail"


@dataclass
class AuditResult:
    uri: str
    status: Literal["ok", "failed", "building"]
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def building(self) -> bool:
        return self.status == "building"

    @property
    def failures(self) -> list[Failure]:
        return [f for c in self.checks for f in c.failures]

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def messages(self) -> list[str]:
        return [f"[{c.name}] {f.message()}" for c in self.checks for f in c.failures]

    def to_dict(self) -> dict:
        return {"uri": self.uri, "status": self.status, "checks": [asdict(c) for c in self.checks]}


class _Audit:
    def __init__(self, reader: StoreReader, progress: Callable[[str], None] | None):
        self.r = reader
        self.checks: list[Check] = []
        self.progress = progress or (lambda _msg: None)

    def new(self, name: str, description: str) -> Check:
        self.progress(description)
        check = Check(name, description)
        self.checks.append(check)
        return check

    # ------------------------------------------------------------------------------------------------------------
    def artifact(self) -> StoreArtifact | None:
        c = self.new("artifact", "store.json present, readable and matching its format (mixture schema --store)")
        c.checked = 1
        try:
            return self.r.store_info
        except StoreVersionError as exc:
            c.fail(layout.STORE_JSON, exc.refusal)
        except FormatError as exc:
            for where, what in exc.problems:
                c.fail(layout.STORE_JSON, f"{where}: {what}" if where else what)
            c.fail(layout.STORE_JSON, "does not match its format (see `mixture schema --store` and docs/store.md); "
                                      "rebuild or restore the file")
        except Exception as exc:  # noqa: BLE001
            c.fail(layout.STORE_JSON, f"unreadable ({type(exc).__name__}: {exc}); rebuild or restore the file")
        return None

    def ledgers(self, art: StoreArtifact) -> None:
        c = self.new("ledgers", "every cell has a finished ledger whose totals are the sums of its shards")
        k = art.partition.k
        ledgers = self.r.ledger_models()
        for cell_dir, err in self.r.ledger_errors().items():
            c.fail(f"{cell_dir}/{layout.LEDGER}", f"unreadable ledger ({err})")
        listed_dirs = {cell.path for cell in art.cells}
        for cell_dir, files in self.r.cell_files().items():
            if cell_dir not in ledgers and cell_dir not in self.r.ledger_errors():
                parquet = [n for n in files if n.endswith(".parquet")]
                c.fail(cell_dir, f"no {layout.LEDGER} but {len(parquet)} Parquet file(s): an unfinished cell")
        for cell_dir in sorted(listed_dirs - set(self.r.cell_files())):
            c.fail(cell_dir, "cell listed in store.json has no folder and no ledger")
        for cell_dir, ledger in ledgers.items():
            c.checked += 1
            where = f"{cell_dir}/{layout.LEDGER}"
            cl, q = layout.parse_cell_path(cell_dir)
            if ledger.cell != layout.cell_name(cl, q, k):
                c.fail(where, "cell", layout.cell_name(cl, q, k), ledger.cell, "path", "ledger")
            if (ledger.cluster, ledger.quality) != (cl, q):
                c.fail(where, "cluster/quality", (cl, q), (ledger.cluster, ledger.quality), "path", "ledger")
            if not ledger.is_finished:
                c.fail(where, "is_finished is not true: the cell's build did not finish")
            if cell_dir not in listed_dirs:
                c.fail(where, "ledger of a cell that store.json does not list")
            for name, n in Counter(s.path for s in ledger.shards).items():
                if n > 1:
                    c.fail(f"{cell_dir}/{name}", f"listed {n} times in the ledger")
            for key, total in (("rows", "total_num_rows"), ("tokens", "total_tokens")):
                s = sum(getattr(x, key) for x in ledger.shards)
                if getattr(ledger, total) != s:
                    c.fail(where, total, s, getattr(ledger, total), f"Σ shards.{key}", "ledger total")

    def cells(self, art: StoreArtifact) -> None:
        c = self.new("cells", "store.json cells (docs, tokens, shards) equal the ledger totals")
        k = art.partition.k
        ledgers = self.r.ledger_models()
        for cell in art.cells:
            c.checked += 1
            name, path = layout.cell_name(cell.cluster, cell.quality, k), layout.cell_path(cell.cluster, cell.quality, k)
            if cell.cell != name:
                c.fail(f"store.json cell {cell.cell}", "name", name, cell.cell, "cluster/quality", "store.json")
            if cell.path != path:
                c.fail(name, "path", path, cell.path, "cluster/quality", "store.json")
            ledger = ledgers.get(path)
            if ledger is None:
                continue  # reported by the ledgers check
            for key, value in (("docs", sum(s.rows for s in ledger.shards)),
                               ("tokens", sum(s.tokens for s in ledger.shards)),
                               ("shards", len(ledger.shards))):
                if getattr(cell, key) != value:
                    c.fail(name, key, value, getattr(cell, key), "ledger", "store.json")

    def counters(self, art: StoreArtifact) -> None:
        c = self.new("counters", "counters.tokens_out/records_out = Σ ledgers; records_in = out + drops; "
                                 "clusters and sources add up")
        cnt = art.counters
        ledgers = self.r.ledger_models().values()
        ledger_tokens = sum(s.tokens for lg in ledgers for s in lg.shards)
        ledger_rows = sum(s.rows for lg in ledgers for s in lg.shards)
        cell_tokens = sum(x.tokens for x in art.cells)
        cell_docs = sum(x.docs for x in art.cells)
        pairs = [
            ("tokens_out", "Σ cells.tokens", cell_tokens, "counters.tokens_out", cnt.tokens_out),
            ("tokens_out", "Σ ledger totals", ledger_tokens, "counters.tokens_out", cnt.tokens_out),
            ("records_out", "Σ cells.docs", cell_docs, "counters.records_out", cnt.records_out),
            ("records_out", "Σ ledger rows", ledger_rows, "counters.records_out", cnt.records_out),
        ]
        pairs.append(("records_in", "records_out + bad_input + every drop", cnt.records_out + sum(cnt.dropped().values()),
                      "counters.records_in", cnt.records_in))
        by_cluster: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for x in art.cells:
            by_cluster[x.cluster][0] += x.docs
            by_cluster[x.cluster][1] += x.tokens
        for cluster in art.clusters:
            docs, tokens = by_cluster.pop(cluster.id, [0, 0])
            pairs.append((f"cluster {cluster.id} docs", "Σ its cells", docs, "clusters[].docs", cluster.docs))
            pairs.append((f"cluster {cluster.id} tokens", "Σ its cells", tokens, "clusters[].tokens", cluster.tokens))
        for cl in by_cluster:
            c.fail(f"cluster {cl}", "has cells but no entry in store.json clusters")
        sources = art.sources
        pairs.append(("records_out", "Σ sources.docs_kept", sum(s.docs_kept for s in sources),
                      "counters.records_out", cnt.records_out))
        pairs.append(("tokens_out", "Σ sources.tokens_kept", sum(s.tokens_kept for s in sources),
                      "counters.tokens_out", cnt.tokens_out))
        for key, total in cnt.dropped().items():
            pairs.append((key, f"Σ sources.{key}", sum(getattr(s, key) for s in sources), f"counters.{key}", total))
        for where, left_from, left, right_from, right in pairs:
            c.checked += 1
            if left != right:
                c.fail(where, "count", left, right, left_from, right_from)

    def reports(self, art: StoreArtifact) -> None:
        c = self.new("reports", "the loss, near-duplicate and cluster-balance blocks agree with the counters, "
                                "sources and clusters they summarise")

        def compare(where: str, what: str, recorded: Any, recomputed: Any, source: str) -> None:
            c.checked += 1
            if recorded != recomputed:
                c.fail(where, what, recomputed, recorded, source, "store.json")

        again = store_loss(art)
        compare("loss", "sources", [s.name for s in art.loss.sources], [s.name for s in again.sources],
                "sources[] in spec order")
        for rec, new in zip(art.loss.sources, again.sources, strict=False):
            for field_ in ("records_read", "kept", "quarantined", "lost", "lost_unknown_files", "verdict"):
                compare(f"loss {rec.name}", field_, getattr(rec, field_), getattr(new, field_),
                        "sources[] and its broken files")
            compare(f"loss {rec.name}", "share", round(rec.share, 9), round(new.share, 9),
                    "(quarantined + lost) / (records_read + lost)")
        compare("loss", "over", art.loss.over, again.over, "sources whose verdict is not ok")
        nd = art.near_duplicates
        if nd is not None:
            compare("near_duplicates", "drops", nd.drops, art.counters.fuzzy_duplicate_dropped,
                    "counters.fuzzy_duplicate_dropped")
            compare("near_duplicates", "pairs_considered", nd.pairs_considered,
                    nd.pairs_ruled_out + nd.pairs_compared, "pairs_ruled_out + pairs_compared")
            compare("near_duplicates", "pairs_rejected", nd.pairs_rejected, nd.pairs_considered - nd.pairs_verified,
                    "pairs_considered − pairs_verified")
        cb = art.cluster_balance
        if art.clusters:
            again_cb = cluster_balance(art.clusters, cb.min_share, cb.max_share)
            for field_ in ("largest_cluster", "largest_token_share", "largest_doc_share", "smallest_cluster",
                           "smallest_token_share", "warnings"):
                compare("cluster_balance", field_, getattr(cb, field_), getattr(again_cb, field_),
                        "clusters[] tokens and docs")

    def provenance(self, art: StoreArtifact) -> None:
        c = self.new("provenance", "spec.hash and the stage keys follow from the recorded spec and inputs; the "
                                   "records read per source equal sources[].docs_in")
        prov = art.provenance
        from mixture.stages import keys as stage_keys

        c.checked += 1
        if stage_keys.spec_hash(prov.spec) != art.spec.hash:
            c.fail("spec.hash", "hash", stage_keys.spec_hash(prov.spec), art.spec.hash, "sha256 of provenance.spec",
                   "spec.hash")
        if prov.keys_version != stage_keys.KEYS_VERSION:
            c.note = f"keys of version {prov.keys_version} (this mixture computes {stage_keys.KEYS_VERSION}): not recomputed"
        else:
            c.checked += 1
            want = [(k.name, k.key) for k in stage_keys.recomputed_keys(prov)]
            got = [(k.name, k.key) for k in prov.stages]
            if [n for n, _ in want] != [n for n, _ in got]:
                c.fail("provenance.stages", "stages", [n for n, _ in want], [n for n, _ in got], "planned by the spec",
                       "store.json")
            else:
                for (name, key), (_, recorded) in zip(want, got, strict=True):
                    if key != recorded:
                        c.fail(f"stage {name}", "key", key[:16], recorded[:16], "recomputed", "store.json")
        spec = stage_keys.flatten(prov.spec)
        for where, recorded, value in (("seed", spec.get("seed"), art.seed),
                                       ("partition.clusters.k", spec.get("partition.clusters.k"), art.partition.k),
                                       ("partition.quality.levels", spec.get("partition.quality.levels"),
                                        art.partition.quality_levels),
                                       ("partition.quality.edges", spec.get("partition.quality.edges"),
                                        art.partition.bucket_edges)):
            c.checked += 1
            if recorded != value:
                c.fail(where, "value", recorded, value, "provenance.spec", "store.json")
        listed = [s.name for s in prov.inputs.sources]
        if listed != [s.name for s in art.sources]:
            c.fail("provenance.inputs.sources", "sources", listed, [s.name for s in art.sources], "manifest",
                   "store.json sources")
        docs_in = {s.name: s.docs_in for s in art.sources}
        for s in prov.inputs.sources:
            c.checked += 1
            if s.records != docs_in.get(s.name):
                c.fail(f"source {s.name}", "records read", s.records, docs_in.get(s.name), "manifest",
                       "sources[].docs_in")
        c.checked += 1
        total = sum(s.records or 0 for s in prov.inputs.sources)
        if total != art.counters.records_in:
            c.fail("store", "records_in", total, art.counters.records_in, "Σ manifest records", "counters.records_in")

    def inputs(self, art: StoreArtifact) -> None:
        c = self.new("inputs", "the sources and the files the spec names, listed again, are the ones the store was "
                               "built from (no file added, removed or changed)")
        from mixture.spec.inputs import relist
        from mixture.stages import keys as stage_keys

        now, problems = relist(art.provenance, art.tokenizer_ref)
        for problem in problems:
            c.fail("inputs", problem)
        recorded = art.provenance.inputs
        c.checked = sum(len(s.files) for s in recorded.sources) + sum(len(f) for f in recorded.files.values())
        for drift in stage_keys.manifest_changes(recorded.sources, now.sources, recorded.files, now.files):
            for line in drift.lines(limit=20):
                c.fail(drift.what, line)

    def side_files(self, art: StoreArtifact) -> None:
        c = self.new("side files", "bad_input and drop counters equal the rows in _quarantine/ and _dropped/")
        for reason in drops.REASONS:
            c.checked += 1
            files = [self.r.rel(p) for p in self.r.fs.glob(self.r.path(f"{reason.folder}/*.parquet"))]
            counts = parquet_rows(self.r, sorted(files))
            for rel, n in counts.items():
                if isinstance(n, str):
                    c.fail(rel, n)
            rows = sum(n for n in counts.values() if isinstance(n, int))
            counted = getattr(art.counters, reason.counter)
            if rows != counted:
                c.fail(f"{reason.folder}/", reason.counter, rows, counted, "Parquet rows", f"counters.{reason.counter}")

    def samples(self, art: StoreArtifact) -> None:
        c = self.new("samples", "_samples/ holds, per cell, min(per_cell, docs) uniform documents and "
                                "min(exemplars_per_cell, docs) exemplars (store.json samples, cells)")
        for kind, per_cell in (("uniform", art.samples.per_cell), ("exemplars", art.samples.exemplars_per_cell)):
            rel = getattr(art.samples, kind)
            want = {(e.cluster, e.quality): min(per_cell, e.docs) for e in art.cells if min(per_cell, e.docs)}
            c.checked += 1
            if not self.r.exists(rel):
                if want:
                    c.fail(rel, f"missing: store.json records {sum(want.values()):,} sampled documents in it; "
                                "rebuild the store (`mixture build SPEC --redo-changed` redoes finalize)")
                continue
            try:
                with self.r.fs.open(self.r.path(rel), "rb") as f:
                    table = pq.read_table(f, columns=["cluster", "quality"])
            except Exception as exc:  # noqa: BLE001 - a broken sample file is a finding
                c.fail(rel, f"unreadable Parquet ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})")
                continue
            got = Counter(zip(table.column("cluster").to_pylist(), table.column("quality").to_pylist(), strict=True))
            if sum(got.values()) != sum(want.values()):
                c.fail(rel, "rows", sum(want.values()), sum(got.values()), "min(per_cell, docs) over the cells",
                       "Parquet rows")
            for cell in sorted(set(want) | set(got)):
                if got.get(cell, 0) != want.get(cell, 0):
                    c.fail(f"{rel} {layout.cell_name(cell[0], cell[1], art.partition.k)}", "rows",
                           want.get(cell, 0), got.get(cell, 0), "expected", "Parquet rows")
                    break

    def files(self) -> list[tuple[str, LedgerShard]]:
        """Ledger entries vs the listing; returns the (file, entry) pairs present on storage."""
        c = self.new("files", "every ledger entry has its file with the recorded size; no unlisted file")
        present = []
        listing = self.r.cell_files()
        for cell_dir, ledger in self.r.ledger_models().items():
            files = listing.get(cell_dir, {})
            listed = {s.path for s in ledger.shards}
            for s in ledger.shards:
                c.checked += 1
                rel = f"{cell_dir}/{s.path}"
                if s.path not in files:
                    c.fail(rel, "listed in the ledger but missing on storage; rebuild the cell")
                    continue
                present.append((rel, s))
                if files[s.path] != s.bytes:
                    c.fail(rel, "bytes", s.bytes, files[s.path], "ledger", "file")
            for name, size in files.items():
                if name != layout.LEDGER and name not in listed:
                    c.fail(f"{cell_dir}/{name}", f"unlisted file ({size:,} bytes) not in {layout.LEDGER}: partial "
                                                 "output of a failed task or a stray copy; remove it or rebuild")
        for cell_dir, files in listing.items():
            if cell_dir not in self.r.ledger_models() and cell_dir not in self.r.ledger_errors():
                for name, size in files.items():
                    c.fail(f"{cell_dir}/{name}", f"unlisted file ({size:,} bytes): its cell has no ledger")
        return present

    def parquet(self, present: list[tuple[str, LedgerShard]], art: StoreArtifact) -> dict[str, FileFacts]:
        self.progress("scan: row count, Σ n_tokens and cluster/quality range of every shard")
        facts = scan_files(self.r, [rel for rel, _ in present])
        rows = self.new("rows", "Parquet row counts equal the ledger rows")
        tokens = self.new("n_tokens", "Σ n_tokens per file equals the ledger tokens (n_tokens column only)")
        part = self.new("partition", "cluster/quality columns equal the folder's partition")
        total = 0
        for rel, s in present:
            f = facts[rel]
            rows.checked += 1
            tokens.checked += 1
            part.checked += 1
            if f.error:
                rows.fail(rel, f.error)
                tokens.fail(rel, f.error)
                continue
            total += f.tokens or 0
            if f.rows != s.rows:
                rows.fail(rel, "rows", s.rows, f.rows, "ledger", "Parquet")
            if f.tokens != s.tokens:
                tokens.fail(rel, "tokens", s.tokens, f.tokens, "ledger", "Σ n_tokens")
            cl, q = layout.parse_cell_path(rel)
            if f.rows:
                if (f.cluster_min, f.cluster_max) != (cl, cl):
                    part.fail(rel, "cluster column", cl, f"{f.cluster_min}..{f.cluster_max}", "path", "Parquet")
                if (f.quality_min, f.quality_max) != (q, q):
                    part.fail(rel, "quality column", q, f"{f.quality_min}..{f.quality_max}", "path", "Parquet")
        tokens.checked += 1
        if total != art.counters.tokens_out and not any(f.error for f in facts.values()):
            tokens.fail("store", "tokens_out", art.counters.tokens_out, total, "counters", "Σ n_tokens")
        return facts

    def sources(self, present: list[tuple[str, LedgerShard]], facts: dict[str, FileFacts], art: StoreArtifact) -> None:
        c = self.new("sources", "per-source docs and tokens in the Parquet files equal sources[].docs/tokens_kept")
        rels = [rel for rel, _ in present if not facts[rel].error]
        if not rels:
            c.status, c.note = "skip", "no readable shard"
            return
        con = self.r.connect_bare()
        found = {s: (int(n), int(t or 0)) for s, n, t in con.execute(
            f"SELECT source, count(*), sum(n_tokens) FROM read_parquet({self.r.parquet_list_sql(rels)}, "
            "hive_partitioning=false) GROUP BY source").fetchall()}
        for s in art.sources:
            c.checked += 1
            docs, toks = found.pop(s.name, (0, 0))
            if docs != s.docs_kept:
                c.fail(f"source {s.name}", "docs", s.docs_kept, docs, "store.json", "Parquet")
            if toks != s.tokens_kept:
                c.fail(f"source {s.name}", "tokens", s.tokens_kept, toks, "store.json", "Parquet")
        for name, (docs, _) in found.items():
            c.fail(f"source {name}", f"{docs:,} documents from a source that store.json does not list")

    def checksums(self, present: list[tuple[str, LedgerShard]], mode: str, seed: int) -> None:
        c = self.new("checksums", "xxh64 of each file's bytes equals the ledger")
        if mode == "none" or not present:
            c.status, c.note = "skip", "not requested (--checksums all)" if present else "no file"
            return
        chosen = present
        total_bytes = sum(s.bytes for _, s in present)
        if mode == "auto" and total_bytes > CHECKSUM_ALL_MAX_BYTES and len(present) > CHECKSUM_SAMPLE:
            idx = np.sort(np.random.default_rng(seed).choice(len(present), CHECKSUM_SAMPLE, replace=False))
            chosen = [present[i] for i in idx]
            c.note = (f"seeded sample of {CHECKSUM_SAMPLE} of {len(present):,} shards ({total_bytes / 1e9:.1f} GB); "
                      "--checksums all reads every byte")
        sums = file_checksums(self.r, [rel for rel, _ in chosen])
        for rel, s in chosen:
            c.checked += 1
            got = sums[rel]
            if got.startswith("error:"):
                c.fail(rel, got)
            elif got != s.xxh64:
                c.fail(rel, "xxh64", s.xxh64, got, "ledger", "file")

    def deep(self, present: list[tuple[str, LedgerShard]], facts: dict[str, FileFacts], art: StoreArtifact, sample: int,
             seed: int) -> None:
        c = self.new("tokens (deep)", "documents re-tokenized by the reference implementation (tiktoken for its encodings) "
                                      "have the n_tokens the store recorded")
        from mixture.tokenizer import count_tokens, file_sha256, reference_tokenizer

        ref = art.tokenizer_ref  # resolved when the store was built: a local file by its absolute path
        try:
            tok = reference_tokenizer(ref)
        except Exception as exc:  # noqa: BLE001
            c.fail(layout.STORE_JSON, f"tokenizer {ref.spec_form!r} cannot be loaded ({exc})")
            return
        if ref.sha256 and (now := file_sha256(ref.name)) != ref.sha256:
            c.fail(ref.name, "sha256: the tokenizer file changed since the build", ref.sha256, now, "store.json", "file")
            return
        readable = [(rel, facts[rel].rows or 0) for rel, _ in present if not facts[rel].error]
        sizes = np.array([n for _, n in readable], dtype=np.int64)
        total = int(sizes.sum())
        if total == 0:
            c.status, c.note = "skip", "no document"
            return
        if sample <= 0 or sample >= total:
            picks = np.arange(total)
            c.note = f"all {total:,} documents"
        else:
            picks = np.sort(np.random.default_rng(seed).choice(total, sample, replace=False))
            c.note = f"seeded sample (seed {seed}) of {sample:,} of {total:,} documents"
        starts = np.concatenate([[0], np.cumsum(sizes)])
        file_idx = np.searchsorted(starts, picks, side="right") - 1
        for fi in np.unique(file_idx):
            rel = readable[fi][0]
            local = picks[file_idx == fi] - starts[fi]
            with self.r.fs.open(self.r.path(rel), "rb") as f:
                table = pq.read_table(f, columns=["id", "text", "n_tokens"]).take(local)
            counts = count_tokens(tok, table["text"].to_pylist())
            for doc_id, stored, counted in zip(table["id"].to_pylist(), table["n_tokens"].to_pylist(), counts,
                                               strict=True):
                c.checked += 1
                if stored != counted:
                    c.fail(f"{rel} id={doc_id}", "n_tokens", stored, counted, "stored", f"{tok.implementation} (reference)")


def audit(reader: StoreReader, *, deep: bool = False, sample: int = 1000, seed: int = 0,
          checksum_mode: Literal["auto", "all", "none"] = "auto", sources: bool | None = None,
          inputs: bool = False, progress: Callable[[str], None] | None = None) -> AuditResult:
    """Check every invariant of docs/store.md; see the module docstring of mixture.accounting for the list.

    `deep` also re-tokenizes `sample` documents (0 = all) drawn with `seed`, reads every checksum and recounts
    docs/tokens per source (a scan of the `source` column; `sources=True` asks for it without `deep`).
    """
    a = _Audit(reader, progress)
    if not reader.is_complete:
        c = a.new("artifact", "store.json present")
        c.fail(reader.uri, f"no {layout.STORE_JSON}: the store is building (or its build stopped before "
                           "publishing); wait for `mixture build` to finish or rerun it")
        return AuditResult(reader.uri, "building", a.checks)
    art = a.artifact()
    if art is None:
        return AuditResult(reader.uri, "failed", a.checks)
    a.ledgers(art)
    a.cells(art)
    a.counters(art)
    a.reports(art)
    a.provenance(art)
    if inputs:
        a.inputs(art)
    a.side_files(art)
    a.samples(art)
    present = a.files()
    facts = a.parquet(present, art)
    if deep if sources is None else sources:
        a.sources(present, facts, art)
    a.checksums(present, "all" if deep else checksum_mode, seed)
    if deep:
        a.deep(present, facts, art, sample, seed)
    status = "ok" if all(c.status != "fail" for c in a.checks) else "failed"
    return AuditResult(reader.uri, status, a.checks)
