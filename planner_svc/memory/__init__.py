"""API-written memory: single node and edge writes (the Memory service's ``PutNode`` and
``PutEdge``), next to the store they write.

Public surface: :class:`MemoryService`.
"""

from planner_svc.memory.service import MemoryService

__all__ = ["MemoryService"]
