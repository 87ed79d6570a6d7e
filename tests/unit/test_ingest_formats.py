"""Ingestion of every format: exact ledger rows with their locations, documents as content
(bytes with a media type) or as text, and the per-format report of read, skipped and failed
documents."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner_svc.core.model import NOWHERE, Location
from planner_svc.ingest import DocumentIn, IngestReport, ingest_documents
from planner_svc.ingest.jsonl import read_jsonl
from planner_svc.ingest.model import FormatCounts, RejectedDocument, reason_class
from planner_svc.ingest.reading import rejected_format
from planner_svc.store import Store
from tests.docgen import (
    Code,
    Heading,
    Para,
    PdfWriter,
    Table,
    docx_document,
    html_document,
    markdown_document,
    notebook_document,
)

T = 1_750_000_000_000_000  # microseconds
NOW = T + 1_000
BLOCKS = [
    Heading(1, "Guide"),
    Para(("First words here.",)),
    Heading(2, "Setup"),
    Para(("Install the tool.", "Then run it.")),
    Table((("Key", "Value"), ("a", "1"))),
]
GUIDE = "Guide\n\nFirst words here.\n\nSetup\n\nInstall the tool. Then run it."
Row = tuple[int, int, str, str, str]


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "data") as s:
        yield s


def _pdf() -> bytes:
    """Two pages with a running footer: "Guide" and its paragraph on page 1, "Setup" and its
    paragraph on page 2."""
    writer = PdfWriter(width_pt=300, lines_per_page=6, footer=True, fonts=("sans",))
    writer.heading(Heading(1, "Guide"))
    writer.paragraph(Para(("First words here.",)))
    writer.break_page()
    writer.heading(Heading(2, "Setup"))
    writer.paragraph(Para(("Install the tool.", "Then run it.")))
    return writer.output()


def _content(source_id: str, data: bytes, media_type: str = "") -> DocumentIn:
    return DocumentIn(source_id=source_id, media_type=media_type, content=data,
                      version_tx_us=T, valid_from_us=T)


def _rows(store: Store, source_id: str) -> list[Row]:
    """Every ledger row of the source's version: (start, end, kind, text, location)."""
    data = (store.source_text(source_id, T) or "").encode("utf-8")
    return [(a, b, kind, data[a:b].decode("utf-8"), where.render())
            for a, b, kind, where in store.locations_of_version(source_id, T)]


def _ingest(store: Store, *docs: DocumentIn) -> IngestReport:
    return ingest_documents(store, None, list(docs), now_us=NOW)


def _headed() -> list[Row]:
    """The rows of the guide's headings and paragraphs (a heading's passage takes in its
    short paragraph: the merged span sits beside the structural ones)."""
    return [
        (0, 5, "heading", "Guide", "Guide"),
        (0, 24, "paragraph", "Guide\n\nFirst words here.", "Guide"),
        (7, 24, "paragraph", "First words here.", "Guide"),
        (26, 31, "heading", "Setup", "Guide \u203a Setup"),
        (26, 63, "paragraph", "Setup\n\nInstall the tool. Then run it.", "Guide \u203a Setup"),
        (33, 63, "paragraph", "Install the tool. Then run it.", "Guide \u203a Setup"),
    ]


CELLS: list[Row] = [
    (65, 68, "cell", "Key", "Guide \u203a Setup"),
    (71, 76, "cell", "Value", "Guide \u203a Setup"),
    (77, 78, "cell", "a", "Guide \u203a Setup"),
    (81, 82, "cell", "1", "Guide \u203a Setup"),
]


def test_html_main_content_with_heading_paths(store: Store) -> None:
    report = _ingest(store, _content("guide.html", html_document(BLOCKS)))
    assert report.errors == [] and report.ingested == 1
    assert store.source_text("guide.html", T) == GUIDE + "\n\nKey | Value\na | 1"
    assert _rows(store, "guide.html") == _headed() + CELLS  # no cookie banner, nav, footer
    assert store.source_title("guide.html") == "Guide"


def test_pdf_pages_from_one_without_the_running_footer(store: Store) -> None:
    report = _ingest(store, _content("guide.pdf", _pdf()))
    assert report.errors == [] and report.ingested == 1
    assert store.source_text("guide.pdf", T) == GUIDE  # "Confidential draft, page N" left out
    assert _rows(store, "guide.pdf") == [
        (0, 5, "heading", "Guide", "p. 1 \u00b7 Guide"),
        (0, 24, "paragraph", "Guide\n\nFirst words here.", "p. 1 \u00b7 Guide"),
        (7, 24, "paragraph", "First words here.", "p. 1 \u00b7 Guide"),
        (26, 31, "heading", "Setup", "p. 2 \u00b7 Guide \u203a Setup"),
        (26, 63, "paragraph", "Setup\n\nInstall the tool. Then run it.",
         "p. 2 \u00b7 Guide \u203a Setup"),
        (33, 63, "paragraph", "Install the tool. Then run it.",
         "p. 2 \u00b7 Guide \u203a Setup"),
    ]
    located = store.locations_of_version("guide.pdf", T)
    assert located[0][3] == Location(page=1, heading_path=("Guide",))
    assert located[-1][3] == Location(page=2, heading_path=("Guide", "Setup"))


def test_docx_headings_paragraphs_and_table_cells(store: Store) -> None:
    report = _ingest(store, _content("guide.docx", docx_document(BLOCKS)))
    assert report.errors == [] and report.ingested == 1
    assert store.source_text("guide.docx", T) == GUIDE + "\n\nKey | Value\na | 1"
    assert _rows(store, "guide.docx") == _headed() + CELLS  # no page header or footer


def test_notebook_cells_without_outputs(store: Store) -> None:
    notebook = notebook_document([Heading(1, "Guide"), Para(("First words here.",)),
                                  Code("x = 1"), Heading(2, "Setup"),
                                  Para(("Install the tool.",))])
    report = _ingest(store, _content("guide.ipynb", notebook))
    assert report.errors == [] and report.ingested == 1
    assert store.source_text("guide.ipynb", T) == (
        "# Guide\n\nFirst words here.\n\nx = 1\n\n## Setup\n\nInstall the tool."
    )
    # one cell never merges with another: each span names its own cell
    assert _rows(store, "guide.ipynb") == [
        (2, 7, "heading", "Guide", "cell 0 \u00b7 Guide"),
        (9, 26, "paragraph", "First words here.", "cell 1 \u00b7 Guide"),
        (28, 33, "code", "x = 1", "cell 2 \u00b7 Guide"),
        (38, 43, "heading", "Setup", "cell 3 \u00b7 Guide \u203a Setup"),
        (45, 62, "paragraph", "Install the tool.", "cell 4 \u00b7 Guide \u203a Setup"),
    ]


def test_markdown_and_text_as_content_equal_markdown_and_text_as_text(
    store: Store, tmp_path: Path
) -> None:
    markdown = markdown_document(BLOCKS)
    plain = b"First paragraph.\n\nSecond paragraph.\n"
    _ingest(store, _content("a.md", markdown),
            DocumentIn(source_id="b.md", text=markdown.decode(), media_type="text/markdown",
                       version_tx_us=T, valid_from_us=T),
            _content("a.txt", plain),
            DocumentIn(source_id="b.txt", text=plain, version_tx_us=T, valid_from_us=T))
    assert store.locations_of_version("a.md", T) == store.locations_of_version("b.md", T)
    assert store.locations_of_version("a.txt", T) == store.locations_of_version("b.txt", T)
    assert _rows(store, "a.md")[:2] == [
        (2, 7, "heading", "Guide", "Guide"),
        (2, 26, "paragraph", "Guide\n\nFirst words here.", "Guide"),
    ]
    assert {where for *_, where in store.locations_of_version("a.txt", T)} == {NOWHERE}
    assert store.source_text("a.md", T) == store.source_text("b.md", T)


def test_the_media_type_comes_from_the_content_not_the_name(store: Store) -> None:
    """Content with no media type is sniffed: a PDF named .txt is read as a PDF, an HTML page
    without an extension as HTML; an explicit supported type wins over the name."""
    report = _ingest(
        store,
        _content("scan.txt", _pdf()),
        _content("page", html_document(BLOCKS)),
        _content("notes.bin", markdown_document(BLOCKS), media_type="text/markdown"),
    )
    assert report.errors == [] and report.ingested == 3
    assert store.locations_of_version("scan.txt", T)[0][3].page == 1
    assert _rows(store, "page") == _headed() + CELLS
    assert _rows(store, "notes.bin")[0] == (2, 7, "heading", "Guide", "Guide")
    assert {fmt: c.read for fmt, c in report.formats.items()} == {
        "PDF": 1, "HTML": 1, "Markdown": 1}


def test_unreadable_files_are_skipped_and_reported_per_format(store: Store) -> None:
    from tests.mixed_corpus import PNG, locked_pdf

    pdf = _pdf()
    report = _ingest(
        store,
        _content("ok.pdf", pdf),
        _content("broken.pdf", pdf[: len(pdf) // 3]),
        _content("locked.pdf", locked_pdf()),
        _content("logo.png", PNG),
        _content("sheet.xlsx", b"PK\x03\x04 not really a zip"),
        _content("empty.html", b"<html><body><nav>Home</nav></body></html>"),
        DocumentIn(source_id="as-text.pdf", text="%PDF-1.4 ...", media_type="application/pdf"),
        DocumentIn(source_id="both.md", text="# A", content=b"# B"),
        _content("ok.html", html_document(BLOCKS)),
    )
    assert report.received == 9 and report.ingested == 2 and report.failed == 7
    assert report.skipped == 5
    reasons = dict(report.errors)
    assert reasons["broken.pdf"].startswith("text: damaged PDF: ")
    assert reasons["locked.pdf"] == "text: encrypted PDF: a password is required to open it"
    assert reasons["logo.png"] == "media_type: unsupported media type image/png"
    assert reasons["sheet.xlsx"] == "media_type: unsupported media type application/zip"
    assert reasons["empty.html"] == "text: is empty (no non-whitespace character)"
    assert reasons["as-text.pdf"] == ("media_type: application/pdf is a binary format: send "
                                      "the file's bytes as content, not as text")
    assert reasons["both.md"] == "text: text and content are both set: send one of them"
    assert report.formats == {
        "PDF": FormatCounts(read=1, skipped=3, reasons={
            "text: damaged PDF": 1, "text: encrypted PDF": 1,
            "media_type: application/pdf is a binary format": 1}),  # type: ignore[arg-type]
        "HTML": FormatCounts(read=1, failed=1, reasons={
            "text: is empty": 1}),  # type: ignore[arg-type]
        "image/png": FormatCounts(skipped=1, reasons={
            "media_type: unsupported media type image/png": 1}),  # type: ignore[arg-type]
        "application/zip": FormatCounts(skipped=1, reasons={
            "media_type: unsupported media type application/zip": 1}),  # type: ignore[arg-type]
        "Markdown": FormatCounts(failed=1, reasons={
            "text: text and content are both set": 1}),  # type: ignore[arg-type]
    }
    assert store.count_sources() == 2


def test_reason_classes_drop_the_detail() -> None:
    assert reason_class("text: damaged PDF: Failed to load document (PDFium: Data format "
                        "error).") == "text: damaged PDF"
    assert reason_class("text: not valid UTF-8 at byte 7") == "text: not valid UTF-8"
    assert reason_class("version_tx: 5 is not later than the latest version 9 of 'a'") == (
        "version_tx: 5 is not later than the latest version 9 of 'a'")
    assert reason_class("text: damaged notebook (cells is not a list)") == (
        "text: damaged notebook")
    assert reason_class("oops") == "oops"


def test_reports_merge_their_format_counts() -> None:
    one, two = IngestReport(), IngestReport()
    one.count_read("PDF")
    two.count_read("PDF")
    two.count_refused("PDF", "text: damaged PDF: x", skipped=True)
    two.count_refused("HTML", "text: is empty (no non-whitespace character)", skipped=False)
    one.merge(two)
    assert one.formats["PDF"] == FormatCounts(read=2, skipped=1,
                                              reasons={"text: damaged PDF": 1})  # type: ignore[arg-type]
    assert one.formats["HTML"].failed == 1 and one.skipped == 1


def test_json_lines_carry_content_as_base64(store: Store) -> None:
    pdf = _pdf()
    lines = [
        json.dumps({"sourceId": "guide.pdf", "content": base64.b64encode(pdf).decode(),
                    "mediaType": "application/pdf", "versionTx": str(T)}),
        json.dumps({"sourceId": "guide.html", "versionTx": T,
                    "content": base64.urlsafe_b64encode(html_document(BLOCKS)).decode()
                    .rstrip("=")}),
        json.dumps({"sourceId": "bad", "content": "not base64!"}),
        json.dumps({"sourceId": "num", "content": 7}),
    ]
    items = list(read_jsonl(lines))
    assert items[2] == ("bad", "content: not valid base64: Only base64 data is allowed")
    assert items[3] == ("num", "content: expected a base64 string, got int")
    docs = [d for d in items if isinstance(d, DocumentIn)]
    assert docs[0].content == pdf and docs[0].text == ""
    report = ingest_documents(store, None, docs, now_us=NOW)
    assert report.errors == [] and report.ingested == 2
    assert store.locations_of_version("guide.pdf", T)[-1][3].page == 2
    assert _rows(store, "guide.html") == _headed() + CELLS


@pytest.mark.parametrize(
    ("source_id", "media_type", "expected"),
    [
        ("", "", "unknown"),
        ("", "application/pdf", "PDF"),
        ("handbook.pdf", "", "PDF"),
        ("notes.md", "", "Markdown"),
        ("notes/plain", "", "text"),
        ("page", "text/html; charset=utf-8", "HTML"),
        ("photo", "image/png", "image/png"),
    ],
)
def test_a_rejected_document_counts_under_the_format_it_would_have_been_read_as(
    source_id: str, media_type: str, expected: str
) -> None:
    item = RejectedDocument(source_id=source_id, field="title", reason="not valid UTF-8",
                            media_type=media_type)
    assert rejected_format(item) == expected
