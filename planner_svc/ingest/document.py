"""The one builder every reader emits its blocks into (what it builds: :mod:`.parsed`).

A reader turns a document into **blocks** (a heading with its level, a paragraph, a code block,
a table row of cells) and hands them to a :class:`DocumentBuilder`, which owns the canonical
text (:func:`planner_svc.store.text.canonicalize`), the structural spans and the passages.
Offsets are UTF-8 byte offsets into the canonical text; a span covers a block's content with
surrounding ASCII whitespace trimmed.

Two ways to give the builder text:

- :meth:`DocumentBuilder.append_text` then :meth:`DocumentBuilder.add` / ``add_row`` over byte
  ranges of it: a reader that keeps its markup in the canonical text (Markdown, plain text);
- :meth:`DocumentBuilder.add_block`, ``add_paged_block`` and ``add_table_row``: a reader that
  extracts text (HTML, PDF, DOCX, notebooks); blocks are separated by a blank line, the rows of
  one table by a line break, a row's cells by `` | ``.

Passages (what becomes a node), from the blocks in order:

- one per paragraph or code block, one per table row (its cells);
- a paragraph or code block longer than ``max_passage_bytes`` is cut, balanced, at sentence
  ends (line ends for code), else at whitespace, else at a character boundary; its pieces are
  its structural spans;
- a heading, or a paragraph, opens a group that takes in the following paragraphs while the
  group is shorter than ``min_passage_bytes`` and every span in it has the same location; a
  group of several blocks becomes one passage with one span from its first to its last block
  (kind of its largest block), added to the spans beside the ones it covers. Code and table
  rows never merge.

Every span has a :class:`Location`: the page the reader set (``page``), the notebook cell
(``cell_index``), and the path of headings that encloses it (``heading_path``), which the
builder keeps from the heading blocks it is given: a heading of level ``n`` closes every open
heading of level ``>= n`` and its own path ends with itself. A block running across pages
(``add_paged_block``) gets one span per page, so a location always names one page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from planner_svc.core.errors import InvalidRequest
from planner_svc.ingest.parsed import NOWHERE, Location, ParsedDocument, Passage, Span
from planner_svc.store.text import canonicalize

__all__ = [
    "BLOCK_SEPARATOR",
    "CELL_SEPARATOR",
    "KINDS",
    "NOWHERE",
    "ROW_SEPARATOR",
    "DocumentBuilder",
    "Location",
    "ParsedDocument",
    "Passage",
    "Span",
]

KINDS = ("heading", "paragraph", "code", "cell")
"""The structural kinds a reader produces."""

BLOCK_SEPARATOR = "\n\n"
ROW_SEPARATOR = "\n"
CELL_SEPARATOR = " | "

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")


@dataclass(frozen=True, slots=True)
class _Raw:
    kind: str
    spans: tuple[Span, ...]
    level: int

    def location(self) -> Location | None:
        """The one location of all its spans, or None when they differ."""
        first = self.spans[0].location
        return first if all(s.location == first for s in self.spans) else None


class DocumentBuilder:
    """Collects canonical text and blocks; :meth:`finish` returns the :class:`ParsedDocument`.

    Attributes:
        page: page of the blocks added next (1-based), or None.
        cell_index: notebook cell of the blocks added next (0-based), or None.

    Raises:
        InvalidRequest: (``max_passage_bytes``) below 64.
    """

    def __init__(self, *, max_passage_bytes: int, min_passage_bytes: int = 0) -> None:
        if max_passage_bytes < 64:
            raise InvalidRequest(
                "max_passage_bytes", f"{max_passage_bytes} is below the minimum 64"
            )
        self.max_bytes = max_passage_bytes
        self.min_bytes = min_passage_bytes
        self.page: int | None = None
        self.cell_index: int | None = None
        self._data = bytearray()
        self._raw: list[_Raw] = []
        self._headings: list[tuple[int, str]] = []

    # ------------------------------------------------------------------ text

    @property
    def size(self) -> int:
        """Bytes of canonical text so far."""
        return len(self._data)

    def append_text(self, text: str) -> int:
        """Append ``canonicalize(text)`` verbatim; returns the byte offset where it starts.

        Raises:
            InvalidRequest: (``text``) holds a lone surrogate (not valid UTF-8).
        """
        start = len(self._data)
        canonical = canonicalize(text)
        try:
            self._data += canonical.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidRequest(
                "text", f"not valid UTF-8: lone surrogate at {exc.start}"
            ) from exc
        return start

    def text_of(self, start: int, end: int) -> str:
        """Canonical text of the byte range ``[start, end)``."""
        return self._data[start:end].decode("utf-8")

    def separate(self, separator: str = BLOCK_SEPARATOR) -> None:
        """Append ``separator`` unless the text is empty so far."""
        if self._data:
            self._data += separator.encode("utf-8")

    # ------------------------------------------------------------------ blocks over ranges

    def location(self) -> Location:
        """Location of a block added now: current page, cell and heading path."""
        return Location(
            page=self.page,
            heading_path=tuple(text for _, text in self._headings),
            cell_index=self.cell_index,
        )

    def trimmed(self, start: int, end: int) -> tuple[int, int] | None:
        """Shrink [start, end) past surrounding ASCII whitespace; None when nothing is left."""
        piece = bytes(self._data[start:end])
        stripped = piece.strip()  # ASCII whitespace only, so byte offsets stay on boundaries
        if not stripped:
            return None
        lead = len(piece) - len(piece.lstrip())
        return start + lead, start + lead + len(stripped)

    def add(
        self,
        kind: str,
        start: int,
        end: int,
        level: int = 0,
        *,
        pages: Sequence[tuple[int, int]] = (),
    ) -> None:
        """Add a block over ``[start, end)`` (trimmed; nothing when only whitespace is left).

        Args:
            kind: one of :data:`KINDS` (``cell`` through :meth:`add_row`).
            start, end: UTF-8 byte range of the canonical text.
            level: heading level 1..6 (headings only).
            pages: ``(offset, page)`` pairs, ascending: from each offset on the block lies on
                that page (a paragraph running across a page break); empty = :attr:`page`.
        """
        bounds = self.trimmed(start, end)
        if bounds is None:
            return
        start, end = bounds
        if kind == "heading":
            title = " ".join(self.text_of(start, end).split())
            while self._headings and self._headings[-1][0] >= level:
                self._headings.pop()
            self._headings.append((level, title))
        here = self.location()
        cuts = [(start, here)]
        for offset, page in pages:
            located = Location(
                page=page, heading_path=here.heading_path, cell_index=here.cell_index
            )
            if offset <= start:
                cuts = [(start, located)]
            elif offset < end:
                cuts.append((offset, located))
        if kind in ("paragraph", "code") and end - start > self.max_bytes:
            for a, b in self.split(start, end, code=kind == "code"):
                self._emit(kind, a, b, 0, cuts)
            return
        self._emit(kind, start, end, level, cuts)

    def _emit(
        self, kind: str, start: int, end: int, level: int, cuts: list[tuple[int, Location]]
    ) -> None:
        spans: list[Span] = []
        for i, (offset, location) in enumerate(cuts):
            limit = cuts[i + 1][0] if i + 1 < len(cuts) else end
            a, b = max(start, offset), min(end, limit)
            bounds = self.trimmed(a, b) if a < b else None
            if bounds is not None:
                spans.append(Span(start=bounds[0], end=bounds[1], kind=kind, location=location))
        if spans:
            self._raw.append(_Raw(kind, tuple(spans), level))

    def add_row(self, cells: Sequence[tuple[int, int]]) -> None:
        """Add a table row: one ``cell`` span per non-empty cell range (trimmed)."""
        here = self.location()
        spans = []
        for a, b in cells:
            bounds = self.trimmed(a, b)
            if bounds is not None:
                spans.append(Span(start=bounds[0], end=bounds[1], kind="cell", location=here))
        if spans:
            self._raw.append(_Raw("cell", tuple(spans), 0))

    def split(self, start: int, end: int, *, code: bool) -> list[tuple[int, int]]:
        """Cut [start, end) into trimmed pieces of at most ``max_passage_bytes`` bytes each.

        Balanced: with ``n = ceil(remaining / max_bytes)`` pieces still to cut, each cut goes to
        the sentence end (a line end for code) nearest the even share ``remaining / n``, so no
        piece is a stray few-word tail; without one, the whitespace nearest that share, else a
        character boundary at the limit.
        """
        pieces: list[tuple[int, int]] = []
        pos = start
        while end - pos > self.max_bytes:
            remaining = end - pos
            share = remaining / -(-remaining // self.max_bytes)
            window = bytes(self._data[pos : pos + self.max_bytes]).decode(
                "utf-8", errors="ignore"
            )
            if code:
                cuts = [m.end() for m in re.finditer(r"\n", window)]
            else:
                cuts = [m.end() for m in _SENTENCE_END.finditer(window)]
                if not cuts:
                    cuts = [m.end() for m in re.finditer(r"\s+", window)]
            byte_cuts = [len(window[:c].encode("utf-8")) for c in cuts if c > 0]
            if byte_cuts:
                cut_bytes = min(byte_cuts, key=lambda b: (abs(b - share), b))
            else:
                cut_bytes = len(window.encode("utf-8"))
            bounds = self.trimmed(pos, pos + cut_bytes)
            if bounds is not None:
                pieces.append(bounds)
            pos += cut_bytes
        bounds = self.trimmed(pos, end)
        if bounds is not None:
            pieces.append(bounds)
        return pieces

    # ------------------------------------------------------------------ extracted blocks

    def add_block(self, kind: str, text: str, *, level: int = 0) -> None:
        """Append ``text`` (stripped) as a block of its own after a blank line; nothing when
        it is only whitespace. ``kind`` is ``heading`` (with ``level``), ``paragraph`` or
        ``code``."""
        text = text.strip() if kind != "code" else text.strip("\n")
        if not text.strip():
            return
        self.separate()
        start = self.append_text(text)
        self.add(kind, start, self.size, level)

    def add_paged_block(self, kind: str, parts: Sequence[tuple[int, str]]) -> None:
        """Append a block whose text runs across pages: ``(page, text)`` parts, concatenated
        as given (the reader supplies any space between them); one span per page."""
        if not "".join(text for _, text in parts).strip():
            return
        self.separate()
        start = self.size
        pages: list[tuple[int, int]] = []
        for page, text in parts:
            pages.append((self.append_text(text), page))
        self.add(kind, start, self.size, pages=pages)

    def add_table_row(self, cells: Sequence[str], *, first: bool) -> None:
        """Append a table row: its non-empty cells (whitespace collapsed) on one line, joined
        by `` | ``; ``first`` opens the table after a blank line, later rows follow on the
        next line. One ``cell`` span per non-empty cell, one passage per row."""
        texts = [" ".join(c.split()) for c in cells]
        texts = [t for t in texts if t]
        if not texts:
            return
        self.separate(BLOCK_SEPARATOR if first else ROW_SEPARATOR)
        ranges: list[tuple[int, int]] = []
        for i, text in enumerate(texts):
            if i:
                self.append_text(CELL_SEPARATOR)
            start = self.append_text(text)
            ranges.append((start, self.size))
        self.add_row(ranges)

    # ------------------------------------------------------------------ result

    def finish(self, media_type: str, *, fallback_title: str | None = None) -> ParsedDocument:
        """The canonical text, every span in offset order, the passages and the title
        (the first heading, else ``fallback_title``) of a document read as ``media_type``."""
        text = self._data.decode("utf-8")
        structural = [sp for raw in self._raw for sp in raw.spans]
        passages: list[Passage] = []
        for ordinal, raw in enumerate(_merge_short(self._raw, self.min_bytes)):
            if raw.kind == "cell":
                body = CELL_SEPARATOR.join(self.text_of(s.start, s.end) for s in raw.spans)
            else:
                body = self.text_of(raw.spans[0].start, raw.spans[-1].end)
            passages.append(
                Passage(
                    ordinal=ordinal,
                    kind=raw.kind,
                    spans=raw.spans,
                    text=body,
                    level=raw.level,
                    location=raw.spans[0].location,
                )
            )
        all_spans = sorted(
            {*structural, *(s for p in passages for s in p.spans)},
            key=lambda s: (s.start, s.end, s.kind),
        )
        title = next(
            (self.text_of(sp.start, sp.end) for sp in structural if sp.kind == "heading"),
            fallback_title or None,
        )
        return ParsedDocument(
            text=text,
            spans=tuple(all_spans),
            passages=tuple(passages),
            title=title,
            media_type=media_type,
        )


def _merge_short(raw: list[_Raw], min_bytes: int) -> list[_Raw]:
    """Merge a heading (or paragraph) with the paragraphs after it while the group is under
    ``min_bytes`` and all of it has one location (module docstring); others pass through."""
    out: list[_Raw] = []
    group: list[_Raw] = []

    def flush() -> None:
        if not group:
            return
        if len(group) == 1:
            out.append(group[0])
        else:
            first, last = group[0].spans[0], group[-1].spans[-1]
            sizes: dict[str, int] = {}
            for item in group:
                sizes[item.kind] = sizes.get(item.kind, 0) + sum(
                    sp.end - sp.start for sp in item.spans
                )
            kind = max(sorted(sizes), key=lambda k: sizes[k])
            merged = Span(start=first.start, end=last.end, kind=kind, location=first.location)
            out.append(_Raw(kind, (merged,), group[0].level))
        group.clear()

    for item in raw:
        if item.kind == "heading":
            flush()
            group.append(item)
        elif (
            item.kind == "paragraph"
            and group
            and group[-1].spans[-1].end - group[0].spans[0].start < min_bytes
            and item.location() is not None
            and item.location() == group[0].location()
        ):
            group.append(item)
        else:
            flush()
            if item.kind == "paragraph":
                group.append(item)
            else:
                out.append(item)
    flush()
    return out
