"""Embedded persistence (docs/architecture.md, "Store"): sources and their versions (canonical
text), the span ledger, bitemporal nodes with provenance spans, weighted bitemporal edges, a
full-text index and node vectors, all in one SQLite file.

Public surface: :class:`Store` and the records it reads and writes.
"""

from planner_svc.store.feed import FeedPosition, SourceVersionRow
from planner_svc.store.records import Edge, EdgeWrite, NodeVersion, NodeWrite, NodeWriteResult
from planner_svc.store.store import STORE_FILE, Store
from planner_svc.store.text import canonicalize

__all__ = [
    "STORE_FILE",
    "Edge",
    "EdgeWrite",
    "FeedPosition",
    "NodeVersion",
    "NodeWrite",
    "NodeWriteResult",
    "SourceVersionRow",
    "Store",
    "canonicalize",
]
