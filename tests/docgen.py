"""Writers of test documents in every format the readers take (tests and bench_readers).

A document is a list of blocks (:class:`Heading`, :class:`Para`, :class:`Table`,
:class:`Code`); each writer puts them, with the format's furniture around them (HTML
navigation, header, footer, cookie banner and sidebar; DOCX page header and footer; notebook
outputs; PDF running footers), into bytes. :data:`FURNITURE` lists the furniture texts, none
of which may appear in what a reader returns.

PDFs are written with fpdf2 and HarfBuzz shaping (right-to-left runs in visual order, Arabic
joining forms, ligatures) in Noto fonts from Debian packages (:data:`FONTS`; ``make setup``
installs them): :func:`require_fonts` fails with the package to install when one is missing.
"""

from __future__ import annotations

import io
import itertools
import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

NOTO = Path("/usr/share/fonts/truetype/noto")
FONTS = {
    "sans": (NOTO / "NotoSans-Regular.ttf", "fonts-noto-core"),
    "hebrew": (NOTO / "NotoSansHebrew-Regular.ttf", "fonts-noto-core"),
    "arabic": (NOTO / "NotoSansArabic-Regular.ttf", "fonts-noto-core"),
    "cjk": (Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"), "fonts-noto-cjk"),
    "emoji": (NOTO / "NotoColorEmoji.ttf", "fonts-noto-color-emoji"),
}
"""Font name -> (file, Debian package that ships it)."""

FURNITURE = (
    "Skip to navigation menu",
    "Accept all cookies",
    "Site banner slogan",
    "Related reading widget",
    "Copyright footer notice",
    "Running page header",
    "Running page footer",
    "Cell output stream text",
    "Rendered output markup",
    "Confidential draft",
)
"""Texts of furniture the writers add; a reader must leave every one out."""

BODY_PT = 11.0
HEADING_PT = {1: 20.0, 2: 15.0}
LINE_PITCH = 1.3
PARAGRAPH_GAP_PT = 9.0


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Para:
    sentences: tuple[str, ...]
    rtl: bool = False


@dataclass(frozen=True)
class Table:
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Code:
    text: str


Block = Heading | Para | Table | Code


def require_fonts() -> dict[str, Path]:
    """The font files, or RuntimeError naming the Debian packages to install."""
    missing = sorted({pkg for path, pkg in FONTS.values() if not path.is_file()})
    if missing:
        raise RuntimeError(
            "fonts for generated PDFs are missing: run `make setup` or "
            f"`apt-get install -y {' '.join(missing)}`"
        )
    return {name: path for name, (path, _) in FONTS.items()}


# ---------------------------------------------------------------- HTML


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def html_document(blocks: list[Block], *, title: str = "Test page") -> bytes:
    """An HTML page: the blocks inside ``<main><article>``, furniture around them."""
    body: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{_esc(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            attr = ' dir="rtl"' if block.rtl else ""
            body.append(f"<p{attr}>{_esc(' '.join(block.sentences))}</p>")
        elif isinstance(block, Table):
            rows = "".join(
                "<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>"
                for row in block.rows
            )
            body.append(f"<table><tbody>{rows}</tbody></table>")
        else:
            body.append(f"<pre><code>{_esc(block.text)}</code></pre>")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<style>body {{ font-family: sans-serif }}</style><script>var x = "script text";</script></head>
<body>
<div class="cookie-consent"><p>We use cookies here. <button>Accept all cookies</button></p></div>
<header><p>Site banner slogan</p><nav><ul><li><a href="/">Skip to navigation menu</a></li>
<li><a href="/a">Home</a></li></ul></nav></header>
<aside class="sidebar"><h3>Related reading widget</h3><p>Other articles you may like.</p></aside>
<main><article>
{chr(10).join(body)}
</article></main>
<footer><p>Copyright footer notice, all rights reserved.</p></footer>
</body></html>"""
    return page.encode("utf-8")


# ---------------------------------------------------------------- Markdown


def markdown_document(blocks: list[Block]) -> bytes:
    """The blocks as Markdown (tables as pipe tables, code fenced)."""
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            out.append("#" * block.level + " " + block.text)
        elif isinstance(block, Para):
            out.append(" ".join(block.sentences))
        elif isinstance(block, Table):
            width = max(len(r) for r in block.rows)
            rows = [list(r) + [""] * (width - len(r)) for r in block.rows]
            out.append("| " + " | ".join(rows[0]) + " |")
            out.append("|" + "---|" * width)
            out.extend("| " + " | ".join(r) + " |" for r in rows[1:])
        else:
            out.append("```\n" + block.text + "\n```")
        out.append("")
    return "\n".join(out).encode("utf-8")


# ---------------------------------------------------------------- DOCX


def docx_document(blocks: list[Block]) -> bytes:
    """A DOCX file: Heading N styles, body paragraphs, tables, a page header and footer."""
    import docx

    document = docx.Document()
    section = document.sections[0]
    section.header.paragraphs[0].text = "Running page header"
    section.footer.paragraphs[0].text = "Running page footer"
    for block in blocks:
        if isinstance(block, Heading):
            document.add_heading(block.text, level=block.level)
        elif isinstance(block, Para):
            document.add_paragraph(" ".join(block.sentences))
        elif isinstance(block, Table):
            width = max(len(r) for r in block.rows)
            table = document.add_table(rows=len(block.rows), cols=width)
            for r, row in enumerate(block.rows):
                for c, text in enumerate(row):
                    table.cell(r, c).text = text
        else:
            document.add_paragraph(block.text, style="Normal")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


# ---------------------------------------------------------------- notebooks


def notebook_document(blocks: list[Block]) -> bytes:
    """An nbformat 4 notebook: a markdown cell per heading, paragraph or table, a code cell
    per code block with stream, HTML and PNG outputs."""
    cells: list[dict[str, object]] = []
    for block in blocks:
        if isinstance(block, Code):
            cells.append(
                {
                    "cell_type": "code",
                    "execution_count": 1,
                    "metadata": {},
                    "source": block.text.splitlines(keepends=True),
                    "outputs": [
                        {"output_type": "stream", "name": "stdout",
                         "text": ["Cell output stream text\n"]},
                        {"output_type": "display_data", "metadata": {},
                         "data": {"text/html": ["<b>Rendered output markup</b>"],
                                  "image/png": "iVBORw0KGgo=",
                                  "text/plain": ["Rendered output markup"]}},
                    ],
                }
            )  # fmt: skip
        else:
            source = markdown_document([block]).decode("utf-8").strip()
            cells.append({"cell_type": "markdown", "metadata": {}, "source": source})
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}
    return json.dumps(notebook, ensure_ascii=False, indent=1).encode("utf-8")


# ---------------------------------------------------------------- PDF


@dataclass
class PdfPlan:
    """Where things went in a written PDF.

    Attributes:
        sentence_pages: per sentence, in document order: (page of its first character, page
            of its last character), 1-based.
        heading_pages: page of each heading, in order.
    """

    sentence_pages: list[tuple[int, int]] = field(default_factory=list)
    heading_pages: list[int] = field(default_factory=list)


def _is_cjk(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F") and not ch.isascii()


def _tokens(sentence: str) -> list[tuple[str, bool]]:
    """Pieces a line may break after: (piece, a space follows). A line breaks at spaces and
    between two CJK characters, nowhere else."""
    out: list[tuple[str, bool]] = []
    for word in sentence.split(" "):
        if not word:
            continue
        pieces = [word[0]]
        for before, after in itertools.pairwise(word):
            if _is_cjk(before) and _is_cjk(after):
                pieces.append(after)
            else:
                pieces[-1] += after
        out.extend((piece, False) for piece in pieces[:-1])
        out.append((pieces[-1], True))
    return out


class PdfWriter:
    """Writes blocks to a PDF with manual line layout (page breaks fall where lines run out;
    ``break_page()`` forces one; ``blank_page()`` adds a page with nothing on it)."""

    def __init__(self, *, width_pt: float = 300.0, lines_per_page: int = 14,
                 footer: bool = False) -> None:  # fmt: skip
        from fpdf import FPDF

        fonts = require_fonts()
        self.pdf = FPDF(unit="pt", format=(width_pt + 72, 72 + lines_per_page * 24 + 72))
        self.pdf.set_auto_page_break(False)
        self.pdf.set_margins(36, 36, 36)
        for name, path in fonts.items():
            if path.suffix == ".ttc":
                self.pdf.add_font(name, "", str(path), collection_font_number=0)
            else:
                self.pdf.add_font(name, "", str(path))
        self.pdf.set_fallback_fonts(["hebrew", "arabic", "cjk", "emoji"])
        self.pdf.set_text_shaping(True)
        self.width = width_pt
        self.footer = footer
        self.page = 0
        self.y = 0.0
        self.plan = PdfPlan()
        self._new_page()

    def _new_page(self) -> None:
        self.pdf.add_page()
        self.page += 1
        self.y = 36.0
        self.used = False

    def _bottom(self) -> float:
        return float(self.pdf.h) - 54.0

    def _line(self, text: str, size: float, *, align: str = "L") -> None:
        pitch = size * LINE_PITCH
        if self.y + pitch > self._bottom():
            self._finish_page()
            self._new_page()
        self.pdf.set_font("sans", size=size)
        self.pdf.set_xy(36, self.y)
        self.pdf.cell(w=self.width, h=pitch, text=text, align=align)
        self.y += pitch
        self.used = True

    def _finish_page(self) -> None:
        if self.footer and self.used:
            self.pdf.set_font("sans", size=8)
            self.pdf.set_xy(36, float(self.pdf.h) - 20)
            self.pdf.cell(w=self.width, h=10, text=f"Confidential draft, page {self.page}")

    def heading(self, block: Heading) -> None:
        size = HEADING_PT.get(block.level, 15.0)
        if self.y + size * LINE_PITCH > self._bottom():
            self._finish_page()
            self._new_page()
        self.y += PARAGRAPH_GAP_PT if self.used else 0.0
        self._line(block.text, size)
        self.plan.heading_pages.append(self.page)

    def paragraph(self, block: Para, *, hyphenate: bool = False) -> None:
        """Wrap the sentences into lines; with ``hyphenate``, the first word of 8 or more
        lower-case letters that reaches a line end is split there with a hyphen."""
        self.y += PARAGRAPH_GAP_PT if self.used else 0.0
        self.pdf.set_font("sans", size=BODY_PT)
        line = ""
        for sentence in block.sentences:
            tokens = _tokens(sentence)
            start = end = 0
            for k, (piece, space) in enumerate(tokens):
                candidate = line + piece
                flushed_head = False
                if line and self.pdf.get_string_width(candidate) > self.width - 12:
                    head, tail = "", piece
                    if hyphenate and piece.isalpha() and piece.islower() and len(piece) >= 8:
                        head, tail = piece[: len(piece) // 2] + "-", piece[len(piece) // 2 :]
                        hyphenate = False
                        flushed_head = True
                    self._line(line + head, BODY_PT, align="R" if block.rtl else "L")
                    line = tail
                else:
                    line = candidate
                if k == 0:
                    start = self.page if flushed_head else self._page_of_pending()
                line += " " if space else ""
            end = self._page_of_pending()
            self.plan.sentence_pages.append((start, end))
        if line.strip():
            self._line(line.rstrip(), BODY_PT, align="R" if block.rtl else "L")

    def _page_of_pending(self) -> int:
        """Page the line being filled will land on."""
        if self.y + BODY_PT * LINE_PITCH > self._bottom():
            return self.page + 1
        return self.page

    def break_page(self) -> None:
        self._finish_page()
        self._new_page()

    def blank_page(self) -> None:
        self._finish_page()
        self._new_page()
        self._new_page()

    def output(self) -> bytes:
        self._finish_page()
        return bytes(self.pdf.output())
