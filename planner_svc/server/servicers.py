"""Thin servicers of ``EvidencePlannerService`` and ``MemoryService``: convert, delegate, map
errors.

No algorithm lives here: recall and selection are in :mod:`planner_svc.recall` and
:mod:`planner_svc.core`, ingestion in :mod:`planner_svc.ingest`, node and edge writes in
:mod:`planner_svc.memory`. Conversion is :mod:`planner_svc.server.convert`; errors map through
the one table of :mod:`planner_svc.server.errors`. The research stream's servicer is
:mod:`planner_svc.server.research`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

import grpc
import structlog

from planner_svc.api.planner.v1 import memory_pb2, memory_pb2_grpc, plan_pb2, plan_pb2_grpc
from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.errors import ResponseTooLarge
from planner_svc.ingest.service import IngestService
from planner_svc.memory.service import MemoryService
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.recall.timing import StageClock
from planner_svc.server import convert
from planner_svc.server.errors import abort_with, code_name
from planner_svc.server.observe import (
    PLAN_SPANS,
    PLAN_USED_TOKENS,
    RpcTimer,
    observe_stages,
    request_id,
)

__all__ = ["EvidencePlannerServicer", "MemoryServicer"]

log = structlog.get_logger("planner_svc.server")
_T = TypeVar("_T")


class EvidencePlannerServicer(plan_pb2_grpc.EvidencePlannerServiceServicer):
    """``planner.v1.EvidencePlannerService``: the Plan RPC.

    Args:
        planner: plans the validated query.
        max_response_bytes: the server's send limit, bytes: a larger response is refused
            (ResponseTooLarge: RESOURCE_EXHAUSTED, naming what to lower) rather than failing in
            the transport.
        clock: now, for absent as-of times.
    """

    def __init__(
        self,
        planner: EvidencePlanner,
        *,
        max_response_bytes: int = 16 * 1024 * 1024,
        clock: Clock = wall_clock_us,
    ) -> None:
        self._planner = planner
        self._max_response_bytes = max_response_bytes
        self._clock = clock

    def Plan(
        self, request: plan_pb2.PlanRequest, context: grpc.ServicerContext
    ) -> plan_pb2.PlanResponse:
        """Validate, plan, convert; the work stops between recall stages once the caller
        cancels or its deadline passes."""
        rid = request_id(context)
        context.set_trailing_metadata((("x-request-id", rid),))
        stages = StageClock()
        with RpcTimer("Plan") as timer:
            try:
                with stages.stage("request"):
                    query = convert.evidence_query_from_proto(
                        request, now_us=self._clock(), config=self._planner.config,
                        recall=self._planner.recall,
                    )
                result = self._planner.plan(query, cancelled=lambda: not context.is_active(),
                                            clock=stages)
                with stages.stage("response"):
                    response = convert.evidence_result_to_proto(result)
                if query.explain:
                    response.timings.extend(convert.stage_timings_to_proto(stages))
                size = response.ByteSize()
                if size > self._max_response_bytes:
                    lower = "lower budget_tokens" + (
                        ", or leave explain unset (it lists every candidate)"
                        if request.explain else ""
                    )
                    raise ResponseTooLarge(
                        f"the plan response is {size} bytes, over the server's "
                        f"{self._max_response_bytes}-byte message limit; {lower}"
                    )
            except Exception as exc:
                timer.code = code_name(exc)
                observe_stages(stages)
                abort_with(context, exc, request_id=rid, method="Plan",
                           duration_us=timer.elapsed_us)
            observe_stages(stages)
            plan = response.plan
            PLAN_SPANS.observe(len(plan.spans))
            PLAN_USED_TOKENS.observe(plan.used)
            log.info("plan", request_id=rid, plan_hash=plan.plan_hash, spans=len(plan.spans),
                     used=plan.used, budget=plan.budget, duration_us=timer.elapsed_us)
            return response


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    """``planner.v1.MemoryService``: bulk ingest and API-written nodes and edges.

    Args:
        ingest: writes document streams.
        memory: writes single nodes and edges.
        max_response_bytes: the server's send limit, bytes (an ingest summary lists every
            document of its stream).
        clock: now, for a node's absent ``valid_from``.
    """

    def __init__(
        self,
        *,
        ingest: IngestService,
        memory: MemoryService,
        max_response_bytes: int = 16 * 1024 * 1024,
        clock: Clock = wall_clock_us,
    ) -> None:
        self._ingest = ingest
        self._memory = memory
        self._max_response_bytes = max_response_bytes
        self._clock = clock

    def IngestSources(
        self,
        request_iterator: Iterator[memory_pb2.IngestSourcesRequest],
        context: grpc.ServicerContext,
    ) -> memory_pb2.IngestSourcesResponse:
        """Ingest every streamed document; bad documents, and messages that did not decode,
        are reported in the response and skipped."""

        def ingest() -> memory_pb2.IngestSourcesResponse:
            report = self._ingest.ingest(
                convert.documents_from_proto(request_iterator),
                cancelled=lambda: not context.is_active(),
            )
            summary = convert.summary_to_proto(report)
            size = summary.ByteSize()
            if size > self._max_response_bytes:
                raise ResponseTooLarge(
                    f"the ingest summary of {report.received} documents is {size} bytes, over "
                    f"the server's {self._max_response_bytes}-byte message limit (it lists each "
                    "document); the documents are committed: send fewer per stream"
                )
            return summary

        return self._call("IngestSources", context, ingest)

    def PutNode(
        self, request: memory_pb2.PutNodeRequest, context: grpc.ServicerContext
    ) -> memory_pb2.PutNodeResponse:
        """Write one node version."""

        def put_node() -> memory_pb2.PutNodeResponse:
            write = convert.node_write_from_proto(request, now_us=self._clock())
            result = self._memory.put_node(
                write,
                provenance=convert.provenance_from_proto(request.node),
                provenance_field="node.provenance",
            )
            return memory_pb2.PutNodeResponse(node_id=result.node_id, tx=result.tx_us)

        return self._call("PutNode", context, put_node)

    def PutEdge(
        self, request: memory_pb2.PutEdgeRequest, context: grpc.ServicerContext
    ) -> memory_pb2.PutEdgeResponse:
        """Write one edge version."""

        def put_edge() -> memory_pb2.PutEdgeResponse:
            tx = self._memory.put_edge(
                request.src_node_id,
                request.dst_node_id,
                request.relation,
                request.weight,
                valid_from_us=request.valid_from if request.HasField("valid_from") else None,
                valid_to_us=request.valid_to if request.HasField("valid_to") else None,
            )
            return memory_pb2.PutEdgeResponse(tx=tx)

        return self._call("PutEdge", context, put_edge)

    @staticmethod
    def _call(method: str, context: grpc.ServicerContext, fn: Callable[[], _T]) -> _T:
        rid = request_id(context)
        context.set_trailing_metadata((("x-request-id", rid),))
        with RpcTimer(method) as timer:
            try:
                result = fn()
            except Exception as exc:
                timer.code = code_name(exc)
                abort_with(context, exc, request_id=rid, method=method,
                           duration_us=timer.elapsed_us)
            log.info(method.lower(), request_id=rid, duration_us=timer.elapsed_us)
            return result
