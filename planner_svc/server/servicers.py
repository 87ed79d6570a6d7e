"""Thin servicers: convert proto <-> internal types, delegate, map errors.

No algorithm lives here: recall and selection are in :mod:`planner_svc.recall` and
:mod:`planner_svc.core`, ingestion in :mod:`planner_svc.ingest`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

import grpc
import structlog

from planner_svc.api.planner.v1 import memory_pb2, memory_pb2_grpc, plan_pb2, plan_pb2_grpc
from planner_svc.clock import Clock, wall_clock_us
from planner_svc.convert import plan_query_from_proto, plan_result_to_proto
from planner_svc.core.errors import PlannerError
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.server.errors import abort_with, code_name
from planner_svc.server.observe import PLAN_SPANS, PLAN_USED_TOKENS, RpcTimer, request_id

log = structlog.get_logger("planner_svc.server")
_T = TypeVar("_T")

class EvidencePlannerServicer(plan_pb2_grpc.EvidencePlannerServicer):
    """``planner.v1.EvidencePlanner``: the Plan RPC."""

    def __init__(self, planner: EvidencePlanner, *, clock: Clock = wall_clock_us) -> None:
        self._planner = planner
        self._clock = clock

    def Plan(
        self, request: plan_pb2.PlanRequest, context: grpc.ServicerContext
    ) -> plan_pb2.EvidencePlan:
        """Validate, plan, convert; errors map to statuses in one place."""
        rid = request_id(context)
        context.set_trailing_metadata((("x-request-id", rid),))
        with RpcTimer("Plan") as timer:
            try:
                query = plan_query_from_proto(
                    request, now_us=self._clock(), config=self._planner.config,
                    recall=self._planner.recall,
                )
                result = self._planner.plan(query, cancelled=lambda: not context.is_active())
                reply = plan_result_to_proto(result)
            except Exception as exc:
                timer.code = code_name(exc)
                abort_with(context, exc, request_id=rid, method="Plan",
                           duration_us=timer.elapsed_us)
            PLAN_SPANS.observe(len(reply.spans))
            PLAN_USED_TOKENS.observe(reply.used)
            log.info("plan", request_id=rid, plan_hash=reply.plan_hash, spans=len(reply.spans),
                     used=reply.used, budget=reply.budget, duration_us=timer.elapsed_us)
            return reply


class MemoryServicer(memory_pb2_grpc.MemoryServicer):
    """``planner.v1.Memory``: bulk ingest and API-written nodes and edges.

    ``ingest(documents, *, cancelled)`` takes an iterator of SourceDocument messages and a
    cancellation check and returns an IngestSummary; it is provided by the server assembly so
    this class stays free of storage details.
    """

    def __init__(
        self,
        *,
        ingest: Callable[..., memory_pb2.IngestSummary],
        put_node: Callable[[memory_pb2.PutNodeRequest], memory_pb2.PutNodeResponse],
        put_edge: Callable[[memory_pb2.PutEdgeRequest], memory_pb2.PutEdgeResponse],
    ) -> None:
        self._ingest = ingest
        self._put_node = put_node
        self._put_edge = put_edge

    def IngestSources(
        self, request_iterator: Iterator[memory_pb2.SourceDocument], context: grpc.ServicerContext
    ) -> memory_pb2.IngestSummary:
        """Ingest every streamed document; bad documents are reported in the summary."""
        return self._call(
            "IngestSources", context,
            lambda: self._ingest(request_iterator, cancelled=lambda: not context.is_active()),
        )

    def PutNode(
        self, request: memory_pb2.PutNodeRequest, context: grpc.ServicerContext
    ) -> memory_pb2.PutNodeResponse:
        """Write one node version."""
        return self._call("PutNode", context, lambda: self._put_node(request))

    def PutEdge(
        self, request: memory_pb2.PutEdgeRequest, context: grpc.ServicerContext
    ) -> memory_pb2.PutEdgeResponse:
        """Write one edge version."""
        return self._call("PutEdge", context, lambda: self._put_edge(request))

    @staticmethod
    def _call(method: str, context: grpc.ServicerContext, fn: Callable[[], _T]) -> _T:
        rid = request_id(context)
        context.set_trailing_metadata((("x-request-id", rid),))
        with RpcTimer(method) as timer:
            try:
                result = fn()
            except (PlannerError, Exception) as exc:
                timer.code = code_name(exc)
                abort_with(context, exc, request_id=rid, method=method,
                           duration_us=timer.elapsed_us)
            log.info(method.lower(), request_id=rid, duration_us=timer.elapsed_us)
            return result
