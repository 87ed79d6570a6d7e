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
from docx.styles.style import BaseStyle
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


def _style_outline_level(style: BaseStyle | None) -> int | None:
    seen = 0
    while style is not None and seen < 16:  # base-style chains are short; stop on a loop
        values = style.element.xpath("./w:pPr/w:outlineLvl/@w:val")
        if values:
            return int(values[0])
        style = getattr(style, "base_style", None)
        seen += 1
    return None


def heading_level(paragraph: Paragraph) -> int:
    """Heading level 1..6 of a paragraph (module docstring), or 0 for body text."""
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    found = _HEADING_STYLE.match(name.strip())
    if found:
        return min(int(found.group(1)), 6)
    if name.strip().lower() == "title":
        return 1
    own = paragraph._p.xpath("./w:pPr/w:outlineLvl/@w:val")
    level = int(own[0]) if own else _style_outline_level(style)
    if level is not None and 0 <= level < 9:  # 9 = body text
        return min(level + 1, 6)
    return 0


def _is_toc(paragraph: Paragraph) -> bool:
    style = paragraph.style
    return style is not None and bool(_TOC_STYLE.match((style.name or "").strip()))


def _blocks(parent: object, container: etree._Element) -> Iterator[Paragraph | Table]:
    """Paragraphs and tables of a body (or content control), in document order."""
    for child in container.iterchildren():
        if child.tag == f"{_W}p":
            yield Paragraph(child, parent)  # type: ignore[arg-type]
        elif child.tag == f"{_W}tbl":
            yield Table(child, parent)  # type: ignore[arg-type]
        elif child.tag == f"{_W}sdt":
            gallery = child.xpath("./w:sdtPr/w:docPartObj/w:docPartGallery/@w:val")
            if gallery and "table of contents" in str(gallery[0]).lower():
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
        for block in _blocks(document, document.element.body):
            if isinstance(block, Table):
                first = True
                for cells in _rows(block):
                    texts = [_cell_text(c) for c in cells]
                    if any(texts):
                        builder.add_table_row(texts, first=first)
                        first = False
            elif not _is_toc(block):
                level = heading_level(block)
                if level:
                    builder.add_block("heading", " ".join(block.text.split()), level=level)
                else:
                    builder.add_block("paragraph", block.text)
        title = " ".join((document.core_properties.title or "").split())
    except (KeyError, ValueError, etree.XMLSyntaxError) as exc:
        raise damaged(DOCX, str(exc) or type(exc).__name__) from exc
    return builder.finish(DOCX, fallback_title=title or None)
