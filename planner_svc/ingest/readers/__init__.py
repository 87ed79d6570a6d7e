"""Document readers: bytes of a supported format -> canonical text, spans and passages.

:func:`read_document` picks the reader by media type (:mod:`.sniff`: an explicit, valid type
wins; else content sniffing and the name's extension) and returns what the Markdown reader
returns: canonical text, structural spans (``heading`` | ``paragraph`` | ``code`` | ``cell``,
UTF-8 byte offsets, each with a :class:`~planner_svc.ingest.document.Location`) and passages.

======================  ==========================================  ===========================
format                  reader                                      location of a span
======================  ==========================================  ===========================
Markdown, plain text    :func:`.text.read_text`                     heading path (text: empty)
HTML                    :func:`.html.read_html` (main content)      heading path
PDF                     :func:`.pdf.read_pdf` (text per page)       page (and any heading path)
DOCX                    :func:`.docx.read_docx`                     heading path
Jupyter notebook        :func:`.notebook.read_notebook`             cell index and heading path
======================  ==========================================  ===========================

Every failure is a :class:`ReaderError` (an ``InvalidRequest``) naming the problem:
``unsupported media type application/zip``, ``encrypted PDF: ...``, ``damaged PDF: ...``.
"""

from __future__ import annotations

from planner_svc.ingest.document import Location, ParsedDocument
from planner_svc.ingest.readers.base import (
    DOCX,
    FORMAT_NAMES,
    HTML,
    MARKDOWN,
    NOTEBOOK,
    PDF,
    PLAIN,
    SUPPORTED,
    ReaderError,
)
from planner_svc.ingest.readers.dispatch import read_document
from planner_svc.ingest.readers.sniff import resolve_media_type, sniff_media_type

__all__ = [
    "DOCX",
    "FORMAT_NAMES",
    "HTML",
    "MARKDOWN",
    "NOTEBOOK",
    "PDF",
    "PLAIN",
    "SUPPORTED",
    "Location",
    "ParsedDocument",
    "ReaderError",
    "read_document",
    "resolve_media_type",
    "sniff_media_type",
]
