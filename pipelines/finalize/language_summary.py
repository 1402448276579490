"""store.json's `language` block: kept documents and tokens per language (overall, per cluster, per quality bucket)
from the assign tasks' counts, and the (content type, language) calibration groups of the frozen fit."""

from __future__ import annotations

from collections import Counter

from mixture.fit.model_store import FrozenModel
from mixture.spec.models import Spec
from mixture.store.formats import (
    CalibrationGroup,
    ClusterLanguageCount,
    LanguageCount,
    LanguageInfo,
    QualityLanguageCount,
)


def _rows(counts: Counter, model: type[LanguageCount], key: str | None = None) -> list:
    """`model` rows of {(key value or None, language, "docs" | "tokens"): n}, by key value then most tokens."""
    pairs = sorted({k[:2] for k in counts}, key=lambda kl: (-1 if kl[0] is None else kl[0], -counts[(*kl, "tokens")],
                                                             kl[1]))
    return [model(language=lang, docs=counts[(value, lang, "docs")], tokens=counts[(value, lang, "tokens")],
                  **({key: value} if key else {})) for value, lang in pairs]


def language_info(spec: Spec, model: FrozenModel, cell_languages: Counter) -> LanguageInfo:
    """`cell_languages`: {(cluster, quality, language, "docs" | "tokens"): count} of the kept documents."""
    overall: Counter = Counter()
    by_cluster: Counter = Counter()
    by_quality: Counter = Counter()
    for (cluster, quality, language, what), n in cell_languages.items():
        overall[(None, language, what)] += n
        by_cluster[(cluster, language, what)] += n
        by_quality[(quality, language, what)] += n
    q, lang = spec.partition.quality, spec.processing.language
    groups = [CalibrationGroup(group=name, content_type=g.content_type, language=g.language, sample_docs=g.n,
                               fallback=g.fallback, map=g.map, shape_groups=g.shape_groups,
                               raw_cutoffs=g.raw_cutoffs)
              for name, g in sorted(model.group_calibration.items())]
    return LanguageInfo(model=lang.model, min_score=lang.min_score, languages=_rows(overall, LanguageCount),
                        by_cluster=_rows(by_cluster, ClusterLanguageCount, "cluster"),
                        by_quality=_rows(by_quality, QualityLanguageCount, "quality"),
                        per_language=q.per_language, group_min_docs=q.group_min_docs, calibration_groups=groups)
