"""The backends one server process plans over: store, embedder, vector index, planner.

Also the write paths the Memory service exposes (ingest stream, API-written nodes and edges),
kept here so the servicer stays a thin converter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import structlog

from planner_svc.api.planner.v1 import memory_pb2, plan_pb2
from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import SpanRef
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.server.settings import ServerSettings


def _now_us() -> int:
    return time.time_ns() // 1000


@dataclass(slots=True)
class Backends:
    """Open backends of one process. ``index``/``embedder`` are None when semantic is off."""

    store: Any
    embedder: Any
    index: Any
    planner: EvidencePlanner
    settings: ServerSettings
    write_lock: threading.Lock
    stop_refresh: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def open(cls, settings: ServerSettings) -> Backends:
        """Open (creating if needed) the store under ``settings.data_dir``, the embedder and
        the vector index (rebuilt or caught up from the store when it lags).
        """
        from planner_svc.store import Store

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store.open(settings.data_dir)
        embedder = index = None
        if settings.semantic:
            from planner_svc.embed import default_embedder
            from planner_svc.index import VectorIndex

            embedder = default_embedder()
            index = VectorIndex.open_or_build(
                settings.data_dir, store, embedder_name=embedder.name, dim=embedder.dim
            )
        from planner_svc.recall.tokens import default_counter

        planner = EvidencePlanner(
            store, index=index, embedder=embedder, config=settings.planner,
            counter=default_counter(settings.models_path),
        )
        backends = cls(store=store, embedder=embedder, index=index, planner=planner,
                       settings=settings, write_lock=threading.Lock())
        if index is not None and settings.index_refresh_s > 0:
            threading.Thread(target=backends._refresh_index, name="planner-index-refresh",
                             daemon=True).start()
        return backends

    def _refresh_index(self) -> None:
        """Catch the vector index up with writes made by other processes (``planner-svc
        ingest`` into the same data directory), every ``index_refresh_s`` seconds."""
        log = structlog.get_logger("planner_svc.server")
        while not self.stop_refresh.wait(self.settings.index_refresh_s):
            try:
                if self.store.max_version_id() > self.index.covered_version_id:
                    with self.write_lock:
                        added = self.index.sync(self.store)
                    log.info("vector_index.caught_up", added=added)
            except Exception:
                log.exception("vector_index.refresh_failed")

    def describe(self) -> dict[str, object]:
        """Facts for the start-up log line."""
        return {
            "sources": self.store.count_sources(),
            "embedder": getattr(self.embedder, "name", None),
            "vectors": self.index.size if self.index is not None else 0,
        }

    def close(self) -> None:
        """Stop the index refresher and close the store (the index is read-only memory)."""
        self.stop_refresh.set()
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
        query = plan_query_from_proto(request, now_us=_now_us(), config=self.planner.config)
        return plan_result_to_proto(self.planner.plan(query))

    # ------------------------------------------------------------------ writes

    def ingest_stream(
        self, documents: Iterator[memory_pb2.SourceDocument]
    ) -> memory_pb2.IngestSummary:
        """Ingest streamed documents, then catch the vector index up.

        A malformed document is reported in ``errors`` and skipped; the batch goes on.
        """
        from planner_svc.ingest import DocumentIn, ingest_documents

        def convert() -> Iterator[DocumentIn]:
            for doc in documents:
                yield DocumentIn(
                    source_id=doc.source_id,
                    title=doc.title,
                    media_type=doc.media_type,
                    text=doc.text,
                    valid_from_us=doc.valid_from if doc.HasField("valid_from") else None,
                    version_tx_us=doc.version_tx if doc.HasField("version_tx") else None,
                    properties=dict(doc.properties),
                )

        with self.write_lock:
            report = ingest_documents(self.store, self.embedder, convert(), now_us=_now_us())
            if self.index is not None:
                self.index.sync(self.store)
        return memory_pb2.IngestSummary(
            received=report.received,
            ingested=report.ingested,
            unchanged=report.unchanged,
            failed=len(report.errors),
            errors=[memory_pb2.IngestError(source_id=sid, reason=reason)
                    for sid, reason in report.errors],
            spans=report.spans,
            nodes=report.nodes,
            edges=report.edges,
        )

    def put_node(self, request: memory_pb2.PutNodeRequest) -> memory_pb2.PutNodeResponse:
        """Write one node version (embedding its text when semantic recall is on).

        Raises:
            InvalidRequest: a field is malformed (``node.<field>``).
        """
        from planner_svc.store.records import NodeWrite

        if not request.HasField("node"):
            raise InvalidRequest("node", "is required")
        n = request.node
        now = _now_us()
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
        vector = (
            self.embedder.embed([write.text])[0]
            if self.embedder is not None and write.text
            else None
        )
        with self.write_lock:
            # Node and vector commit together: the index treats every version id up to the
            # store's maximum as covered, so a vector committed later would be missed.
            with self.store.transaction():
                result = self.store.write_nodes([write], tx_us=now)[0]
                if result.created and vector is not None:
                    self.store.put_vector(result.version_id, vector)
            if result.created and vector is not None and self.index is not None:
                self.index.sync(self.store)
        return memory_pb2.PutNodeResponse(node_id=result.node_id, tx=result.tx_us)

    def put_edge(self, request: memory_pb2.PutEdgeRequest) -> memory_pb2.PutEdgeResponse:
        """Write one edge version.

        Raises:
            InvalidRequest: a field is malformed.
        """
        now = _now_us()
        with self.write_lock:
            tx = self.store.put_edge(
                request.src_node_id,
                request.dst_node_id,
                request.relation,
                request.weight,
                valid_from_us=request.valid_from if request.HasField("valid_from") else now,
                valid_to_us=request.valid_to if request.HasField("valid_to") else None,
                tx_us=now,
            )
        return memory_pb2.PutEdgeResponse(tx=tx)
