"""Markdown and plain text from bytes: strict UTF-8, then :mod:`planner_svc.ingest.parse`."""

from __future__ import annotations

from planner_svc.ingest.document import ParsedDocument
from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES, parse_document
from planner_svc.ingest.readers.base import MARKDOWN, PLAIN, ReaderError


def decode_utf8(data: bytes, media_type: str) -> str:
    """``data`` decoded as strict UTF-8 (a leading byte order mark is kept; canonical text
    drops it).

    Raises:
        ReaderError: (``text``) not valid UTF-8, naming the first bad byte offset.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReaderError(
            "text", f"not valid UTF-8 at byte {exc.start}", media_type=media_type
        ) from exc


def read_text(
    data: bytes,
    *,
    markdown: bool,
    max_passage_bytes: int = DEFAULT_MAX_PASSAGE_BYTES,
    min_passage_bytes: int = 0,
) -> ParsedDocument:
    """Read UTF-8 Markdown (``markdown=True``) or plain text; the same result as
    :func:`planner_svc.ingest.parse.parse_document` on the decoded text.

    Raises:
        ReaderError: (``text``) not valid UTF-8.
        InvalidRequest: (``max_passage_bytes``) below 64.
    """
    media_type = MARKDOWN if markdown else PLAIN
    return parse_document(
        decode_utf8(data, media_type),
        media_type,
        max_passage_bytes=max_passage_bytes,
        min_passage_bytes=min_passage_bytes,
    )
