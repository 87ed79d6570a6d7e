"""One document in, its parsed form out: which reader reads a :class:`DocumentIn`, and the
format a report counts it under.

A document comes either as **text** (a string, or its UTF-8 bytes) or as **content** (the bytes
of a file in any supported format):

- text is read exactly as ingestion always read it: its ``media_type`` names the format, and an
  empty one means Markdown when the source id ends in ``.md``/``.markdown``, else plain text.
  Markdown and plain text go to :func:`planner_svc.ingest.parse.parse_document`; HTML and
  notebook JSON, which are text too, to their readers (their UTF-8 encoding); PDF and DOCX are
  binary formats and are refused as text (send their bytes as content);
- content goes to :func:`planner_svc.ingest.readers.read_document`: ``media_type`` when it
  names a supported type, else content sniffing with the source id's extension.

Errors: :class:`~planner_svc.ingest.readers.ReaderError` when no reader can read the document
(its type is unsupported, it is encrypted or damaged, or not in the encoding its format
requires); :class:`~planner_svc.core.errors.InvalidRequest` naming the field otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner_svc.core.errors import InvalidRequest, echo
from planner_svc.ingest.model import DocumentIn, RejectedDocument
from planner_svc.ingest.parse import ParsedDocument, parse_document
from planner_svc.ingest.readers import (
    DOCX,
    FORMAT_NAMES,
    MARKDOWN,
    PDF,
    PLAIN,
    ReaderError,
    read_document,
)
from planner_svc.ingest.readers.sniff import (
    extension_type,
    normalize_media_type,
    sniff_media_type,
)
from planner_svc.store.text import check_id

__all__ = [
    "ReadAhead",
    "ReadDocument",
    "format_label",
    "read_ahead",
    "read_source",
    "rejected_format",
]

_MARKDOWN_SUFFIXES = (".md", ".markdown")
_BINARY = (PDF, DOCX)


@dataclass(frozen=True, slots=True)
class ReadDocument:
    """A document read.

    Attributes:
        parsed: canonical text, spans (with locations) and passages.
        media_type: the media type recorded with the source version: the one the caller
            declared, else the one it was read as.
    """

    parsed: ParsedDocument
    media_type: str


def _decode(text: object) -> str:
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidRequest("text", f"not valid UTF-8 at byte {exc.start}") from exc
    if not isinstance(text, str):
        raise InvalidRequest("text", f"expected text, got {type(text).__name__}")
    return text


def _declared(doc: DocumentIn) -> str:
    media_type = doc.media_type
    if not isinstance(media_type, str):
        raise InvalidRequest("media_type", f"expected a string, got {echo(media_type)}")
    return media_type


def read_source(
    doc: DocumentIn, source_id: str, *, max_passage_bytes: int, min_passage_bytes: int
) -> ReadDocument:
    """Read one document (module docstring) with the given passage limits (UTF-8 bytes).

    Raises:
        ReaderError: no reader can read it (``media_type: unsupported media type image/png``,
            ``text: encrypted PDF: ...``, ``text: damaged DOCX: ...``, ``media_type:
            application/pdf is a binary format: ...``).
        InvalidRequest: (``text``) text and content both set, text not a string or not valid
            UTF-8; (``media_type``) not a string.
    """
    declared = _declared(doc)
    limits = {"max_passage_bytes": max_passage_bytes, "min_passage_bytes": min_passage_bytes}
    if doc.content is not None:
        if not isinstance(doc.content, bytes):
            raise InvalidRequest("content", f"expected bytes, got {type(doc.content).__name__}")
        if doc.text:
            raise InvalidRequest("text", "text and content are both set: send one of them")
        parsed = read_document(doc.content, media_type=declared or None, name=source_id,
                               **limits)
        return ReadDocument(parsed, declared.strip() or parsed.media_type)
    text = _decode(doc.text)
    if not declared.strip():
        markdown = source_id.lower().endswith(_MARKDOWN_SUFFIXES)
        declared = MARKDOWN if markdown else PLAIN
    kind = normalize_media_type(declared)
    if kind is None or kind in (MARKDOWN, PLAIN):
        # Markdown and plain text exactly as ingestion has always read them.
        return ReadDocument(parse_document(text, declared, **limits), declared)
    if kind in _BINARY:
        raise ReaderError(
            "media_type",
            f"{kind} is a binary format: send the file's bytes as content, not as text",
            media_type=kind,
        )
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequest("text", f"not valid UTF-8: lone surrogate at {exc.start}") from exc
    return ReadDocument(read_document(data, media_type=kind, name=source_id, **limits), declared)


def format_label(doc: DocumentIn, error: Exception | None = None) -> str:
    """The format a report counts ``doc`` under: ``Markdown``, ``text``, ``HTML``, ``PDF``,
    ``DOCX``, ``notebook``, or the media type of a document no reader handles
    (``image/png``); ``unknown`` when even that cannot be told. Never raises.

    Args:
        doc: the document.
        error: the error reading or ingesting it raised, when it did (a reader's error names
            the media type it found).
    """
    if isinstance(error, ReaderError):
        return FORMAT_NAMES.get(error.media_type, error.media_type or "unknown")
    name = doc.source_id if isinstance(doc.source_id, str) else None
    declared = doc.media_type if isinstance(doc.media_type, str) else ""
    try:
        kind = normalize_media_type(declared)
    except ReaderError as exc:
        return exc.media_type or "unknown"
    if kind is None:
        if isinstance(doc.content, bytes) and not doc.text:
            kind = sniff_media_type(doc.content, name)
        else:
            markdown = (name or "").lower().endswith(_MARKDOWN_SUFFIXES)
            kind = MARKDOWN if markdown else PLAIN
    return FORMAT_NAMES.get(kind, kind)


def rejected_format(item: RejectedDocument) -> str:
    """The format a report counts a :class:`~planner_svc.ingest.model.RejectedDocument` under:
    its declared media type's, else its source id extension's (``handbook.pdf`` -> ``PDF``),
    else ``text``; ``unknown`` when neither could be read. Never raises."""
    if not item.source_id and not item.media_type:
        return "unknown"
    declared = item.media_type if item.media_type.strip() else extension_type(item.source_id)
    return format_label(DocumentIn(source_id=item.source_id, media_type=declared or ""))


@dataclass(frozen=True, slots=True)
class ReadAhead:
    """A document read before it is written: what :func:`read_ahead` returns, and what
    :func:`planner_svc.ingest.ingest_documents` takes in place of the document, so the slow
    part of ingestion (parsing PDFs, Word files, pages) can run outside a write lock.

    Attributes:
        doc: the document.
        limits: ``(max_passage_bytes, min_passage_bytes)`` it was read with; ingestion reads
            it again when its own limits differ.
        read: the document read, or None when reading failed.
        error: why reading failed (a :class:`~planner_svc.ingest.readers.ReaderError` or an
            :class:`~planner_svc.core.errors.InvalidRequest`), else None.
    """

    doc: DocumentIn
    limits: tuple[int, int]
    read: ReadDocument | None = None
    error: InvalidRequest | None = None


def read_ahead(doc: DocumentIn, *, max_passage_bytes: int, min_passage_bytes: int
               ) -> ReadAhead:
    """Check the source id and read ``doc`` (:func:`read_source`), keeping a failure for
    ingestion to report. Never raises for a bad document; touches no store. Thread-safe
    (PDFium, which is not, runs under the PDF reader's lock)."""
    limits = (max_passage_bytes, min_passage_bytes)
    try:
        source_id = check_id(doc.source_id, field="source_id")
        read = read_source(doc, source_id, max_passage_bytes=max_passage_bytes,
                           min_passage_bytes=min_passage_bytes)
    except InvalidRequest as exc:
        return ReadAhead(doc, limits, error=exc)
    return ReadAhead(doc, limits, read=read)
