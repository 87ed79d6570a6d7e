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
import unicodedata
from collections.abc import Sequence

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from planner_svc.ingest.document import DocumentBuilder, ParsedDocument
from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES
from planner_svc.ingest.readers.base import PDF, ReaderError, damaged
from planner_svc.ingest.readers.bidi import has_rtl, visual_to_logical
from planner_svc.ingest.readers.pdf_layout import Line, is_cjk, layout

_LOCK = threading.Lock()
_LINE_BREAKS = (0x0D, 0x0A)
_HYPHEN_MARKERS = (0x02, 0xFFFE)
_BLANKS = (0x20, 0x09, 0xA0)
_WORD_GAP = 0.25
"""A gap wider than this share of the font size between two glyphs is a word space."""
_SAME_BASELINE = 0.25
"""Lines whose baselines differ by at most this share of the font size are one line."""


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

    def text(self, indexes: Sequence[int]) -> str:
        data = b"".join(self.units[i].to_bytes(2, "little") for i in indexes)
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

    def clusters(self, indexes: Sequence[int]) -> list[str]:
        """The characters at ``indexes`` in visual order: units sharing one box (a ligature's
        characters, a surrogate pair) move together, sorted by the box's centre; a gap wider
        than :data:`_WORD_GAP` times the font size between two clusters gets a space unless
        both are CJK (PDFium drops a space where it breaks a line of right-to-left glyphs).

        PDFium gives the characters of one right-to-left glyph in reverse (the lam-alef
        ligature comes out alef-lam): a cluster of right-to-left letters is turned back."""
        groups: list[tuple[float, float, int, list[int]]] = []
        last: tuple[float, float, float, float] | None = None
        for i in indexes:
            box = self.box(i)
            if groups and (box == last or 0xDC00 <= self.units[i] <= 0xDFFF):
                groups[-1][3].append(i)
            else:
                groups.append((box[0], box[1], i, [i]))
            last = box
        groups.sort(key=lambda g: ((g[0] + g[1]) / 2, g[2]))
        out: list[str] = []
        previous_right: float | None = None
        for left, right, first, units in groups:
            text = self.text(units)
            if len(units) > 1 and all(_rtl_letter(ch) for ch in text):
                text = text[::-1]
            blank = not text.strip()
            gap = left - previous_right if previous_right is not None else 0.0
            spaced = not (is_cjk(out[-1][-1:]) and is_cjk(text[:1])) if out else False
            if not blank and spaced and out[-1].strip() and gap > _WORD_GAP * self.size(first):
                out.append(" ")
            if not blank or (out and out[-1].strip()):
                out.append(text)
            if not blank:
                previous_right = right
        return out

    def logical(self, indexes: Sequence[int]) -> str:
        """Text at ``indexes`` in logical order from the characters' positions; PDFium joins
        a hyphenated line with the next at a line-end hyphen marker, so each physical line
        between markers is reordered on its own."""
        pieces: list[str] = []
        line: list[int] = []
        for i in indexes:
            if self.units[i] in _HYPHEN_MARKERS:
                pieces.append(visual_to_logical(self.clusters(line)) + "\x02")
                line = []
            else:
                line.append(i)
        pieces.append(visual_to_logical(self.clusters(line)))
        return "".join(pieces)

    def segments(self) -> list[list[int]]:
        """Indexes of each line PDFium found (line breaks left out), lines without ink
        dropped. PDFium joins a line that ends in a hyphen with the text that follows it in
        the content (the next line, or a footer); the line is cut after the hyphen marker.
        PDFium may also run two lines together without a break (after a line whose glyphs
        it placed one by one): a line is cut where the baseline moves by more than
        :data:`_SAME_BASELINE` of the font size."""
        out: list[list[int]] = []
        current: list[int] = []
        last_baseline: float | None = None
        for i, unit in enumerate([*self.units, 0x0A]):
            inked = (i < self.count and unit not in _LINE_BREAKS and unit not in _BLANKS
                     and unit not in _HYPHEN_MARKERS)
            if inked:
                baseline = self.origin(i)[1]
                moved = (last_baseline is not None
                         and abs(baseline - last_baseline) > _SAME_BASELINE * self.size(i))
                if moved and any(self.units[j] not in _BLANKS for j in current):
                    out.append(current)
                    current = []
                last_baseline = baseline
            if unit not in _LINE_BREAKS:
                current.append(i)
            if unit in _LINE_BREAKS or unit in _HYPHEN_MARKERS:
                if any(self.units[j] not in _BLANKS for j in current):
                    out.append(current)
                current = []
        return out


def _rtl_letter(ch: str) -> bool:
    return unicodedata.bidirectional(ch) in ("R", "AL", "NSM")


def _page_lines(page: pdfium.PdfPage, number: int) -> list[Line]:
    """The page's lines: PDFium's lines, with consecutive ones on one baseline joined (PDFium
    breaks a line where glyphs are placed right to left, or individually); a joined line, or
    one with right-to-left script, is read from its characters' positions."""
    height = float(page.get_height())
    textpage = page.get_textpage()
    try:
        chars = _Chars(textpage)
        groups: list[list[list[int]]] = []
        last_baseline = 0.0
        for segment in chars.segments():
            inked = [j for j in segment if chars.units[j] not in _BLANKS]
            size = chars.size(inked[len(inked) // 2])
            baseline = chars.origin(inked[0])[1]
            if groups and abs(baseline - last_baseline) <= _SAME_BASELINE * size:
                groups[-1].append(segment)
            else:
                groups.append([segment])
            last_baseline = chars.origin(inked[-1])[1]
        return [_line(chars, group, number, height) for group in groups]
    finally:
        textpage.close()


def _line(chars: _Chars, group: list[list[int]], number: int, height: float) -> Line:
    indexes = [i for segment in group for i in segment]
    if len(group) > 1 or has_rtl(chars.text(indexes)):
        text = chars.logical(indexes)
    else:
        text = chars.text(indexes)
    inked = [j for j in indexes if chars.units[j] not in _BLANKS]
    ends = [j for segment in group for j in (segment[0], segment[-1])]
    ends = [j for j in ends if chars.units[j] not in _BLANKS] or inked[:1]
    sizes = sorted(chars.size(j) for j in (inked[0], inked[len(inked) // 2], inked[-1]))
    x, baseline = chars.origin(inked[0])
    return Line(
        page=number,
        text=text,
        size=sizes[1],
        baseline=baseline,
        left=min([x, *(chars.box(j)[0] for j in ends)]),
        right=max(chars.box(j)[1] for j in ends),
        page_height=height,
        last_baseline=chars.origin(inked[-1])[1],
    )


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
