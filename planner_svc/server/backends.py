"""The backends one server process plans over: store, embedder, vector index, planner.

Also the write paths the Memory service exposes (ingest stream, API-written nodes and edges),
kept here so the servicer stays a thin converter.

Transaction times come from the store's clock (:meth:`Store.stamped`), taken inside the write
transaction: they never go backwards and never repeat across every process writing the store,
so versions commit in transaction-time order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import grpc
import numpy as np
import numpy.typing as npt

from planner_svc.api.planner.v1 import memory_pb2, plan_pb2
from planner_svc.clock import wall_clock_us
from planner_svc.core.errors import Cancelled, ConfigError, InvalidRequest
from planner_svc.core.model import SpanRef
from planner_svc.index.fresh import FreshIndex
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.settings import ServerSettings

INGEST_BATCH = 256
"""Documents of an ingest stream committed (and indexed) together."""

_OUTCOMES = {
    "created": memory_pb2.INGEST_OUTCOME_CREATED,
    "replaced": memory_pb2.INGEST_OUTCOME_REPLACED,
    "unchanged": memory_pb2.INGEST_OUTCOME_UNCHANGED,
}


@dataclass(slots=True)
class Backends:
    """Open backends of one process. ``index``/``embedder`` are None when semantic is off."""

    store: Any
    embedder: Any
    index: FreshIndex | None
    planner: EvidencePlanner
    settings: ServerSettings
    write_lock: threading.Lock

    @classmethod
    def open(cls, settings: ServerSettings) -> Backends:
        """Open (creating if needed) the store under ``settings.data_dir``, the embedder and
        the vector index (rebuilt or caught up from the store when it lags).

        Raises:
            ConfigError: a bad model registry or index configuration.
        """
        from planner_svc.recall.tokens import default_counter
        from planner_svc.store import Store

        data = settings.data_dir
        if data.is_dir() and any(data.iterdir()) and not (data / "store.sqlite").exists():
            raise ConfigError(
                "data_dir",
                f"{data} holds other files but no store.sqlite: not a planner-svc data "
                "directory (give an empty or new directory to start a store there)",
            )
        data.mkdir(parents=True, exist_ok=True)
        store = Store.open(settings.data_dir)
        embedder = None
        index: FreshIndex | None = None
        if settings.semantic:
            from planner_svc.embed import default_embedder
            from planner_svc.index import VectorIndex

            embedder = default_embedder(settings.model_dir)
            index = FreshIndex(
                VectorIndex.open_or_build(
                    settings.data_dir, store, embedder_name=embedder.name, dim=embedder.dim
                ),
                store,
            )
        planner = EvidencePlanner(
            store, index=index, embedder=embedder, config=settings.selection,
            counter=default_counter(settings.models_path), recall=settings.recall,
        )
        return cls(store=store, embedder=embedder, index=index, planner=planner,
                   settings=settings, write_lock=threading.Lock())

    def describe(self) -> dict[str, object]:
        """Facts for the start-up log line."""
        return {
            "sources": self.store.count_sources(),
            "embedder": getattr(self.embedder, "name", None),
            "vectors": self.index.size if self.index is not None else 0,
        }

    def close(self) -> None:
        """Close the store (the index is read-only memory)."""
        self.store.close()

    def plan_question(
        self,
        question_text: str,
        *,
        at_valid_us: int | None,
        at_tx_us: int | None,
        budget_tokens: int | None,
    ) -> plan_pb2.EvidencePlan:
        """The plan ``planner-svc plan`` would get for ``question_text`` (both legs from the
        text, one hop of expansion), for research sub-questions.

        Raises:
            PlannerError: InsufficientEvidence when nothing is recalled, InvalidRequest.
        """
        from planner_svc.convert import plan_query_from_proto, plan_result_to_proto
        from planner_svc.server.client import question_request

        request = question_request(
            question_text,
            budget_tokens=budget_tokens,
            at_valid_us=at_valid_us,
            at_tx_us=at_tx_us,
        )
        if self.index is None:
            request.ClearField("semantic")  # store-only server: the structured leg alone
        query = plan_query_from_proto(request, now_us=wall_clock_us(), config=self.planner.config,
                                      recall=self.planner.recall)
        return plan_result_to_proto(self.planner.plan(query))

    # ------------------------------------------------------------------ writes

    def ingest_stream(
        self,
        documents: Iterator[memory_pb2.SourceDocument],
        *,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> memory_pb2.IngestSummary:
        """Ingest streamed documents in batches of :data:`INGEST_BATCH`.

        Each batch is read from the stream first, then written under the write lock with one
        fresh transaction time and indexed, so a slow client never holds the lock and a stream
        cut short keeps (and has indexed) every batch it completed. The batch being read when
        the caller cancels is dropped when the cancellation is seen first; gRPC may deliver the
        end of the request stream before it, and then that batch commits whole (re-sending it
        is harmless: unchanged documents write nothing). A malformed document is reported in
        ``errors`` and skipped; the stream goes on.

        Raises:
            Cancelled: the caller cancelled (or its deadline passed); earlier batches stay.
        """
        from planner_svc.ingest import DocumentIn, ingest_documents

        def convert(batch: Iterable[memory_pb2.SourceDocument]) -> list[DocumentIn]:
            return [
                DocumentIn(
                    source_id=doc.source_id,
                    title=doc.title,
                    media_type=doc.media_type,
                    text=doc.text,
                    valid_from_us=doc.valid_from if doc.HasField("valid_from") else None,
                    version_tx_us=doc.version_tx if doc.HasField("version_tx") else None,
                    properties=dict(doc.properties),
                )
                for doc in batch
            ]

        def read_batch() -> list[DocumentIn]:
            try:
                batch = convert(islice(documents, INGEST_BATCH))
            except grpc.RpcError:  # the request stream breaks when the caller cancels
                raise Cancelled("the client cancelled the ingest stream") from None
            if cancelled():  # a cancelled stream may also just end: keep its last batch out
                raise Cancelled("the client cancelled the ingest stream")
            return batch

        summary = memory_pb2.IngestSummary()
        while batch := read_batch():
            with self.write_lock:
                report = ingest_documents(self.store, self.embedder, batch, now_us=wall_clock_us())
                if self.index is not None:
                    self.index.sync()
            summary.received += report.received
            summary.ingested += report.ingested
            summary.replaced += report.replaced
            summary.unchanged += report.unchanged
            summary.sources.extend(
                memory_pb2.IngestedSource(
                    source_id=o.source_id, version_tx=o.version_tx_us,
                    outcome=_OUTCOMES[o.outcome],
                )
                for o in report.sources
            )
            summary.failed += len(report.errors)
            summary.errors.extend(memory_pb2.IngestError(source_id=sid, reason=reason)
                                  for sid, reason in report.errors)
            summary.spans += report.spans
            summary.nodes += report.nodes
            summary.edges += report.edges
        return summary

    def put_node(self, request: memory_pb2.PutNodeRequest) -> memory_pb2.PutNodeResponse:
        """Write one node version (embedding its text when semantic recall is on).

        Raises:
            InvalidRequest: a field is malformed (``node.<field>``).
        """
        from planner_svc.store.records import NodeWrite

        if not request.HasField("node"):
            raise InvalidRequest("node", "is required")
        n = request.node
        now = wall_clock_us()
        try:
            write = NodeWrite(
                node_id=n.node_id,
                labels=tuple(n.labels),
                properties=dict(n.properties),
                text=n.text,
                confidence=n.confidence if n.HasField("confidence") else 1.0,
                provenance=tuple(
                    SpanRef(p.source_id, p.source_version_tx, p.start, p.end)
                    for p in n.provenance
                ),
                valid_from_us=n.valid_from if n.HasField("valid_from") else now,
                valid_to_us=n.valid_to if n.HasField("valid_to") else None,
            )
        except InvalidRequest as exc:
            raise InvalidRequest(f"node.{exc.field}", exc.reason) from None
        vector: npt.NDArray[np.float32] | None = (
            self.embedder.embed([write.text])[0]
            if self.embedder is not None and write.text
            else None
        )
        with self.write_lock:
            # Node and vector commit together: the index treats every version id up to the
            # store's maximum as covered, so a vector committed later would be missed.
            with self.store.stamped(None, now_us=wall_clock_us()) as tx:
                self.store.check_provenance(
                    [SpanRef(p.source_id, p.source_version_tx, p.start, p.end)
                     for p in n.provenance],
                    field="node.provenance",
                )
                result = self.store.write_nodes([write], tx_us=tx)[0]
                if result.created and vector is not None:
                    self.store.put_vector(result.version_id, vector)
            if result.created and vector is not None and self.index is not None:
                self.index.sync()
        return memory_pb2.PutNodeResponse(node_id=result.node_id, tx=result.tx_us)

    def put_edge(self, request: memory_pb2.PutEdgeRequest) -> memory_pb2.PutEdgeResponse:
        """Write one edge version.

        Raises:
            InvalidRequest: a field is malformed.
        """
        now = wall_clock_us()
        with self.write_lock, self.store.stamped(None, now_us=now) as stamp:
            tx = self.store.put_edge(
                request.src_node_id,
                request.dst_node_id,
                request.relation,
                request.weight,
                valid_from_us=request.valid_from if request.HasField("valid_from") else now,
                valid_to_us=request.valid_to if request.HasField("valid_to") else None,
                tx_us=stamp,
            )
        return memory_pb2.PutEdgeResponse(tx=tx)
