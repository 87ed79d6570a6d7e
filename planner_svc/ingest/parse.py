"""Markdown and plain text -> canonical text -> structural spans and passages.

A deliberately small, line-based reading of Markdown (the subset documents here use) and of
plain text. Offsets are UTF-8 byte offsets into the canonical text
(:func:`planner_svc.store.text.canonicalize`); spans cover a block's content, not its markup:

- ATX heading ``## Title ##`` -> ``heading`` span over ``Title``; setext headings (a paragraph
  underlined with ``===`` or ``---``) -> ``heading`` over the paragraph's text;
- fenced code (```` ``` ```` or ``~~~``) -> ``code`` span over the lines between the fences (an
  unclosed fence runs to the end of the document);
- pipe tables (a header row, a delimiter row, body rows) -> one ``cell`` span per non-empty cell;
- any other run of non-blank lines -> ``paragraph`` (list items and block quotes included,
  trimmed of surrounding whitespace); thematic breaks (``---``, ``***``) produce nothing.

Plain text: every run of non-blank lines is a ``paragraph``.

Every span's location (:class:`Location`) carries its heading path (plain text: empty).

The blocks go into the :class:`planner_svc.ingest.document.DocumentBuilder` the other readers
(:mod:`planner_svc.ingest.readers`) share. A **passage** is the unit that becomes a node: one
per paragraph or code span, and one per table row (its cells). Paragraphs and code longer than
``max_passage_bytes`` are cut into even pieces, each cut at the sentence end (a line end for
code) nearest an even share of what remains, else at whitespace, else at a character boundary
(:meth:`~planner_svc.ingest.document.DocumentBuilder.split`), so every passage can be packed
into a modest token budget.

Passage granularity: selection packs by density (weight per token), so a very short passage (a
bare heading, a one-line caption, a one-sentence paragraph) always out-packs the paragraph that
holds the answer while saying little on its own. A heading, or a paragraph, therefore opens a
passage that takes in the following paragraphs while the passage is shorter than
``min_passage_bytes`` (so a heading merges with its short lead, and three short paragraphs in a
row become one passage); the merged passage gets one span from its first block to its last
(kind of its largest block, so ``paragraph``), added to the ledger beside the structural spans
it covers. Code and table rows are never merged.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from planner_svc.core.errors import InvalidRequest, echo
from planner_svc.ingest.document import (
    NOWHERE,
    DocumentBuilder,
    Location,
    ParsedDocument,
    Passage,
    Span,
)

__all__ = [
    "DEFAULT_MAX_PASSAGE_BYTES",
    "DEFAULT_MIN_PASSAGE_BYTES",
    "MARKDOWN_TYPES",
    "NOWHERE",
    "PLAIN_TYPES",
    "Location",
    "ParsedDocument",
    "Passage",
    "Span",
    "is_markdown",
    "parse_document",
    "read_markdown",
    "read_plain",
]

MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown", "text/md"})
PLAIN_TYPES = frozenset({"text/plain", ""})

DEFAULT_MAX_PASSAGE_BYTES = 300
"""Default split threshold for paragraphs and code blocks, UTF-8 bytes (about 80 tokens of
English): two or three sentences, so a plan under a small budget spends it on the sentences that
match rather than on whole paragraphs around them."""

DEFAULT_MIN_PASSAGE_BYTES = 200
"""A passage opened by a heading or a paragraph takes in the following paragraphs while
shorter than this, UTF-8 bytes."""

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_DELIM_CELL = re.compile(r"^\s*:?-+:?\s*$")


@dataclass(slots=True)
class _Line:
    text: str
    start: int  # byte offset of the line's first character
    end: int  # byte offset just past its last character (before the newline)

    def blank(self) -> bool:
        return not self.text.strip()


def _lines(text: str, base: int = 0) -> list[_Line]:
    out: list[_Line] = []
    pos = base
    for raw in text.split("\n"):
        size = len(raw.encode("utf-8"))
        out.append(_Line(raw, pos, pos + size))
        pos += size + 1
    return out


def _split_row(line: _Line) -> list[tuple[int, int]]:
    """Cell byte ranges of a pipe-table row (unescaped ``|`` separates; outer pipes dropped)."""
    text = line.text
    cuts: list[int] = []  # character indexes of separating pipes
    escaped = False
    for i, ch in enumerate(text):
        if ch == "\\" and not escaped:
            escaped = True
            continue
        if ch == "|" and not escaped:
            cuts.append(i)
        escaped = False
    bounds = [-1, *cuts, len(text)]
    cells = [(a + 1, b) for a, b in itertools.pairwise(bounds)]
    stripped = text.strip()
    if stripped.startswith("|") and cells:
        cells = cells[1:]
    if stripped.endswith("|") and len(stripped) > 1 and cells:
        cells = cells[:-1]
    out: list[tuple[int, int]] = []
    for a, b in cells:
        start = line.start + len(text[:a].encode("utf-8"))
        end = line.start + len(text[:b].encode("utf-8"))
        out.append((start, end))
    return out


def _is_delimiter_row(line: _Line) -> bool:
    text = line.text.strip()
    if "-" not in text or not set(text) <= set("|:- \t"):
        return False
    parts = text.strip("|").split("|")
    return bool(parts) and all(_DELIM_CELL.match(p) for p in parts)


def _table_starts(lines: list[_Line], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and "|" in lines[i].text
        and not lines[i].blank()
        and _is_delimiter_row(lines[i + 1])
    )


def _parse_markdown(lines: list[_Line], b: DocumentBuilder) -> None:
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if line.blank():
            i += 1
            continue
        fence = _FENCE.match(line.text)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            marker = fence.group(1)
            close = re.compile(
                r"^ {0,3}" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}[ \t]*$"
            )
            j = i + 1
            while j < n and not close.match(lines[j].text):
                j += 1
            if j > i + 1:
                b.add("code", lines[i + 1].start, lines[j - 1].end)
            i = j + 1
            continue
        atx = _ATX.match(line.text)
        if atx:
            level = len(atx.group(1))
            content = atx.group(2)
            if content.strip():
                head = line.text[: atx.start(2)]
                start = line.start + len(head.encode("utf-8"))
                b.add("heading", start, start + len(content.encode("utf-8")), level)
            i += 1
            continue
        if _BREAK.match(line.text):
            i += 1
            continue
        if _table_starts(lines, i):
            b.add_row(_split_row(line))
            j = i + 2
            while j < n and not lines[j].blank() and "|" in lines[j].text:
                b.add_row(_split_row(lines[j]))
                j += 1
            i = j
            continue
        # paragraph: up to a blank line or a line that opens another block
        j = i + 1
        setext = 0
        while j < n:
            nxt = lines[j]
            if nxt.blank() or _ATX.match(nxt.text) or _FENCE.match(nxt.text):
                break
            under = _SETEXT.match(nxt.text)
            if under:
                setext = 1 if under.group(1)[0] == "=" else 2
                break
            if _BREAK.match(nxt.text) or _table_starts(lines, j):
                break
            j += 1
        if setext:
            b.add("heading", line.start, lines[j - 1].end, setext)
            i = j + 1
        else:
            b.add("paragraph", line.start, lines[j - 1].end)
            i = j


def _parse_plain(lines: list[_Line], b: DocumentBuilder) -> None:
    i = 0
    n = len(lines)
    while i < n:
        if lines[i].blank():
            i += 1
            continue
        j = i
        while j < n and not lines[j].blank():
            j += 1
        b.add("paragraph", lines[i].start, lines[j - 1].end)
        i = j


def is_markdown(media_type: str) -> bool:
    """Whether ``media_type`` (parameters such as ``; charset=utf-8`` ignored) is Markdown.

    Raises:
        InvalidRequest: (``media_type``) neither Markdown nor plain text (``text/*`` other than
            Markdown counts as plain; empty means plain).
    """
    base = media_type.split(";", 1)[0].strip().lower()
    if base in MARKDOWN_TYPES:
        return True
    if base in PLAIN_TYPES or base.startswith("text/"):
        return False
    raise InvalidRequest(
        "media_type", f"{echo(media_type)} is not supported (text/markdown or text/plain)"
    )


def read_markdown(builder: DocumentBuilder, text: str) -> None:
    """Append ``text`` (canonicalised, markup kept) to ``builder`` and add its Markdown blocks
    (module docstring) at the builder's current page and cell.

    Raises:
        InvalidRequest: (``text``) not valid UTF-8 (a lone surrogate).
    """
    base = builder.append_text(text)
    _parse_markdown(_lines(builder.text_of(base, builder.size), base), builder)


def read_plain(builder: DocumentBuilder, text: str) -> None:
    """Append ``text`` (canonicalised) to ``builder`` and add each run of non-blank lines as
    a paragraph.

    Raises:
        InvalidRequest: (``text``) not valid UTF-8 (a lone surrogate).
    """
    base = builder.append_text(text)
    _parse_plain(_lines(builder.text_of(base, builder.size), base), builder)


def parse_document(
    text: str,
    media_type: str,
    *,
    max_passage_bytes: int = DEFAULT_MAX_PASSAGE_BYTES,
    min_passage_bytes: int = 0,
) -> ParsedDocument:
    """Canonicalise ``text`` and find its structural spans and passages (module docstring).

    Args:
        text: the document.
        media_type: ``text/markdown`` (or ``text/x-markdown``) for Markdown; ``text/plain``,
            another ``text/*`` type or ``""`` for plain text.
        max_passage_bytes: split threshold for paragraphs and code, UTF-8 bytes (>= 64).
        min_passage_bytes: a passage opened by a heading or paragraph takes in the following
            paragraphs while shorter than this, UTF-8 bytes (0, the default here, = never
            merge; ingestion passes
            :data:`DEFAULT_MIN_PASSAGE_BYTES`).

    Returns:
        The canonical text, its spans in offset order and its passages in document order.

    Raises:
        InvalidRequest: (``media_type``) unsupported; (``text``) not valid UTF-8 (a lone
            surrogate); (``max_passage_bytes``) below 64.
    """
    builder = DocumentBuilder(
        max_passage_bytes=max_passage_bytes, min_passage_bytes=min_passage_bytes
    )
    if is_markdown(media_type):
        read_markdown(builder, text)
        return builder.finish("text/markdown")
    read_plain(builder, text)
    return builder.finish("text/plain")
