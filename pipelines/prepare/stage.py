"""Stage `prepare`: its steps for a build's context, from the sources to the prepared files and the dedup keys."""

from __future__ import annotations

from mixture.pipelines import writers
from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.keys import DedupKeys
from mixture.pipelines.prepare import decontaminate as decontaminate_step
from mixture.pipelines.prepare.annotate import Annotate
from mixture.pipelines.prepare.fingerprint import Fingerprint
from mixture.pipelines.prepare.gates import Gates
from mixture.pipelines.prepare.normalize import Normalize, Quarantine
from mixture.pipelines.sources.files import SourceReader
from mixture.stages.registry import DEDUP, PREPARED, TALLY


def steps(ctx: BuildContext) -> list:
    """read → normalise → quarantine → gates → fingerprint → decontaminate → annotate. No stage after `prepare`
    reads the text: the dedup stages read only the ids, hashes and signatures it wrote."""
    p = ctx.spec.processing
    flt, fz, dc = p.filters, p.dedup.fuzzy, p.decontamination
    decontaminate = dc.enabled and bool(dc.benchmarks)
    prepare = [
        SourceReader(ctx.sources(), ctx.at(TALLY.folder)),
        Normalize(),
        Quarantine(writers.quarantine_writer(ctx.store)),
        Gates(flt.length.min_chars, flt.length.max_chars, flt.length.min_words, flt.heuristics.max_symbol_ratio,
              flt.heuristics.max_duplicate_line_ratio,
              exclusion_writer=writers.drop_writer(ctx.store, "filtered")),
        Fingerprint(
            {"ngram": fz.ngram, "permutations": fz.permutations, "seed": fz.seed} if fz.enabled else None,
            decontaminate_step.settings(dc, ctx.benchmarks()) if decontaminate else None),
    ]
    if decontaminate:
        prepare.append(decontaminate_step.Decontaminate(
            exclusion_writer=writers.drop_writer(ctx.store, "contaminated")))
    q, lang = ctx.spec.partition.quality, p.language
    prepare += [Annotate(q.scorer, ctx.refs.quality_model, q.fasttext_label,
                         language_model=ctx.refs.language_id, language_min_score=lang.min_score),
                writers.work_writer(ctx.store),
                DedupKeys(ctx.at(PREPARED.folder), ctx.at(DEDUP), ctx.memory_limit("prepare"), ctx.partitions)]
    return prepare
