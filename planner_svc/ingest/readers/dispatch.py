"""One entry point for every format: resolve the media type, then read with its reader."""

from __future__ import annotations

from planner_svc.core.errors import InvalidRequest
from planner_svc.ingest.document import ParsedDocument
from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES
from planner_svc.ingest.readers.base import DOCX, HTML, MARKDOWN, PDF, PLAIN, damaged
from planner_svc.ingest.readers.sniff import resolve_media_type

__all__ = ["read_document"]


def read_document(
    data: bytes,
    *,
    media_type: str | None = None,
    name: str | None = None,
    max_passage_bytes: int = DEFAULT_MAX_PASSAGE_BYTES,
    min_passage_bytes: int = 0,
) -> ParsedDocument:
    """Read one document of any supported format.

    Args:
        data: the document's bytes.
        media_type: its media type when the caller knows it (wins when supported;
            ``application/octet-stream``, empty or None = sniff the content).
        name: a file name or source id; its extension helps tell text formats apart.
        max_passage_bytes: split threshold for paragraphs and code, UTF-8 bytes (>= 64).
        min_passage_bytes: a heading's (or paragraph's) passage takes in following paragraphs
            while shorter than this, UTF-8 bytes (0 = never merge).

    Returns:
        The parsed document; ``ParsedDocument.media_type`` says which reader read it.

    Raises:
        ReaderError: (``media_type``) the type is not supported (``unsupported media type
            image/png``); (``text``) the content cannot be read as that type (encrypted or
            damaged PDF, damaged DOCX, not a notebook, not valid UTF-8), including any other
            exception a parsing library raises on it (``damaged DOCX: TypeName: message``).
        InvalidRequest: (``max_passage_bytes``) below 64.
    """
    kind = resolve_media_type(data, media_type, name)
    limits = {"max_passage_bytes": max_passage_bytes, "min_passage_bytes": min_passage_bytes}
    try:
        return _read(kind, data, limits)
    except InvalidRequest:
        raise
    except Exception as exc:  # a library failing on a malformed file must not stop an ingest
        raise damaged(kind, f"{type(exc).__name__}: {exc}") from exc


def _read(kind: str, data: bytes, limits: dict[str, int]) -> ParsedDocument:
    if kind in (MARKDOWN, PLAIN):
        from planner_svc.ingest.readers.text import read_text

        return read_text(data, markdown=kind == MARKDOWN, **limits)
    if kind == HTML:
        from planner_svc.ingest.readers.html import read_html

        return read_html(data, **limits)
    if kind == PDF:
        from planner_svc.ingest.readers.pdf import read_pdf

        return read_pdf(data, **limits)
    if kind == DOCX:
        from planner_svc.ingest.readers.docx import read_docx

        return read_docx(data, **limits)
    from planner_svc.ingest.readers.notebook import read_notebook

    return read_notebook(data, **limits)
