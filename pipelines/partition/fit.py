"""Stage `fit`: the embedder, clusters, labels and quality calibration fitted on the sample, frozen in `_model/`."""

from __future__ import annotations

import contextlib

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.context import BuildContext
from mixture.stages.registry import FIT_ASSIGNMENTS_DIR, SAMPLE_DIR
from mixture.store import layout


class FitModel(PipelineStep):
    """Fits embedder, clusters, labels and calibration on the sample; writes the frozen model to `_model/`."""

    type = "🧮 - FIT"
    name = "fit model"

    def __init__(self, sample_folder: str, model_dir: str, params: dict, assignments_folder: str | None = None):
        super().__init__()
        self.sample_folder, self.model_dir, self.params = sample_folder, model_dir, params
        self.assignments_folder = assignments_folder

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from mixture.fit.model_store import fit_and_save

        with contextlib.suppress(StopIteration):
            fit_and_save(self.sample_folder, self.model_dir, self.params, self.assignments_folder)
        return
        yield


def steps(ctx: BuildContext) -> list:
    c, q = ctx.spec.partition.clusters, ctx.spec.partition.quality
    params = {"k": c.k, "fine_k": c.fine_k, "min_share": c.min_share, "max_share": c.max_token_share,
              "embedding_dim": c.embedding_dim, "seed": ctx.spec.seed, "edges": list(q.edges), "embedder": c.embedder,
              "per_language": q.per_language, "group_min_docs": q.group_min_docs,
              "sentence_model": ctx.refs.sentence_model}
    return [FitModel(ctx.at(SAMPLE_DIR), ctx.at(layout.MODEL_DIR), params, ctx.at(FIT_ASSIGNMENTS_DIR))]
