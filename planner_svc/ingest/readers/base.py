"""Media types the readers know, and the error every reader raises.

Error hierarchy (drawn once)::

    InvalidRequest (planner_svc.core.errors)
    └── ReaderError   a document cannot be read: unsupported media type, encrypted or damaged
                      file, invalid encoding; ``field`` is ``media_type`` or ``text``

A reader never lets a library's exception escape: it translates it into :class:`ReaderError`
(``raise ... from exc``) so an ingest run can report the document and go on.
"""

from __future__ import annotations

from planner_svc.core.errors import ECHO_CHARS, InvalidRequest, clip

MARKDOWN = "text/markdown"
"""Media type of Markdown."""
PLAIN = "text/plain"
"""Media type of plain text."""
HTML = "text/html"
"""Media type of HTML."""
PDF = "application/pdf"
"""Media type of PDF."""
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
"""Media type of a Word (DOCX) document."""
NOTEBOOK = "application/x-ipynb+json"
"""Media type of a Jupyter notebook (nbformat 4)."""

SUPPORTED = (MARKDOWN, PLAIN, HTML, PDF, DOCX, NOTEBOOK)
"""Media types :func:`planner_svc.ingest.readers.read_document` reads, canonical spelling."""

FORMAT_NAMES = {
    MARKDOWN: "Markdown",
    PLAIN: "text",
    HTML: "HTML",
    PDF: "PDF",
    DOCX: "DOCX",
    NOTEBOOK: "notebook",
}
"""Short name of each supported media type, for messages and reports."""


class ReaderError(InvalidRequest):
    """A document cannot be read.

    Attributes:
        field: ``media_type`` (the type is not supported) or ``text`` (the content is
            encrypted, damaged or not in the encoding the format requires).
        reason: what is wrong, naming the format: ``unsupported media type application/zip``,
            ``encrypted PDF: a password is required``, ``damaged PDF: ...``.
        media_type: the media type the document was read as (or found to have).
    """

    def __init__(self, field: str, reason: str, *, media_type: str) -> None:
        super().__init__(field, reason)
        self.media_type = media_type


def unsupported(media_type: str) -> ReaderError:
    """The error for a media type no reader handles (a client's type is clipped to a short
    prefix, in the message and as the format a report counts it under)."""
    shown = clip(media_type, ECHO_CHARS)
    return ReaderError("media_type", f"unsupported media type {shown}", media_type=shown)


def damaged(media_type: str, detail: str) -> ReaderError:
    """The error for content that does not parse as ``media_type``."""
    name = FORMAT_NAMES.get(media_type, media_type)
    return ReaderError("text", f"damaged {name}: {detail}", media_type=media_type)
