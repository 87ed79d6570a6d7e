"""The one converter between protobuf messages and the service's own types.

Every servicer, the ``select`` command and the clients convert here and nowhere else, so field
paths in errors (``pool[3].weight``, ``node.provenance[0].end``, ``start.caps.max_depth``) and
the proto3 JSON names stay consistent. One module per contract file:

- :mod:`~planner_svc.server.convert.plan`: ``plan.proto`` (requests, spans, plans, stats,
  explanations) <-> core types;
- :mod:`~planner_svc.server.convert.memory`: ``memory.proto`` <-> the ingest and memory
  services' types;
- :mod:`~planner_svc.server.convert.research`: ``research.proto`` <-> the session's events and
  updates.
"""

from planner_svc.server.convert.memory import (
    documents_from_proto,
    field_prefix,
    node_write_from_proto,
    provenance_from_proto,
    summary_to_proto,
)
from planner_svc.server.convert.plan import (
    abstention_to_proto,
    evidence_query_from_proto,
    evidence_result_to_proto,
    explanation_to_proto,
    location_from_proto,
    location_to_proto,
    plan_from_proto,
    plan_to_proto,
    planned_span_from_proto,
    planned_span_to_proto,
    recall_trace_to_proto,
    span_ref_from_proto,
    span_ref_to_proto,
    stage_timings_to_proto,
    stats_to_proto,
)
from planner_svc.server.convert.research import (
    caps_from_proto,
    derive_session_id,
    event_from_proto,
    start_from_proto,
    update_to_proto,
)

__all__ = [
    "abstention_to_proto",
    "caps_from_proto",
    "derive_session_id",
    "documents_from_proto",
    "event_from_proto",
    "evidence_query_from_proto",
    "evidence_result_to_proto",
    "explanation_to_proto",
    "field_prefix",
    "location_from_proto",
    "location_to_proto",
    "node_write_from_proto",
    "plan_from_proto",
    "plan_to_proto",
    "planned_span_from_proto",
    "planned_span_to_proto",
    "provenance_from_proto",
    "recall_trace_to_proto",
    "span_ref_from_proto",
    "span_ref_to_proto",
    "stage_timings_to_proto",
    "start_from_proto",
    "stats_to_proto",
    "summary_to_proto",
    "update_to_proto",
]
