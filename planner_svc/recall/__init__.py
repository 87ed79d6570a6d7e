"""Phase A: the three recall legs, fusion, and exploding nodes to the candidate pool."""

from planner_svc.core.errors import Cancelled
from planner_svc.recall.planner import EvidencePlanner, EvidenceResult, LegTrace
from planner_svc.recall.request import EvidenceQuery, SemanticLeg, StructuredLeg

__all__ = [
    "Cancelled",
    "EvidencePlanner",
    "EvidenceQuery",
    "EvidenceResult",
    "LegTrace",
    "SemanticLeg",
    "StructuredLeg",
]
