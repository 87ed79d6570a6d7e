"""What every reader returns: a parsed document, its spans and passages, and their locations.

Offsets are UTF-8 byte offsets into the document's canonical text
(:func:`planner_svc.store.text.canonicalize`); :class:`planner_svc.ingest.document.
DocumentBuilder` makes these objects.
"""

from __future__ import annotations

from dataclasses import dataclass

_PATH_SEPARATOR = " \u203a "


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """Where a span sits in the original document.

    Attributes:
        page: 1-based page number (PDF), else None.
        heading_path: texts of the enclosing headings, outermost first (whitespace collapsed);
            a heading's own path ends with itself; empty when no heading encloses the span.
        cell_index: 0-based notebook cell, else None.

    Raises:
        ValueError: ``page`` below 1 or ``cell_index`` below 0.
    """

    page: int | None = None
    heading_path: tuple[str, ...] = ()
    cell_index: int | None = None

    def __post_init__(self) -> None:
        if self.page is not None and self.page < 1:
            raise ValueError(f"page {self.page} is below 1 (pages are numbered from 1)")
        if self.cell_index is not None and self.cell_index < 0:
            raise ValueError(f"cell_index {self.cell_index} is below 0")

    def render(self) -> str:
        """One line for a citation: ``p. 3``, ``cell 4``, ``Intro › Setup``, joined by `` · ``
        in that order when several are set (``p. 3 · Results``); empty when nothing is."""
        parts: list[str] = []
        if self.page is not None:
            parts.append(f"p. {self.page}")
        if self.cell_index is not None:
            parts.append(f"cell {self.cell_index}")
        if self.heading_path:
            parts.append(_PATH_SEPARATOR.join(self.heading_path))
        return " \u00b7 ".join(parts)

    def __str__(self) -> str:
        return self.render()


NOWHERE = Location()
"""The location of a span in a document without pages, cells or headings."""


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
