"""PDF reader (PDFium through pypdfium2): text per page in reading order, with page locations.

PDFium opens the file and orders each page's characters into lines (the order its text
selection uses); this module reads those lines with their font size, baseline and extent, puts
a line holding right-to-left script back into logical order (:mod:`.bidi`, from the characters'
positions), and hands the lines to :func:`.pdf_layout.layout` (running headers and footers,
headings by font size, paragraphs, de-hyphenation, ligatures, paragraphs across page breaks).

Every span's location names its 1-based page; a paragraph running across a page break keeps
one text but gets one span per page. Pages without text produce nothing (scanned pages have no
text layer: there is no OCR). Headings found by font size give heading paths as well. A PDF
encrypted with an empty user password (permissions only) opens like any other. The title is
the first heading, else the document's ``Title`` metadata.

PDFium is not thread-safe: every call into it runs under one lock.
"""

from __future__ import annotations

import ctypes
import threading

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from planner_svc.ingest.document import DocumentBuilder, ParsedDocument
from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES
from planner_svc.ingest.readers.base import PDF, ReaderError, damaged
from planner_svc.ingest.readers.bidi import has_rtl, visual_to_logical
from planner_svc.ingest.readers.pdf_layout import Line, layout

_LOCK = threading.Lock()
_LINE_BREAKS = (0x0D, 0x0A)
_HYPHEN_MARKERS = (0x02, 0xFFFE)


class _Chars:
    """Character access for one PDFium text page (indexes are UTF-16 code units)."""

    def __init__(self, textpage: pdfium.PdfTextPage) -> None:
        self.raw = textpage.raw
        self.count = textpage.count_chars()
        buffer = (ctypes.c_ushort * (self.count + 1))()
        if self.count:
            pdfium_c.FPDFText_GetText(self.raw, 0, self.count, buffer)
        self.units = list(buffer[: self.count])
        self._l, self._r = ctypes.c_double(), ctypes.c_double()
        self._b, self._t = ctypes.c_double(), ctypes.c_double()

    def text(self, start: int, end: int) -> str:
        data = b"".join(u.to_bytes(2, "little") for u in self.units[start:end])
        return data.decode("utf-16-le", errors="replace")

    def box(self, index: int) -> tuple[float, float, float, float]:
        """(left, right, bottom, top) of a character, points."""
        pdfium_c.FPDFText_GetCharBox(self.raw, index, self._l, self._r, self._b, self._t)
        return self._l.value, self._r.value, self._b.value, self._t.value

    def origin(self, index: int) -> tuple[float, float]:
        x, y = ctypes.c_double(), ctypes.c_double()
        pdfium_c.FPDFText_GetCharOrigin(self.raw, index, x, y)
        return x.value, y.value

    def size(self, index: int) -> float:
        return float(pdfium_c.FPDFText_GetFontSize(self.raw, index))

    def clusters(self, start: int, end: int) -> list[str]:
        """The characters of ``[start, end)`` in visual order: units sharing one box (a
        ligature's characters, a surrogate pair) move together, sorted by the box's centre.

        PDFium lists a right-to-left run right to left and then also reverses the characters
        one glyph maps to (the lam-alef ligature comes out alef-lam); such a cluster, met while
        the index order runs leftwards, is turned back."""
        groups: list[tuple[float, int, list[int]]] = []
        last: tuple[float, float, float, float] | None = None
        for i in range(start, end):
            box = self.box(i)
            if groups and (box == last or 0xDC00 <= self.units[i] <= 0xDFFF):
                groups[-1][2].append(i)
            else:
                groups.append(((box[0] + box[1]) / 2, i, [i]))
            last = box
        texts: list[tuple[float, int, str]] = []
        for k, (centre, first, units) in enumerate(groups):
            text = self.text(units[0], units[-1] + 1)
            surrogates = any(0xD800 <= self.units[u] <= 0xDFFF for u in units)
            if len(units) > 1 and not surrogates:
                neighbour = groups[k + 1][0] if k + 1 < len(groups) else None
                if neighbour is None and k > 0:
                    neighbour = 2 * centre - groups[k - 1][0]
                if neighbour is not None and neighbour < centre:
                    text = text[::-1]
            texts.append((centre, first, text))
        texts.sort(key=lambda g: (g[0], g[1]))
        return [text for _, _, text in texts]

    def logical(self, start: int, end: int) -> str:
        """Text of ``[start, end)`` in logical order from the characters' positions; PDFium
        joins a hyphenated line with the next at a line-end hyphen marker, so each physical
        line between markers is reordered on its own."""
        pieces: list[str] = []
        begin = start
        for i in range(start, end + 1):
            if i == end or self.units[i] in _HYPHEN_MARKERS:
                pieces.append(visual_to_logical(self.clusters(begin, i)))
                if i < end:
                    pieces.append("\x02")
                begin = i + 1
        return "".join(pieces)


def _page_lines(page: pdfium.PdfPage, number: int) -> list[Line]:
    height = float(page.get_height())
    textpage = page.get_textpage()
    try:
        chars = _Chars(textpage)
        lines: list[Line] = []
        start = 0
        for i in range(chars.count + 1):
            if i < chars.count and chars.units[i] not in _LINE_BREAKS:
                continue
            inked = [j for j in range(start, i) if chars.units[j] not in (0x20, 0x09, 0xA0)]
            if inked:
                text = chars.text(start, i)
                if has_rtl(text):
                    text = chars.logical(start, i)
                first, last = inked[0], inked[-1]
                x, baseline = chars.origin(first)
                last_baseline = chars.origin(last)[1]
                sizes = sorted(chars.size(j) for j in (first, inked[len(inked) // 2], last))
                lines.append(
                    Line(
                        page=number,
                        text=text,
                        size=sizes[1],
                        baseline=baseline,
                        left=min(x, chars.box(first)[0]),
                        right=chars.box(last)[1],
                        page_height=height,
                        last_baseline=last_baseline,
                    )
                )
            start = i + 1
        return lines
    finally:
        textpage.close()


def _open(data: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise ReaderError(
                "text", "encrypted PDF: a password is required to open it", media_type=PDF
            ) from exc
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise ReaderError(
                "text", "encrypted PDF: unsupported security handler", media_type=PDF
            ) from exc
        raise damaged(PDF, str(exc)) from exc


def read_pdf(
    data: bytes,
    *,
    max_passage_bytes: int = DEFAULT_MAX_PASSAGE_BYTES,
    min_passage_bytes: int = 0,
) -> ParsedDocument:
    """Read the text of a PDF, page by page (module docstring).

    Args:
        data: the file's bytes.
        max_passage_bytes, min_passage_bytes: passage limits, UTF-8 bytes
            (:class:`planner_svc.ingest.document.DocumentBuilder`).

    Returns:
        Canonical text, spans (UTF-8 byte offsets; each location names a 1-based page) and
        passages.

    Raises:
        ReaderError: (``text``) ``encrypted PDF: ...`` when a password is needed or the
            security handler is unknown; ``damaged PDF: ...`` when PDFium cannot load the
            file or one of its pages.
        InvalidRequest: (``max_passage_bytes``) below 64.
    """
    builder = DocumentBuilder(
        max_passage_bytes=max_passage_bytes, min_passage_bytes=min_passage_bytes
    )
    with _LOCK:
        document = _open(data)
        try:
            pages: list[list[Line]] = []
            for index in range(len(document)):
                page = document[index]
                try:
                    pages.append(_page_lines(page, index + 1))
                finally:
                    page.close()
            title = str(document.get_metadata_dict(skip_empty=True).get("Title", ""))
        except pdfium.PdfiumError as exc:
            raise damaged(PDF, str(exc)) from exc
        finally:
            document.close()
    for block in layout(pages):
        if block.kind == "heading":
            builder.page = block.parts[0][0]
            builder.add_block("heading", block.text, level=block.level)
        else:
            builder.add_paged_block("paragraph", block.parts)
    return builder.finish(PDF, fallback_title=" ".join(title.split()) or None)
