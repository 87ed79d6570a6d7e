"""What every reader returns: a parsed document, its spans and passages, and their locations
(:class:`~planner_svc.core.model.Location`, defined in the core because every planned span
carries one).

Offsets are UTF-8 byte offsets into the document's canonical text
(:func:`planner_svc.store.text.canonicalize`); :class:`planner_svc.ingest.document.
DocumentBuilder` makes these objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner_svc.core.model import NOWHERE, Location

__all__ = ["NOWHERE", "Location", "ParsedDocument", "Passage", "Span"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Span:
    """A structural span: UTF-8 byte range ``[start, end)`` of the canonical text, its kind
    (``heading`` | ``paragraph`` | ``code`` | ``cell``) and its location."""

    start: int
    end: int
    kind: str
    location: Location = NOWHERE


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage:
    """One passage (becomes one node).

    Attributes:
        ordinal: 0-based position in the document.
        kind: ``heading``, ``paragraph``, ``code`` or ``cell`` (a table row).
        spans: its spans (one; a table row's cells; or one per page of a paragraph that runs
            across a page break), in offset order.
        text: the passage text: a row's cells joined with `` | ``, else the canonical text
            from its first span's start to its last span's end.
        level: level 1..6 of the heading the passage opens with (a section start), else 0.
        location: the location of its first span.
    """

    ordinal: int
    kind: str
    spans: tuple[Span, ...]
    text: str
    level: int = 0
    location: Location = NOWHERE


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDocument:
    """What a reader returns.

    Attributes:
        text: canonical text (what the store keeps and offsets point into).
        spans: every structural span, in offset order (the ledger rows).
        passages: passages in document order.
        title: text of the first heading, else the reader's metadata title, else None.
        media_type: the media type it was read as (``text/markdown``, ``application/pdf``,
            ...).
    """

    text: str
    spans: tuple[Span, ...]
    passages: tuple[Passage, ...]
    title: str | None
    media_type: str = ""
