"""Round trips: documents of every format written from known sentences and read back.

Hypothesis draws a document (sections with a heading and paragraphs of sentences from fixed
pools: accented Latin, Greek, Cyrillic, CJK, Hangul, emoji, ligature characters, Latin with an
embedded Hebrew or Arabic phrase, right-to-left paragraphs in Hebrew and Arabic; tables and
code blocks) and, for PDFs, a page size, hyphenated line ends, forced page breaks, empty pages
and running footers. Each format's writer (``tests/docgen.py``) puts it into bytes with its
furniture around it, :func:`read_document` reads it back, and for every sentence, heading,
cell and code line:

- it appears exactly once in the canonical text (PDF: ligatures expanded), in document order;
- its first and last characters lie in structural spans of the expected kind whose locations
  name the expected heading path, notebook cell, and page (the page each end was drawn on);
- no furniture text (navigation, banner, cookie notice, sidebar, footer, page header and
  footer, notebook outputs, running PDF footers) appears.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from planner_svc.ingest.document import ParsedDocument, Span
from planner_svc.ingest.readers import read_document
from planner_svc.ingest.readers.pdf_layout import LIGATURES
from planner_svc.store.text import canonicalize
from tests.docgen import (
    FURNITURE,
    Block,
    Code,
    Heading,
    Para,
    PdfWriter,
    Table,
    docx_document,
    html_document,
    markdown_document,
    notebook_document,
    require_fonts,
)

LTR = (
    "The quick brown fox jumps over the lazy dog.",
    "Information retrieval systems evaluate documents carefully.",
    "Caf\u00e9 owners in Z\u00fcrich serve cr\u00e8me br\u00fbl\u00e9e daily.",
    "\u0397 \u03b3\u03c1\u03ae\u03b3\u03bf\u03c1\u03b7 \u03b1\u03bb\u03b5\u03c0\u03bf\u03cd "
    "\u03c0\u03b7\u03b4\u03ac \u03c0\u03ac\u03bd\u03c9 \u03b1\u03c0\u03cc \u03c4\u03bf\u03bd "
    "\u03c3\u03ba\u03cd\u03bb\u03bf.",
    "\u0411\u044b\u0441\u0442\u0440\u0430\u044f \u043b\u0438\u0441\u0430 "
    "\u043f\u0440\u044b\u0433\u0430\u0435\u0442 \u0447\u0435\u0440\u0435\u0437 "
    "\u0441\u043e\u0431\u0430\u043a\u0443.",
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3042\u308a\u591a\u304f\u306e"
    "\u4eba\u3005\u304c\u4f4f\u3093\u3067\u3044\u308b\u3002",
    "\u5317\u4eac\u662f\u4e2d\u56fd\u7684\u9996\u90fd\u3002",
    "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\ub3c4 \uc5ec\uae30\uc5d0 \uc788\uc2b5\ub2c8\ub2e4.",
    "Emoji travel fast \U0001f680 and land softly \U0001f30d.",
    "The \ufb01nal o\ufb03ce \ufb02ow was e\ufb03cient.",
    "Mixed words with \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd inside the sentence.",
    "Another mixed line with \u0645\u0631\u062d\u0628\u0627 "
    "\u0628\u0627\u0644\u0639\u0627\u0644\u0645 in the middle.",
    "Extraordinary circumstances require remarkable improvisation.",
    "Librarians catalogue manuscripts according to provenance.",
)
RTL = (
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd \u05d5\u05d2\u05dd \u05e2\u05d5\u05d3 "
    "\u05de\u05d9\u05dc\u05d9\u05dd \u05d1\u05e2\u05d1\u05e8\u05d9\u05ea.",
    "\u05e1\u05e4\u05e8\u05d9\u05dd \u05e8\u05d1\u05d9\u05dd \u05e0\u05db\u05ea\u05d1\u05d5 "
    "\u05e2\u05dc \u05d4\u05e0\u05d5\u05e9\u05d0 \u05d4\u05d6\u05d4.",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 \u0648\u0643\u064a"
    "\u0641 \u062d\u0627\u0644\u0643 \u0627\u0644\u064a\u0648\u0645.",
    "\u0644\u0627 \u0623\u0639\u0631\u0641 \u0627\u0644\u062c\u0648\u0627\u0628 "
    "\u0627\u0644\u0635\u062d\u064a\u062d.",
)
HEADINGS = (
    "Overview",
    "M\u00e9thodes d\u2019analyse",
    "\u7d50\u679c\u3068\u8003\u5bdf",
    "Appendix notes",
    "Further reading",
    "\u05ea\u05d5\u05e6\u05d0\u05d5\u05ea",
)
CELLS = ("alpha cell", "\u00fcber cell", "\u6771\u4eac cell", "omega cell")
CODE_LINES = ("total = sum(values)", "print(\u00e9t\u00e9)")

FORMATS = ("html", "markdown", "plain", "docx", "notebook", "pdf")
SETTINGS = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: PDFs are slow to write
)


@pytest.fixture(autouse=True, scope="module")
def _fonts() -> None:
    try:
        require_fonts()
    except RuntimeError as exc:
        pytest.fail(str(exc))


@dataclass(frozen=True)
class PdfOptions:
    width_pt: float
    lines_per_page: int
    hyphenate: tuple[bool, ...]
    breaks_after: frozenset[int]
    blank_after: frozenset[int]
    footer: bool


@st.composite
def documents(draw: st.DrawFn) -> list[Block]:
    ltr = list(draw(st.permutations(LTR)))
    rtl = list(draw(st.permutations(RTL)))
    headings = list(draw(st.permutations(HEADINGS)))
    blocks: list[Block] = []
    for _ in range(draw(st.integers(1, 3))):
        if not headings:
            break
        blocks.append(Heading(draw(st.sampled_from([1, 2])), headings.pop()))
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.integers(0, 4)) == 0 and rtl:
                count = draw(st.integers(1, min(2, len(rtl))))
                blocks.append(Para(tuple(rtl.pop() for _ in range(count)), rtl=True))
            elif ltr:
                count = draw(st.integers(1, min(4, len(ltr))))
                blocks.append(Para(tuple(ltr.pop() for _ in range(count))))
    if draw(st.booleans()):
        blocks.append(Table((CELLS[:2], CELLS[2:])))
    if draw(st.booleans()):
        blocks.append(Code("\n".join(CODE_LINES)))
    return blocks


@st.composite
def pdf_options(draw: st.DrawFn, blocks: list[Block]) -> PdfOptions:
    n = len(blocks)
    drawn = [i for i, b in enumerate(blocks) if isinstance(b, Heading | Para)]
    footer = draw(st.booleans()) and len(drawn) >= 3
    breaks = set(draw(st.sets(st.integers(0, max(0, n - 2)), max_size=2)))
    if footer:
        breaks.add(drawn[1])  # two pages with content at least, so the footer recurs
    return PdfOptions(
        width_pt=draw(st.sampled_from([220.0, 300.0, 420.0])),
        lines_per_page=draw(st.integers(6, 16)),
        hyphenate=tuple(draw(st.booleans()) for _ in range(n)),
        breaks_after=frozenset(breaks),
        blank_after=frozenset(draw(st.sets(st.integers(0, max(0, n - 2)), max_size=1))),
        footer=footer,
    )


@dataclass(frozen=True)
class Expect:
    text: str
    kind: str
    path: tuple[str, ...]
    cell: int | None
    pages: tuple[int, int] | None


def _expectations(blocks: list[Block], fmt: str, pdf_pages: list[tuple[int, int]],
                  heading_pages: list[int]) -> list[Expect]:  # fmt: skip
    out: list[Expect] = []
    stack: list[tuple[int, str]] = []
    sentence_pages = iter(pdf_pages)
    heading_page = iter(heading_pages)
    for index, block in enumerate(blocks):
        cell = index if fmt == "notebook" else None
        if isinstance(block, Heading):
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.text))
        path = tuple(t for _, t in stack) if fmt != "plain" else ()
        plain = fmt == "plain"
        if isinstance(block, Heading):
            pages = (next(heading_page),) * 2 if fmt == "pdf" else None
            out.append(Expect(block.text, "paragraph" if plain else "heading", path, cell, pages))
        elif isinstance(block, Para):
            for sentence in block.sentences:
                pages = next(sentence_pages) if fmt == "pdf" else None
                text = sentence.translate(LIGATURES) if fmt == "pdf" else sentence
                out.append(Expect(text, "paragraph", path, cell, pages))
        elif isinstance(block, Table) and fmt != "pdf":
            kind = "paragraph" if plain else "cell"
            out.extend(Expect(c, kind, path, cell, None) for row in block.rows for c in row)
        elif isinstance(block, Code) and fmt != "pdf":
            kind = "paragraph" if plain or fmt == "docx" else "code"
            out.extend(Expect(line, kind, path, cell, None) for line in CODE_LINES)
    return out


def _write(fmt: str, blocks: list[Block], options: PdfOptions) -> tuple[bytes, str, list[
        tuple[int, int]], list[int]]:  # fmt: skip
    if fmt == "html":
        return html_document(blocks), "page.html", [], []
    if fmt in ("markdown", "plain"):
        return markdown_document(blocks), "doc.md" if fmt == "markdown" else "doc.txt", [], []
    if fmt == "docx":
        return docx_document(blocks), "doc.docx", [], []
    if fmt == "notebook":
        return notebook_document(blocks), "nb.ipynb", [], []
    writer = PdfWriter(
        width_pt=options.width_pt, lines_per_page=options.lines_per_page, footer=options.footer
    )
    for index, block in enumerate(blocks):
        if isinstance(block, Heading):
            writer.heading(block)
        elif isinstance(block, Para):
            writer.paragraph(block, hyphenate=options.hyphenate[index])
        if index in options.blank_after:
            writer.blank_page()
        elif index in options.breaks_after:
            writer.break_page()
    return writer.output(), "doc.pdf", writer.plan.sentence_pages, writer.plan.heading_pages


def _span_at(spans: list[Span], starts: list[int], offset: int) -> Span | None:
    i = bisect.bisect_right(starts, offset) - 1
    return spans[i] if i >= 0 and spans[i].start <= offset < spans[i].end else None


def _check(doc: ParsedDocument, expects: list[Expect], fmt: str) -> None:
    text = doc.text
    data = text.encode("utf-8")
    spans = sorted(doc.spans, key=lambda s: (s.start, s.end))
    starts = [s.start for s in spans]
    for a, b in itertools.pairwise(spans):
        assert a.end <= b.start, f"{fmt}: spans overlap: {a} {b}"
    last = -1
    for item in expects:
        wanted = canonicalize(item.text)
        assert text.count(wanted) == 1, f"{fmt}: {wanted!r} found {text.count(wanted)} times"
        at = text.index(wanted)
        assert at > last, f"{fmt}: {wanted!r} out of order"
        last = at
        first = len(text[:at].encode("utf-8"))
        end = first + len(wanted.encode("utf-8")) - 1
        for offset, which in ((first, 0), (end, 1)):
            span = _span_at(spans, starts, offset)
            assert span is not None, f"{fmt}: {wanted!r} byte {offset} is in no span"
            where = span.location
            assert span.kind == item.kind, f"{fmt}: {wanted!r} in a {span.kind} span"
            assert where.heading_path == item.path, f"{fmt}: {wanted!r} under {where}"
            assert where.cell_index == item.cell, f"{fmt}: {wanted!r} in {where}"
            page = item.pages[which] if item.pages else None
            assert where.page == page, f"{fmt}: {wanted!r} end {which} on {where}, not {page}"
            assert data[span.start : span.end].decode("utf-8")  # on code point boundaries
    for furniture in (*FURNITURE, "script text", "We use cookies"):
        assert furniture not in text, f"{fmt}: furniture {furniture!r} in the text"


@SETTINGS
@given(data=st.data())
def test_every_format_round_trips_its_sentences(data: st.DataObject) -> None:
    blocks = data.draw(documents())
    options = data.draw(pdf_options(blocks))
    for fmt in FORMATS:
        raw, name, pages, heading_pages = _write(fmt, blocks, options)
        doc = read_document(raw, name=name, max_passage_bytes=120)
        assert doc.media_type, fmt
        _check(doc, _expectations(blocks, fmt, pages, heading_pages), fmt)


def test_a_heading_longer_than_the_cjk_body_text_stays_a_heading() -> None:
    """A found case: one heading of 18 Latin characters over one Chinese sentence of 9. By
    characters the heading's size held the most text and was taken for the body size, so the
    heading read as a paragraph; by display columns the two sizes hold 18 each, and the
    smaller is the body."""
    blocks: list[Block] = [
        Heading(2, HEADINGS[1]),
        Para((LTR[6],)),
        Table(rows=((CELLS[0], CELLS[1]), (CELLS[2], CELLS[3]))),
    ]
    options = PdfOptions(width_pt=420.0, lines_per_page=14, hyphenate=(False, True, False),
                         breaks_after=frozenset(), blank_after=frozenset(), footer=False)
    raw, name, pages, heading_pages = _write("pdf", blocks, options)
    doc = read_document(raw, name=name, max_passage_bytes=120)
    _check(doc, _expectations(blocks, "pdf", pages, heading_pages), "pdf")
    assert [span.kind for span in doc.spans][:2] == ["heading", "paragraph"]


def test_a_pdf_line_pdfium_runs_into_the_next_is_read_as_two_lines() -> None:
    """A found case: at the top of page 2 PDFium reports the first line's glyphs one by one
    and runs the next line into it without a break; the reader must not merge their
    characters into one line by position."""
    blocks: list[Block] = [
        Heading(1, HEADINGS[5]),
        Para((LTR[12], LTR[7], LTR[2])),
        Para((LTR[13], LTR[11], LTR[6])),
        Heading(1, HEADINGS[0]),
        Para((LTR[0],)),
    ]
    options = PdfOptions(width_pt=220.0, lines_per_page=6, hyphenate=(False,) * 5,
                         breaks_after=frozenset(), blank_after=frozenset(), footer=False)
    raw, name, pages, heading_pages = _write("pdf", blocks, options)
    assert pages[-1] == (2, 2)  # the sentence is on page 2, as in the case found
    doc = read_document(raw, name=name, max_passage_bytes=120)
    _check(doc, _expectations(blocks, "pdf", pages, heading_pages), "pdf")
    assert doc.text.endswith("Overview\n\nThe quick brown fox jumps over the lazy dog.")
