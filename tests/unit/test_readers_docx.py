"""DOCX reader on files written here with python-docx: exact text, spans and heading paths."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls

from planner_svc.ingest.readers import ReaderError
from planner_svc.ingest.readers.docx import read_docx


def _save(document: docx.document.Document) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _sample() -> bytes:
    d = docx.Document()
    d.core_properties.title = "Core title"
    d.sections[0].header.paragraphs[0].text = "Header text"
    d.sections[0].footer.paragraphs[0].text = "Footer text"
    d.add_heading("Report", level=0)
    d.add_heading("Intro", level=1)
    d.add_paragraph("First paragraph. \u05e9\u05dc\u05d5\u05dd. \u6771\u4eac \U0001f680")
    d.add_paragraph("Item one", style="List Bullet")
    d.add_heading("Details", level=2)
    table = d.add_table(rows=3, cols=2)
    table.cell(0, 0).text = "k"
    table.cell(0, 1).text = "v"
    table.cell(1, 0).merge(table.cell(1, 1)).text = "merged"
    table.cell(2, 0).text = "top"
    table.cell(2, 1).text = ""
    p = d.add_paragraph("line one")
    p.add_run().add_break()
    p.add_run("line two\tTab")
    d.add_paragraph("   ")
    d.add_heading("Deep", level=9)
    return _save(d)


def test_body_exact_text_spans_and_heading_paths() -> None:
    doc = read_docx(_sample())
    assert doc.text == (
        "Report\n\nIntro\n\nFirst paragraph. \u05e9\u05dc\u05d5\u05dd. \u6771\u4eac \U0001f680"
        "\n\nItem one\n\nDetails\n\nk | v\nmerged\ntop\n\nline one\nline two\tTab\n\nDeep"
    )
    data = doc.text.encode()
    got = [
        (s.start, s.end, s.kind, data[s.start : s.end].decode(), s.location.heading_path)
        for s in doc.spans
    ]
    intro, details = ("Intro",), ("Intro", "Details")
    assert got == [
        (0, 6, "heading", "Report", ("Report",)),
        (8, 13, "heading", "Intro", intro),
        (15, 53, "paragraph",
         "First paragraph. \u05e9\u05dc\u05d5\u05dd. \u6771\u4eac \U0001f680", intro),
        (55, 63, "paragraph", "Item one", intro),
        (65, 72, "heading", "Details", details),
        (74, 75, "cell", "k", details),
        (78, 79, "cell", "v", details),
        (80, 86, "cell", "merged", details),
        (87, 90, "cell", "top", details),
        (92, 113, "paragraph", "line one\nline two\tTab", details),
        (115, 119, "heading", "Deep", ("Intro", "Details", "Deep")),
    ]  # fmt: skip
    assert [p.level for p in doc.passages if p.kind == "heading"] == [1, 1, 2, 6]
    assert [p.text for p in doc.passages if p.kind == "cell"] == ["k | v", "merged", "top"]
    assert "Header text" not in doc.text and "Footer text" not in doc.text
    assert doc.title == "Report" and doc.media_type.endswith("wordprocessingml.document")


def test_vertically_merged_cell_counts_once_and_nested_tables_join_their_cell() -> None:
    d = docx.Document()
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).merge(table.cell(1, 0)).text = "tall"
    table.cell(0, 1).text = "a"
    table.cell(1, 1).text = "b"
    inner = table.cell(1, 1).add_table(rows=1, cols=1)
    inner.cell(0, 0).text = "inner"
    doc = read_docx(_save(d))
    assert [p.text for p in doc.passages] == ["tall | a", "b inner"]


def test_outline_level_heading_and_content_controls_and_toc() -> None:
    d = docx.Document()
    para = d.add_paragraph("Custom heading")
    para._p.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {nsdecls("w")} w:val="1"/>'))
    d.add_paragraph("Contents entry", style=d.styles.add_style("TOC 1", 1))
    sdt = parse_xml(
        f"<w:sdt {nsdecls('w')}><w:sdtContent><w:p><w:r><w:t>In a control</w:t></w:r></w:p>"
        "</w:sdtContent></w:sdt>"
    )
    toc = parse_xml(
        f"<w:sdt {nsdecls('w')}><w:sdtPr><w:docPartObj><w:docPartGallery "
        'w:val="Table of Contents"/></w:docPartObj></w:sdtPr><w:sdtContent><w:p><w:r>'
        "<w:t>TOC control</w:t></w:r></w:p></w:sdtContent></w:sdt>"
    )
    body = d.element.body
    body.insert(len(body) - 1, sdt)
    body.insert(len(body) - 1, toc)
    doc = read_docx(_save(d))
    assert [(p.kind, p.level, p.text) for p in doc.passages] == [
        ("heading", 2, "Custom heading"),
        ("paragraph", 0, "In a control"),
    ]


def test_core_title_when_no_heading() -> None:
    d = docx.Document()
    d.core_properties.title = "From properties"
    d.add_paragraph("Only text.")
    assert read_docx(_save(d)).title == "From properties"


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not a zip at all", "damaged DOCX: "),
        (b"PK\x03\x04truncated", "damaged DOCX: "),
        (_zip({"word/document.xml": b"<w:document/>"}), "damaged DOCX: "),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100, "encrypted DOCX or legacy"),
    ],
    ids=["text", "truncated", "no-content-types", "ole2"],
)
def test_unreadable_docx_is_a_reader_error(data: bytes, reason: str) -> None:
    with pytest.raises(ReaderError) as err:
        read_docx(data)
    assert err.value.reason.startswith(reason)
    assert err.value.field == "text"


def test_broken_document_xml_is_damaged() -> None:
    good = _sample()
    with zipfile.ZipFile(io.BytesIO(good)) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members["word/document.xml"] = members["word/document.xml"][:200]
    with pytest.raises(ReaderError, match="damaged DOCX"):
        read_docx(_zip(members))
