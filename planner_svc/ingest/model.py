"""What ingestion takes and reports, and the names it gives nodes, labels and relations.

Times are integer microseconds since the Unix epoch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DOCUMENT_LABEL",
    "EMBEDDER_META_KEY",
    "PASSAGE_LABEL",
    "RELATION_WEIGHTS",
    "DocumentIn",
    "FormatCounts",
    "IngestReport",
    "RejectedDocument",
    "SourceOutcome",
    "doc_node_id",
    "passage_node_id",
    "reason_class",
]

RELATION_WEIGHTS: Mapping[str, float] = {
    "contains": 0.9,
    "part_of": 0.9,
    "mentions": 0.8,
    "heads": 0.7,
    "next": 0.5,
}
"""Edge weight per relation, in [0, 1]. Containment is nearly as strong as the node itself; a
title mention is strong evidence of relevance to the mentioned document; a heading speaks for its
section; the next passage is a weaker, positional link."""

DOCUMENT_LABEL = "document"
"""Label of every document node."""
PASSAGE_LABEL = "passage"
"""Label of every passage node (beside its structural kind)."""
EMBEDDER_META_KEY = "embedder"
"""Store metadata key naming the embedder that made the store's vectors."""

DEFAULT_BATCH_SIZE = 256
"""Documents parsed, embedded and committed together by default."""


def doc_node_id(source_id: str) -> str:
    """Node id of a source's document node."""
    return f"doc:{source_id}"


def passage_node_id(source_id: str, ordinal: int) -> str:
    """Node id of a source's passage number ``ordinal`` (0-based)."""
    return f"psg:{source_id}:{ordinal}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentIn:
    """One document to ingest (not validated on construction: ingestion reports problems).

    A document comes as ``text`` or as ``content`` (:mod:`planner_svc.ingest.reading`).

    Attributes:
        source_id: stable id of the source (1..1024 characters, no control characters).
        title: human title; empty = the first heading (or the format's own title: HTML
            ``<title>``, PDF ``Title``, notebook ``metadata.title``), else the source id.
        media_type: the format. For ``text``: ``text/markdown``, ``text/plain`` (any other
            ``text/*``), ``text/html`` or ``application/x-ipynb+json``; empty = Markdown when
            the source id ends in ``.md``/``.markdown``, else plain. For ``content``: any type
            :data:`planner_svc.ingest.readers.SUPPORTED` lists (aliases and parameters
            accepted); empty or ``application/octet-stream`` = sniffed from the content and
            the source id's extension.
        text: the document as a string or as UTF-8 bytes (decoded strictly); empty with
            ``content``.
        content: the bytes of a file in any supported format (HTML, PDF, DOCX, notebook,
            Markdown, plain text); None = the document is ``text``.
        valid_from_us: start of validity of the document's facts, microseconds; None = now.
        version_tx_us: transaction time proposed for a new version, microseconds; None = the
            store's clock. Must be later than the source's latest version, no earlier than the
            latest transaction time the store has recorded, and not after ``now_us``.
        properties: string properties copied to the document and passage nodes.
    """

    source_id: str
    title: str = ""
    media_type: str = ""
    text: str | bytes = ""
    content: bytes | None = None
    valid_from_us: int | None = None
    version_tx_us: int | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedDocument:
    """A stream item that never became a document (a message that did not decode, content that
    could not be read): ingestion reports it in ``IngestReport.errors`` at its place in the
    stream, as ``(source_id, "field: reason")``, counts it as received and as failed under
    its format (``IngestReport.formats``), and goes on.

    Attributes:
        source_id: what could be read of its source id; ``""`` when nothing could.
        field: the field at fault (``text``, ``properties.lang``; ``document`` for the whole
            item).
        reason: what is wrong.
        media_type: what could be read of its declared media type; ``""`` when nothing could
            (its format is then told from the source id's extension).
    """

    source_id: str
    field: str
    reason: str
    media_type: str = ""


@dataclass(frozen=True, slots=True)
class SourceOutcome:
    """What one accepted document did to its source.

    Attributes:
        source_id: the source.
        version_tx_us: transaction time of the source's version the document now cites
            (the new version, or the unchanged latest one), microseconds.
        outcome: ``created`` (first version), ``replaced`` (a new version of a source that had
            one) or ``unchanged``.
    """

    source_id: str
    version_tx_us: int
    outcome: str


@dataclass(slots=True)
class FormatCounts:
    """What one ingest call did with the documents of one format.

    Attributes:
        read: documents read and accepted (ingested, or unchanged).
        skipped: documents no reader could read: an unsupported media type, an encrypted or
            damaged file, text not in its format's encoding.
        failed: documents read but refused (empty text, a malformed field, a version time
            out of order).
        reasons: why, per reason (the reason up to its detail: ``text: damaged PDF``,
            ``media_type: unsupported media type image/png``) -> documents.
    """

    read: int = 0
    skipped: int = 0
    failed: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def merge(self, other: FormatCounts) -> None:
        """Add ``other``'s counts to these."""
        self.read += other.read
        self.skipped += other.skipped
        self.failed += other.failed
        self.reasons.update(other.reasons)


def reason_class(reason: str) -> str:
    """A reason without its detail, so documents that failed alike count together:
    ``text: damaged PDF: Failed to load document (PDFium: Data format error).`` ->
    ``text: damaged PDF``, ``text: not valid UTF-8 at byte 7`` -> ``text: not valid UTF-8``."""
    field_name, _, rest = reason.partition(": ")
    head = rest.split(": ", 1)[0] if rest else ""
    head = head.split(" at byte ", 1)[0].split(" (", 1)[0]
    return f"{field_name}: {head}" if rest else field_name


@dataclass(slots=True, kw_only=True)
class IngestReport:
    """Counts of one :func:`ingest_documents` call.

    Attributes:
        received: documents read.
        ingested: documents that produced a new source version.
        replaced: of those, documents whose source already had a version.
        unchanged: documents whose canonical text equals the latest version.
        sources: one :class:`SourceOutcome` per accepted document, in input order.
        errors: ``(source_id, reason)`` of each rejected document, in input order.
        spans, nodes, edges, vectors: rows written (ledger rows, node versions, edge versions
            opened, vectors).
        late_mentions: mention edges added after the call's documents were written.
        mentions_closed: mention edges closed then because a longer new title hides them.
        formats: format name (``Markdown``, ``text``, ``HTML``, ``PDF``, ``DOCX``,
            ``notebook``, or the media type no reader handles) -> what happened to its
            documents (:meth:`count_read`, :meth:`count_refused`).
    """

    received: int = 0
    ingested: int = 0
    replaced: int = 0
    unchanged: int = 0
    sources: list[SourceOutcome] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    spans: int = 0
    nodes: int = 0
    edges: int = 0
    vectors: int = 0
    late_mentions: int = 0
    mentions_closed: int = 0
    formats: dict[str, FormatCounts] = field(default_factory=dict)

    def count_read(self, fmt: str) -> None:
        """Count one document of format ``fmt`` read and accepted."""
        self.formats.setdefault(fmt, FormatCounts()).read += 1

    def count_refused(self, fmt: str, reason: str, *, skipped: bool) -> None:
        """Count one refused document of format ``fmt``: ``skipped`` when no reader could
        read it, else failed. (Its ``(source_id, reason)`` goes to :attr:`errors` apart.)"""
        counts = self.formats.setdefault(fmt, FormatCounts())
        if skipped:
            counts.skipped += 1
        else:
            counts.failed += 1
        counts.reasons[reason_class(reason)] += 1

    @property
    def skipped(self) -> int:
        """Refused documents no reader could read (a part of :attr:`failed`)."""
        return sum(c.skipped for c in self.formats.values())

    def merge(self, other: IngestReport) -> None:
        """Add ``other``'s counts and errors to this report."""
        self.received += other.received
        self.ingested += other.ingested
        self.replaced += other.replaced
        self.unchanged += other.unchanged
        self.sources.extend(other.sources)
        self.errors.extend(other.errors)
        self.spans += other.spans
        self.nodes += other.nodes
        self.edges += other.edges
        self.vectors += other.vectors
        self.late_mentions += other.late_mentions
        self.mentions_closed += other.mentions_closed
        for fmt, counts in other.formats.items():
            self.formats.setdefault(fmt, FormatCounts()).merge(counts)

    @property
    def failed(self) -> int:
        """Number of refused documents: every entry of :attr:`errors`, skipped ones
        included."""
        return len(self.errors)
