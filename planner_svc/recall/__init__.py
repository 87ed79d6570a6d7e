"""Phase A: documents, hops and passages over the recall catalog, and the evidence planner.

Importing the package is cheap (the settings tree imports :mod:`planner_svc.recall.settings`
without loading the planner, the catalog or FAISS): names are imported on first use.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
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

_HOMES = {
    "Cancelled": "planner_svc.core.errors",
    "EvidencePlanner": "planner_svc.recall.planner",
    "EvidenceResult": "planner_svc.recall.planner",
    "LegTrace": "planner_svc.recall.planner",
    "EvidenceQuery": "planner_svc.recall.request",
    "SemanticLeg": "planner_svc.recall.request",
    "StructuredLeg": "planner_svc.recall.request",
}


def __getattr__(name: str) -> typing.Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'planner_svc.recall' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
