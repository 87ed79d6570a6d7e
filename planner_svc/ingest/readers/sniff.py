"""Media type of a document: an explicit type when valid, else content sniffing plus the name.

:func:`resolve_media_type` decides, in this order:

1. an explicit media type (parameters such as ``; charset=utf-8`` ignored, aliases folded, see
   :data:`ALIASES`) wins; ``application/octet-stream`` and empty mean "unknown" and fall
   through; any other type no reader handles raises :class:`ReaderError`;
2. binary signatures, whatever the name says: ``%PDF-`` in the first 1024 bytes (where PDF
   readers look for the header) -> PDF; a ZIP archive holding ``word/document.xml`` -> DOCX
   (other ZIP-based formats and plain ZIPs get their own, unsupported, type); PNG, JPEG, GIF,
   gzip, OLE2 (legacy Office), RTF signatures; NUL bytes in the first 8 KiB -> binary;
3. a JSON object naming both ``"nbformat"`` and ``"cells"`` -> notebook;
4. the name's extension: ``.md``/``.markdown`` -> Markdown, ``.html``/``.htm``/``.xhtml`` ->
   HTML, ``.txt`` -> plain text, ``.pdf``/``.docx``/``.ipynb`` -> that format (its reader then
   reports the content it cannot read);
5. HTML signatures after leading whitespace (the WHATWG MIME Sniffing standard's list for
   "text/html": ``<!DOCTYPE HTML``, ``<HTML``, ``<HEAD``, ``<BODY``, ``<P``, ``<DIV``, ...,
   ``<!--``), or an XML declaration followed by ``<html``;
6. a light Markdown hint (an ATX heading, a code fence, a table delimiter row, a setext
   underline or an inline link) -> Markdown, else plain text.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePosixPath

from planner_svc.ingest.readers.base import (
    DOCX,
    HTML,
    MARKDOWN,
    NOTEBOOK,
    PDF,
    PLAIN,
    SUPPORTED,
    unsupported,
)

ALIASES = {
    "text/x-markdown": MARKDOWN,
    "text/md": MARKDOWN,
    "application/xhtml+xml": HTML,
    "application/x-pdf": PDF,
    "application/ipynb+json": NOTEBOOK,
    "application/x-ipynb": NOTEBOOK,
}
"""Other spellings of the supported media types."""

UNKNOWN = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})
"""Explicit types that say nothing: the content decides."""

EXTENSIONS = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".mdown": MARKDOWN,
    ".txt": PLAIN,
    ".text": PLAIN,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".pdf": PDF,
    ".docx": DOCX,
    ".ipynb": NOTEBOOK,
}
"""File extensions (lower case) and the media type they name."""

_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"\x1f\x8b", "application/gzip"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
    (b"{\\rtf", "application/rtf"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"\x7fELF", "application/x-executable"),
)
_ZIP_MEMBERS = (
    ("word/document.xml", DOCX),
    ("xl/workbook.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    (
        "ppt/presentation.xml",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
)
_HTML_TAGS = (
    "!doctype html", "html", "head", "script", "iframe", "h1", "div", "font", "table", "a",
    "style", "title", "b", "body", "br", "p",
)  # fmt: skip
_HTML_START = re.compile(
    r"<(?:" + "|".join(re.escape(t) for t in _HTML_TAGS) + r")[ \t\n\f\r>]|<!--",
    re.IGNORECASE,
)
_XHTML = re.compile(r"<\?xml[^>]*>\s*(?:<!--.*?-->\s*)*(?:<!doctype html|<html)", re.I | re.S)
_MARKDOWN_HINT = re.compile(
    r"^ {0,3}#{1,6}[ \t]+\S"  # ATX heading
    r"|^ {0,3}(?:```|~~~)"  # code fence
    r"|^ {0,3}\|?[ \t]*:?-{3,}:?[ \t]*\|"  # table delimiter row
    r"|^\S[^\n]*\n {0,3}(?:={3,}|-{3,})[ \t]*$"  # setext underline below a text line
    r"|\[[^\]\n]+\]\([^)\s]+\)",  # inline link
    re.MULTILINE,
)
_SNIFF_BYTES = 8192


def normalize_media_type(media_type: str | None) -> str | None:
    """The canonical spelling of an explicit media type, or None when it says nothing.

    ``text/*`` types other than Markdown and HTML read as plain text (``text/csv`` ->
    ``text/plain``), as the Markdown/plain reader always has.

    Raises:
        ReaderError: (``media_type``) a type no reader handles (``unsupported media type X``).
    """
    if media_type is None:
        return None
    base = media_type.split(";", 1)[0].strip().lower()
    if base in UNKNOWN:
        return None
    base = ALIASES.get(base, base)
    if base in SUPPORTED:
        return base
    if base.startswith("text/"):
        return PLAIN
    raise unsupported(base)


def extension_type(name: str | None) -> str | None:
    """Media type named by the extension of ``name`` (a path or source id), else None."""
    if not name:
        return None
    return EXTENSIONS.get(PurePosixPath(name.replace("\\", "/")).suffix.lower())


def _zip_type(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            for member, media_type in _ZIP_MEMBERS:
                if member in names:
                    return media_type
            if "mimetype" in names:
                declared = archive.read("mimetype")[:100].decode("ascii", errors="replace")
                return declared.strip() or "application/zip"
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError):
        return "application/zip"
    return "application/zip"


def _binary_type(data: bytes) -> str | None:
    if b"%PDF-" in data[:1024]:
        return PDF
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_type(data)
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return media_type
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None  # UTF-16 text with a byte order mark
    if b"\x00" in data[:_SNIFF_BYTES]:
        return "application/octet-stream"
    return None


def _head_text(data: bytes) -> str:
    head = data[:_SNIFF_BYTES]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return head.decode("utf-16", errors="ignore")
    return head.decode("utf-8", errors="ignore").lstrip("\ufeff")


def looks_like_html(data: bytes) -> bool:
    """Whether the content starts like an HTML document (module docstring, step 5)."""
    text = _head_text(data).lstrip(" \t\n\f\r")
    return bool(_HTML_START.match(text) or _XHTML.match(text))


def looks_like_notebook(data: bytes) -> bool:
    """Whether the content is a JSON object that names ``nbformat`` and ``cells``."""
    text = _head_text(data).lstrip(" \t\n\r")
    return text.startswith("{") and b'"nbformat"' in data and b'"cells"' in data


def sniff_media_type(data: bytes, name: str | None = None) -> str:
    """Media type of ``data`` from its content and the extension of ``name`` (steps 2-6 of
    the module docstring). Returns a supported type or the unsupported type it found
    (``application/zip``, ``image/png``, ``application/octet-stream``, ...)."""
    found = _binary_type(data)
    if found is not None:
        return found
    if looks_like_notebook(data):
        return NOTEBOOK
    by_name = extension_type(name)
    if by_name is not None:
        return by_name
    if looks_like_html(data):
        return HTML
    if _MARKDOWN_HINT.search(_head_text(data)):
        return MARKDOWN
    return PLAIN


def resolve_media_type(data: bytes, media_type: str | None, name: str | None) -> str:
    """The supported media type to read ``data`` as (module docstring).

    Raises:
        ReaderError: (``media_type``) the explicit type, or the sniffed one, is not supported.
    """
    explicit = normalize_media_type(media_type)
    if explicit is not None:
        return explicit
    found = sniff_media_type(data, name)
    if found not in SUPPORTED:
        raise unsupported(found)
    return found
