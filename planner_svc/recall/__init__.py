"""Phase A: the three recall legs, fusion, and exploding nodes to the candidate pool."""

from planner_svc.core.errors import Cancelled
from planner_svc.recall.planner import EvidencePlanner, LegTrace, PlanResult
from planner_svc.recall.request import PlanQuery, SemanticLeg, StructuredLeg

__all__ = [
    "Cancelled",
    "EvidencePlanner",
    "LegTrace",
    "PlanQuery",
    "PlanResult",
    "SemanticLeg",
    "StructuredLeg",
]
