"""Data loss per source (records quarantined as bad input or lost to broken files) and its verdict against
`processing.max_loss`: what makes `mixture build` exit 3, "built, with data loss"."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mixture.store.formats import BrokenFile, LossInfo, SourceLoss, StoreArtifact


def source_loss(name: str, read: int, kept: int, quarantined: int, broken: Sequence[BrokenFile],
                max_loss: float) -> SourceLoss:
    """One source's loss and verdict: `kept nothing` first, then `unknown loss` (a broken file whose lost records
    nothing tells), then `over max_loss` when (quarantined + lost) / (read + lost) is above `max_loss`."""
    lost = sum(b.lost for b in broken if b.lost is not None)
    unknown = sum(1 for b in broken if b.lost is None)
    held = read + lost
    share = min(1.0, (quarantined + lost) / held) if held else 0.0
    if kept == 0:
        verdict = "kept nothing"
    elif unknown:
        verdict = "unknown loss"
    elif share > max_loss:
        verdict = "over max_loss"
    else:
        verdict = "ok"
    return SourceLoss(name=name, records_read=read, kept=kept, quarantined=quarantined, lost=lost,
                      lost_unknown_files=unknown, share=float(share), verdict=verdict, broken_files=list(broken))


def loss_info(sources: Iterable, broken: dict[str, list[BrokenFile]], max_loss: float) -> LossInfo:
    """The loss block of store.json from its `sources[]` entries and each source's broken files."""
    rows = [source_loss(s.name, s.docs_in, s.docs_kept, s.bad_input, broken.get(s.name, []), max_loss)
            for s in sources]
    return LossInfo(max_loss=float(max_loss), sources=rows, over=[r.name for r in rows if r.verdict != "ok"])


def store_loss(artifact: StoreArtifact, max_loss: float | None = None) -> LossInfo:
    """A store's loss with the verdicts against `max_loss` (default: the one it was built with)."""
    recorded = artifact.loss
    broken = {s.name: s.broken_files for s in recorded.sources}
    return loss_info(artifact.sources, broken, recorded.max_loss if max_loss is None else max_loss)
