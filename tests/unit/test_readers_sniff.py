"""Media-type resolution: explicit types, signatures, notebooks, extensions, HTML and Markdown
sniffing; read_document's dispatch and its errors."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from planner_svc.ingest.parse import parse_document
from planner_svc.ingest.readers import (
    DOCX,
    HTML,
    MARKDOWN,
    NOTEBOOK,
    PDF,
    PLAIN,
    ReaderError,
    read_document,
    resolve_media_type,
    sniff_media_type,
)
from planner_svc.ingest.readers.sniff import normalize_media_type
from tests.docgen import Code, Heading, Para, docx_document, notebook_document

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _zip(*names: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name in names:
            archive.writestr(name, b"x")
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "name", "expected"),
    [
        (b"%PDF-1.7\n...", None, PDF),
        (b"junk before header %PDF-1.4", "report.txt", PDF),  # content beats the extension
        (_zip("[Content_Types].xml", "word/document.xml"), None, DOCX),
        (_zip("xl/workbook.xml"), "book.docx", XLSX),
        (_zip("a.txt"), None, "application/zip"),
        (b"PK\x03\x04broken", "x.docx", "application/zip"),
        (b"\x89PNG\r\n\x1a\n....", "image.md", "image/png"),
        (b"\xff\xd8\xff\xe0", None, "image/jpeg"),
        (b"GIF89a", None, "image/gif"),
        (b"\x1f\x8b\x08", None, "application/gzip"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "old.doc", "application/x-ole-storage"),
        (b"{\\rtf1 hello}", None, "application/rtf"),
        (b"abc\x00def", "notes.txt", "application/octet-stream"),
        (b' {"nbformat": 4, "cells": []}', None, NOTEBOOK),
        (b'{"cells": [], "nbformat": 4}', "data.json", NOTEBOOK),
        (b'{"a": 1}', None, PLAIN),
        (b'{"a": 1}', "x.ipynb", NOTEBOOK),
        (b"<p>html-looking</p>", "readme.md", MARKDOWN),  # extension beats the HTML sniff
        (b"# Title", "notes.txt", PLAIN),
        (b"plain words", "page.htm", HTML),
        (b"garbage", "file.pdf", PDF),
        (b"  <!DOCTYPE html><html></html>", None, HTML),
        (b"\xef\xbb\xbf<html lang=en>", None, HTML),
        (b"<!-- comment --><div>x</div>", None, HTML),
        (b'<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml">', None, HTML),
        ("<p>x</p>".encode("utf-16"), None, HTML),
        (b"<paragraph>not html</paragraph>", None, PLAIN),
        (b"<a href='x'>link</a> text", None, HTML),
        (b"Intro\n\n# Heading\n\ntext", None, MARKDOWN),
        (b"```\ncode\n```", None, MARKDOWN),
        (b"| a | b |\n|---|---|", None, MARKDOWN),
        (b"Title\n=====\n", None, MARKDOWN),
        (b"see [docs](https://example.org/x)", None, MARKDOWN),
        (b"#hashtag is not a heading\njust words", None, PLAIN),
        (b"", None, PLAIN),
    ],
)
def test_sniff(data: bytes, name: str | None, expected: str) -> None:
    assert sniff_media_type(data, name) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("text/markdown; charset=utf-8", MARKDOWN),
        ("TEXT/X-MARKDOWN", MARKDOWN),
        ("application/xhtml+xml", HTML),
        ("application/x-pdf", PDF),
        ("text/csv", PLAIN),
        ("application/x-ipynb+json", NOTEBOOK),
        (DOCX, DOCX),
        ("application/octet-stream", None),
        ("", None),
        (None, None),
    ],
)
def test_normalize_media_type(given: str | None, expected: str | None) -> None:
    assert normalize_media_type(given) == expected


def test_explicit_type_wins_and_unsupported_types_are_named() -> None:
    assert resolve_media_type(b"# not markdown here", "text/plain", "a.md") == PLAIN
    assert resolve_media_type(b"%PDF-1.4", "application/octet-stream", None) == PDF
    for media_type, data in (("application/zip", b""), (None, _zip("a.txt"))):
        with pytest.raises(ReaderError) as err:
            resolve_media_type(data, media_type, None)
        assert (err.value.field, err.value.reason) == (
            "media_type",
            "unsupported media type application/zip",
        )
    with pytest.raises(ReaderError, match="unsupported media type image/png"):
        read_document(b"\x89PNG\r\n\x1a\nrest", name="picture.png")


def test_read_document_dispatches_every_format() -> None:
    blocks = [Heading(1, "Title"), Para(("Body sentence.",)), Code("x = 1")]
    cases = [
        (b"# Title\n\nBody sentence.", "a.md", MARKDOWN),
        (b"Title\n\nBody sentence.", "a.txt", PLAIN),
        (b"<html><body><h1>Title</h1><p>Body sentence.</p></body></html>", None, HTML),
        (docx_document(blocks[:2]), "a.docx", DOCX),
        (notebook_document(blocks), "a.ipynb", NOTEBOOK),
    ]
    for data, name, media_type in cases:
        doc = read_document(data, name=name)
        assert doc.media_type == media_type
        assert "Body sentence." in doc.text


def test_markdown_through_read_document_equals_parse_document() -> None:
    text = "# T\n\nsome text \u00e9.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    via = read_document(text.encode(), media_type="text/markdown", min_passage_bytes=200)
    direct = parse_document(text, "text/markdown", min_passage_bytes=200)
    assert via == direct


def test_text_must_be_utf8() -> None:
    with pytest.raises(ReaderError) as err:
        read_document(b"caf\xe9", media_type="text/plain")
    assert (err.value.field, err.value.reason) == ("text", "not valid UTF-8 at byte 3")


def test_notebook_json_is_not_mistaken_for_other_json() -> None:
    data = json.dumps({"cells": [{"cell_type": "markdown", "source": "# H"}], "nbformat": 4})
    assert read_document(data.encode()).title == "H"


def test_any_library_failure_becomes_a_reader_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import planner_svc.ingest.readers.html as html_reader

    def boom(data: bytes, **limits: int) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(html_reader, "read_html", boom)
    with pytest.raises(ReaderError) as err:
        read_document(b"<html><p>x</p></html>")
    assert (err.value.field, err.value.reason) == ("text", "damaged HTML: RuntimeError: boom")


def test_public_surface() -> None:
    import planner_svc.ingest.readers as readers

    assert sorted(readers.__all__) == sorted(
        [
            "DOCX", "FORMAT_NAMES", "HTML", "MARKDOWN", "NOTEBOOK", "PDF", "PLAIN", "SUPPORTED",
            "Location", "ParsedDocument", "ReaderError", "read_document", "resolve_media_type",
            "sniff_media_type",
        ]
    )  # fmt: skip
    for name in readers.__all__:
        assert hasattr(readers, name), name
