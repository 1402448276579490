"""The mixture planner: phases, exposure caps, block apportionment, ladder, exports and materialized shards."""

from mixture.planner.counts import CellCount, Counts, PlanInputError, load_counts
from mixture.planner.formats import Manifest, PhaseManifest, Plan, read_plan
from mixture.planner.plan import PhaseInput, PlanInputs, compute_plan
from mixture.planner.repair import RepairResult, repair_weights

__all__ = [
    "CellCount",
    "Counts",
    "Manifest",
    "PhaseManifest",
    "PhaseInput",
    "Plan",
    "PlanInputError",
    "PlanInputs",
    "RepairResult",
    "compute_plan",
    "load_counts",
    "read_plan",
    "repair_weights",
]
