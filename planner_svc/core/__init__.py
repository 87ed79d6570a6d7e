"""The pure core: plan model, weigh, Phase B selection, token estimate and budget rule, plan
hash, fusion and configuration validation.

Nothing here performs I/O or imports grpc, faiss, sqlite or a clock; ``now`` and seeds are
arguments. Everything is deterministic.
"""

from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import (
    ConfigError,
    InsufficientEvidence,
    InvalidRequest,
    PlannerError,
)
from planner_svc.core.model import (
    NOWHERE,
    PLAN_MODEL,
    CandidateFate,
    EvidencePlan,
    Location,
    PlannedSpan,
    PlanStats,
    SpanClass,
    SpanRef,
)

__all__ = [
    "NOWHERE",
    "PLAN_MODEL",
    "CandidateFate",
    "ConfigError",
    "EvidencePlan",
    "InsufficientEvidence",
    "InvalidRequest",
    "Location",
    "PlanStats",
    "PlannedSpan",
    "PlannerError",
    "SelectionSettings",
    "SpanClass",
    "SpanRef",
]
