"""DOCX reader (Office Open XML word processing, via python-docx): body paragraphs and tables.

The body is read in order, including content controls (``w:sdt``) except a table of contents:

- a paragraph whose style is ``Heading N`` (N capped at 6), ``Title`` (level 1), or that has an
  outline level (its own or its style's) -> ``heading``; table-of-contents entries (``TOC N``
  styles) are left out;
- any other paragraph with text (list items included) -> ``paragraph``; tabs and line breaks
  stay as ``\\t`` and ``\\n``;
- a table -> one passage per row, one ``cell`` span per non-empty cell (a cell spanning columns
  counts once, the continuation of a vertically merged cell not at all; a nested table's text
  joins its cell's text).

Headers, footers, footnotes, comments and text boxes are not body text. DOCX carries no page
layout, so spans have heading paths and no page numbers. The title is the first heading, else
the document's core ``title`` property.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table, _Cell
from docx.text.paragraph import Paragraph
from lxml import etree

from planner_svc.ingest.document import DocumentBuilder, ParsedDocument
from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES
from planner_svc.ingest.readers.base import DOCX, ReaderError, damaged

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_TOC_STYLE = re.compile(r"^toc\s*(?:heading|\d)$", re.IGNORECASE)
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _outline_value(element: etree._Element) -> int | None:
    found = element.find(f"{_W}pPr/{_W}outlineLvl")
    value = found.get(f"{_W}val") if found is not None else None
    return int(value) if value is not None and value.isdigit() else None


class _Styles:
    """Paragraph styles of one document, read once from ``styles.xml`` (python-docx resolves
    a paragraph's style by scanning every style, which dominated reading time)."""

    def __init__(self, document: docx.document.Document) -> None:
        self._name: dict[str, str] = {}
        self._based_on: dict[str, str] = {}
        self._outline: dict[str, int] = {}
        self.default = ""
        for style in document.styles.element.iterchildren(f"{_W}style"):
            if style.get(f"{_W}type") != "paragraph":
                continue
            style_id = style.get(f"{_W}styleId") or ""
            name = style.find(f"{_W}name")
            self._name[style_id] = (name.get(f"{_W}val") or "") if name is not None else ""
            based = style.find(f"{_W}basedOn")
            if based is not None:
                self._based_on[style_id] = based.get(f"{_W}val") or ""
            outline = _outline_value(style)
            if outline is not None:
                self._outline[style_id] = outline
            if style.get(f"{_W}default") in ("1", "true", "on") and not self.default:
                self.default = style_id
        self._levels: dict[str, tuple[int, bool]] = {}

    def of(self, paragraph: Paragraph) -> tuple[int, bool]:
        """(heading level of the paragraph, 0 for body text; whether its style is a
        table-of-contents entry)."""
        style_id = paragraph._p.style
        if not style_id or style_id not in self._name:
            style_id = self.default
        if style_id not in self._levels:
            self._levels[style_id] = self._heading(style_id)
        level, toc = self._levels[style_id]
        own = _outline_value(paragraph._p)
        if not level and own is not None and 0 <= own < 9:  # 9 = body text
            level = min(own + 1, 6)
        return level, toc

    def _heading(self, style_id: str) -> tuple[int, bool]:
        name = self._name.get(style_id, "").strip()
        found = _HEADING_STYLE.match(name)
        if found:
            return min(int(found.group(1)), 6), False
        if name.lower() == "title":
            return 1, False
        current, seen = style_id, 0
        while current and seen < 16:  # base-style chains are short; stop on a loop
            outline = self._outline.get(current)
            if outline is not None:
                return (min(outline + 1, 6) if 0 <= outline < 9 else 0), False
            current = self._based_on.get(current, "")
            seen += 1
        return 0, bool(_TOC_STYLE.match(name))


def _blocks(parent: object, container: etree._Element) -> Iterator[Paragraph | Table]:
    """Paragraphs and tables of a body (or content control), in document order."""
    for child in container.iterchildren():
        if child.tag == f"{_W}p":
            yield Paragraph(child, parent)  # type: ignore[arg-type]
        elif child.tag == f"{_W}tbl":
            yield Table(child, parent)  # type: ignore[arg-type]
        elif child.tag == f"{_W}sdt":
            gallery = child.find(f"{_W}sdtPr/{_W}docPartObj/{_W}docPartGallery")
            if gallery is not None and "contents" in (gallery.get(f"{_W}val") or "").lower():
                continue
            for content in child.iterchildren(f"{_W}sdtContent"):
                yield from _blocks(parent, content)


def _cell_text(cell: _Cell) -> str:
    parts: list[str] = []
    for block in _blocks(cell, cell._tc):
        if isinstance(block, Paragraph):
            parts.append(block.text)
        else:
            parts.extend(_cell_text(c) for row in _rows(block) for c in row)
    return " ".join(" ".join(parts).split())


def _rows(table: Table) -> Iterator[list[_Cell]]:
    for tr in table._tbl.tr_lst:
        yield [_Cell(tc, table) for tc in tr.tc_lst if tc.vMerge != "continue"]


def _open(data: bytes) -> docx.document.Document:
    if data.startswith(_OLE2):
        raise ReaderError(
            "text",
            "encrypted DOCX or legacy Word .doc (an OLE2 compound file, not a ZIP package)",
            media_type=DOCX,
        )
    try:
        return docx.Document(io.BytesIO(data))
    except (
        zipfile.BadZipFile,
        PackageNotFoundError,
        KeyError,
        ValueError,
        etree.XMLSyntaxError,
        OSError,
        EOFError,
    ) as exc:
        raise damaged(DOCX, str(exc) or type(exc).__name__) from exc


def read_docx(
    data: bytes,
    *,
    max_passage_bytes: int = DEFAULT_MAX_PASSAGE_BYTES,
    min_passage_bytes: int = 0,
) -> ParsedDocument:
    """Read a DOCX document's body (module docstring).

    Args:
        data: the file's bytes.
        max_passage_bytes, min_passage_bytes: passage limits, UTF-8 bytes
            (:class:`planner_svc.ingest.document.DocumentBuilder`).

    Returns:
        Canonical text, spans (UTF-8 byte offsets; locations carry heading paths) and passages.

    Raises:
        ReaderError: (``text``) not a readable DOCX package (``damaged DOCX: ...``), or an
            encrypted one.
        InvalidRequest: (``max_passage_bytes``) below 64.
    """
    document = _open(data)
    builder = DocumentBuilder(
        max_passage_bytes=max_passage_bytes, min_passage_bytes=min_passage_bytes
    )
    try:
        styles = _Styles(document)
        for block in _blocks(document, document.element.body):
            if isinstance(block, Table):
                first = True
                for cells in _rows(block):
                    texts = [_cell_text(c) for c in cells]
                    if any(texts):
                        builder.add_table_row(texts, first=first)
                        first = False
            else:
                level, toc = styles.of(block)
                if toc:
                    continue
                if level:
                    builder.add_block("heading", " ".join(block.text.split()), level=level)
                else:
                    builder.add_block("paragraph", block.text)
        title = " ".join((document.core_properties.title or "").split())
    except (KeyError, ValueError, etree.XMLSyntaxError) as exc:
        raise damaged(DOCX, str(exc) or type(exc).__name__) from exc
    return builder.finish(DOCX, fallback_title=title or None)
