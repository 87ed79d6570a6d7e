"""PDF reader on PDFs written here (fpdf2, Noto fonts): exact text, spans and page locations;
encrypted and damaged files; right-to-left lines; running footers."""

from __future__ import annotations

import threading

import pytest

from planner_svc.ingest.document import ParsedDocument
from planner_svc.ingest.readers import ReaderError
from planner_svc.ingest.readers.pdf import read_pdf
from tests.docgen import Heading, Para, PdfWriter, require_fonts
from tests.property.test_reader_roundtrips import HEADINGS, LTR, RTL

Row = tuple[int, int, str, int | None, tuple[str, ...], str]


@pytest.fixture(autouse=True, scope="module")
def _fonts() -> None:
    try:
        require_fonts()
    except RuntimeError as exc:
        pytest.fail(str(exc))


def _rows(doc: ParsedDocument) -> list[Row]:
    data = doc.text.encode("utf-8")
    return [
        (
            s.start,
            s.end,
            s.kind,
            s.location.page,
            s.location.heading_path,
            data[s.start : s.end].decode("utf-8"),
        )
        for s in doc.spans
    ]


def _plain_pdf(text: str, **encryption: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text=text)
    if encryption:
        pdf.set_encryption(**encryption)
    return bytes(pdf.output())


def test_pages_headings_hyphens_ligatures_and_a_paragraph_across_a_page_break() -> None:
    writer = PdfWriter(width_pt=200, lines_per_page=3)
    writer.heading(Heading(1, "Field notes"))
    writer.paragraph(
        Para(("The \ufb01rst survey gathered environmental information quickly.",)),
        hyphenate=True,
    )
    writer.heading(Heading(2, "Second part"))
    writer.paragraph(
        Para(
            (
                "Readers keep one paragraph across the page break when the sentence goes on "
                "past the bottom of the page and continues",
                "onto the next page.",
            )
        )
    )
    writer.blank_page()
    writer.paragraph(Para(("After an empty page.",)))
    doc = read_pdf(writer.output())
    assert doc.text == (
        "Field notes\n\nThe first survey gathered environmental information quickly.\n\n"
        "Second part\n\nReaders keep one paragraph across the page break when the sentence "
        "goes on past the bottom of the page and continues onto the next page.\n\n"
        "After an empty page."
    )
    notes, second = ("Field notes",), ("Field notes", "Second part")
    assert _rows(doc) == [
        (0, 11, "heading", 1, notes, "Field notes"),
        (13, 73, "paragraph", 1, notes,
         "The first survey gathered environmental information quickly."),
        (75, 86, "heading", 1, second, "Second part"),
        (88, 114, "paragraph", 1, second, "Readers keep one paragraph"),
        (115, 224, "paragraph", 2, second, "across the page break when the sentence goes on past "
         "the bottom of the page and continues onto the next page."),
        (226, 246, "paragraph", 4, second, "After an empty page."),
    ]  # fmt: skip
    across = doc.passages[3]
    assert [s.location.page for s in across.spans] == [1, 2]
    assert across.text.startswith("Readers keep") and across.text.endswith("next page.")
    assert across.location.render() == "p. 1 \u00b7 Field notes \u203a Second part"
    assert doc.title == "Field notes" and doc.media_type == "application/pdf"


def test_right_to_left_lines_come_back_in_logical_order() -> None:
    writer = PdfWriter(width_pt=400, lines_per_page=12)
    sentences = [
        ("Hebrew \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd in a sentence.", False),
        ("\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd \u05d5\u05d2\u05dd \u05e2\u05d5\u05d3.",
         True),
        ("\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645. "
         "\u0643\u064a\u0641 \u062d\u0627\u0644\u0643\u061f", True),
        ("Arabic \u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 "
         "then English.", False),
        ("\u0633\u0644\u0627\u0645 \u0644\u0627 \u0641\u0644\u0627\u0646.", True),
    ]  # fmt: skip
    for text, rtl in sentences:
        writer.paragraph(Para((text,), rtl=rtl))
    doc = read_pdf(writer.output())
    assert [p.text for p in doc.passages] == [text for text, _ in sentences]


def test_running_footers_and_page_numbers_are_not_text() -> None:
    writer = PdfWriter(width_pt=300, lines_per_page=2, footer=True)
    for word in ("one", "two", "three"):
        writer.paragraph(Para((f"Paragraph number {word} here.",)))
        writer.break_page()
    doc = read_pdf(writer.output())
    assert "Confidential" not in doc.text
    assert [p.text for p in doc.passages] == [
        "Paragraph number one here.",
        "Paragraph number two here.",
        "Paragraph number three here.",
    ]
    assert [p.location.page for p in doc.passages] == [1, 2, 3]


def test_encrypted_pdf_needing_a_password_is_a_reader_error() -> None:
    data = _plain_pdf("secret text", owner_password="owner", user_password="user")
    with pytest.raises(ReaderError) as err:
        read_pdf(data)
    assert err.value.field == "text"
    assert err.value.reason == "encrypted PDF: a password is required to open it"
    assert err.value.media_type == "application/pdf"


def test_pdf_with_permissions_only_reads() -> None:
    doc = read_pdf(_plain_pdf("owner only text.", owner_password="owner"))
    assert doc.text == "owner only text."


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.7\nthis is not a pdf", b"", b"%PDF-1.4\n" + b"\x00" * 64],
    ids=["garbage", "empty", "nuls"],
)
def test_damaged_pdf_is_a_reader_error(data: bytes) -> None:
    with pytest.raises(ReaderError) as err:
        read_pdf(data)
    assert err.value.reason.startswith("damaged PDF: ")


def test_truncated_pdf_is_damaged_or_reads_what_survives() -> None:
    data = _plain_pdf("Some text on the page.")
    with pytest.raises(ReaderError, match="damaged PDF"):
        read_pdf(data[: len(data) // 3])


def test_blank_pages_give_no_text_and_metadata_gives_the_title() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Metadata  title")
    pdf.add_page()
    pdf.add_page()
    doc = read_pdf(bytes(pdf.output()))
    assert (doc.text, doc.spans, doc.passages) == ("", (), ())
    assert doc.title == "Metadata title"


def test_hyphen_at_a_page_end_joins_across_the_running_footer() -> None:
    # this layout ends page 3 with "acco-", which PDFium joins with the footer drawn after it
    writer = PdfWriter(width_pt=220, lines_per_page=6, footer=True)
    writer.heading(Heading(2, "Overview"))
    writer.break_page()
    writer.paragraph(Para((LTR[4], LTR[0], LTR[9])))
    writer.break_page()
    writer.paragraph(Para((RTL[2], RTL[3]), rtl=True))
    writer.paragraph(Para((LTR[8],)))
    writer.heading(Heading(2, "Further reading"))
    writer.paragraph(Para((RTL[0], RTL[1]), rtl=True))
    writer.heading(Heading(2, HEADINGS[2]))
    sentence = "Librarians catalogue manuscripts according to provenance."
    writer.paragraph(Para((sentence,)), hyphenate=True)
    assert writer.plan.sentence_pages[-1] == (3, 4)
    doc = read_pdf(writer.output())
    assert "Confidential" not in doc.text
    last = doc.passages[-1]
    assert last.text == sentence
    assert [s.location.page for s in last.spans] == [3, 4]


def test_pdfium_runs_one_caller_at_a_time_and_every_thread_reads_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PDFium is not thread-safe: threads that read PDFs at once (as concurrent ingest streams
    do) take turns inside it, and each gets the pages of its own document."""
    from tests.pdfium_watch import watch_pdfium

    documents = []
    for n in range(6):
        writer = PdfWriter(width_pt=260, lines_per_page=4, fonts=("sans",))
        writer.heading(Heading(1, f"Report {n}"))
        writer.break_page()
        writer.paragraph(Para((f"Finding number {n} is on the second page.",)))
        documents.append(writer.output())
    expected = [_rows(read_pdf(data)) for data in documents]
    watch = watch_pdfium(monkeypatch)
    start = threading.Barrier(len(documents))
    got: dict[int, list[Row]] = {}

    def read(n: int) -> None:
        start.wait(timeout=10)
        got[n] = _rows(read_pdf(documents[n]))

    threads = [threading.Thread(target=read, args=(n,)) for n in range(len(documents))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [got.get(n) for n in range(len(documents))] == expected
    assert expected[3][-1] == (10, 49, "paragraph", 2, ("Report 3",),
                               "Finding number 3 is on the second page.")
    assert (watch.opened, watch.most, watch.inside) == (len(documents), 1, 0)
