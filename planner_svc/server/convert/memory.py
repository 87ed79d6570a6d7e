"""Memory messages <-> the ingest and memory services' types.

Request field paths in errors follow the proto (``node.provenance[0].end``, ``src_node_id``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import grpc

from planner_svc.api.planner.v1 import memory_pb2
from planner_svc.core.errors import Cancelled, InvalidRequest
from planner_svc.core.model import SpanRef
from planner_svc.ingest.pipeline import DocumentIn, IngestReport, RejectedDocument
from planner_svc.server.wire import Undecodable
from planner_svc.store.records import NodeWrite

__all__ = [
    "documents_from_proto",
    "field_prefix",
    "node_write_from_proto",
    "provenance_from_proto",
    "summary_to_proto",
]

_OUTCOMES = {
    "created": memory_pb2.INGEST_OUTCOME_CREATED,
    "replaced": memory_pb2.INGEST_OUTCOME_REPLACED,
    "unchanged": memory_pb2.INGEST_OUTCOME_UNCHANGED,
}


def documents_from_proto(
    stream: Iterator[memory_pb2.IngestSourcesRequest | Undecodable],
) -> Iterator[DocumentIn | RejectedDocument]:
    """The documents of an ``IngestSources`` request stream, converted as they are read (a
    message without a document is an empty document, refused by ingestion like any other bad
    one). A message that did not decode becomes a :class:`RejectedDocument` naming the field
    (``text``, relative to the document) and its place in the stream, with the source id when
    it could be read, so ingestion reports it and goes on.

    Raises:
        Cancelled: the request stream broke because the caller cancelled.
    """
    position = 0
    while True:
        try:
            message = next(stream)
        except StopIteration:
            return
        except grpc.RpcError:  # the request stream breaks when the caller cancels
            raise Cancelled("the client cancelled the ingest stream") from None
        position += 1
        if isinstance(message, Undecodable):
            yield _rejected(message, position)
            continue
        doc = message.document
        yield DocumentIn(
            source_id=doc.source_id,
            title=doc.title,
            media_type=doc.media_type,
            text=doc.text,
            content=doc.content if doc.content else None,
            valid_from_us=doc.valid_from if doc.HasField("valid_from") else None,
            version_tx_us=doc.version_tx if doc.HasField("version_tx") else None,
            properties=dict(doc.properties),
        )


def _rejected(message: Undecodable, position: int) -> RejectedDocument:
    where = f"message {position} of the stream"
    field = message.field.removeprefix("document.")
    if not message.field:
        return RejectedDocument(source_id="", field="document",
                                reason=f"{message.reason} ({where})")
    return RejectedDocument(source_id=message.text("document.source_id"), field=field,
                            reason=f"{message.reason} ({where})",
                            media_type=message.text("document.media_type", limit=256))


def summary_to_proto(report: IngestReport) -> memory_pb2.IngestSourcesResponse:
    """The ``IngestSourcesResponse`` of an ingest report (one entry per accepted and failed
    document, in stream order; one per format, by format name)."""
    return memory_pb2.IngestSourcesResponse(
        received=report.received,
        ingested=report.ingested,
        replaced=report.replaced,
        unchanged=report.unchanged,
        sources=[
            memory_pb2.IngestedSource(
                source_id=o.source_id, version_tx=o.version_tx_us, outcome=_OUTCOMES[o.outcome]
            )
            for o in report.sources
        ],
        failed=report.failed,
        errors=[memory_pb2.IngestError(source_id=sid, reason=reason)
                for sid, reason in report.errors],
        spans=report.spans,
        nodes=report.nodes,
        edges=report.edges,
        formats=[
            memory_pb2.IngestFormatCount(
                format=fmt, read=c.read, skipped=c.skipped, failed=c.failed,
                reasons=[memory_pb2.IngestReasonCount(reason=r, documents=n)
                         for r, n in sorted(c.reasons.items())],
            )
            for fmt, c in sorted(report.formats.items())
        ],
    )


@contextmanager
def field_prefix(prefix: str) -> Iterator[None]:
    """Re-raise an InvalidRequest from the block with ``prefix.`` before its field."""
    try:
        yield
    except InvalidRequest as exc:
        raise InvalidRequest(f"{prefix}.{exc.field}", exc.reason) from None


def provenance_from_proto(node: memory_pb2.NodeWrite) -> tuple[SpanRef, ...]:
    """The node's provenance spans, in the order the caller listed them."""
    return tuple(
        SpanRef(p.source_id, p.source_version_tx, p.start, p.end) for p in node.provenance
    )


def node_write_from_proto(request: memory_pb2.PutNodeRequest, *, now_us: int) -> NodeWrite:
    """The node version of a ``PutNode`` request; an absent ``valid_from`` is ``now_us``, an
    absent ``confidence`` 1.0.

    Raises:
        InvalidRequest: ``node`` missing, or ``node.<field>`` malformed.
    """
    if not request.HasField("node"):
        raise InvalidRequest("node", "is required")
    n = request.node
    with field_prefix("node"):
        return NodeWrite(
            node_id=n.node_id,
            labels=tuple(n.labels),
            properties=dict(n.properties),
            text=n.text,
            confidence=n.confidence if n.HasField("confidence") else 1.0,
            provenance=provenance_from_proto(n),
            valid_from_us=n.valid_from if n.HasField("valid_from") else now_us,
            valid_to_us=n.valid_to if n.HasField("valid_to") else None,
        )
