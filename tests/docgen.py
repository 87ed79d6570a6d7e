"""Writers of test documents in every format the readers take (tests and bench_readers).

A document is a list of blocks (:class:`Heading`, :class:`Para`, :class:`Table`,
:class:`Code`); each writer puts them, with the format's furniture around them (HTML
navigation, header, footer, cookie banner and sidebar; DOCX page header and footer; notebook
outputs; PDF running footers), into bytes. :data:`FURNITURE` lists the furniture texts, none
of which may appear in what a reader returns.

PDFs are written with fpdf2 and HarfBuzz shaping (right-to-left runs in visual order, Arabic
joining forms, ligatures) in fonts from Debian packages (:data:`FONTS`; ``make setup``
installs them): :func:`require_fonts` fails with the package to install when one is missing.
"""

from __future__ import annotations

import io
import itertools
import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from planner_svc.ingest.readers.pdf_layout import is_cjk

FONTS = {
    "sans": (Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"), "fonts-dejavu-core"),
    "cjk": (Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"), "fonts-noto-cjk"),
    "emoji": (
        Path("/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"),
        "fonts-noto-color-emoji",
    ),
}
"""Font name -> (file, Debian package that ships it). DejaVu Sans covers Latin, Greek,
Cyrillic, Hebrew and Arabic with their punctuation and the f-ligatures in one font, so a
right-to-left run is shaped in the font of the text around it (fpdf2 garbles glyphs and drops
punctuation when shaping switches to fallback fonts inside a run); Noto Sans CJK and Noto
Color Emoji set the CJK and emoji runs."""

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


def _starts_rtl(word: str) -> bool:
    return unicodedata.bidirectional(word[0]) in ("R", "AL")


def _tokens(sentence: str, *, rtl: bool) -> list[tuple[str, bool]]:
    """Pieces a line may break after: (piece, a space follows). A line breaks at spaces and
    between two CJK characters, nowhere else; in a left-to-right paragraph never before a
    right-to-left word (a line that began with one would be drawn right to left, which a
    reader cannot tell from a right-to-left paragraph)."""
    out: list[tuple[str, bool]] = []
    for word in sentence.split(" "):
        if not word:
            continue
        pieces = [word[0]]
        for before, after in itertools.pairwise(word):
            if is_cjk(before) and is_cjk(after):
                pieces.append(after)
            else:
                pieces[-1] += after
        if out and not rtl and _starts_rtl(word) and out[-1][1]:
            out[-1] = (out[-1][0] + " " + pieces[0], False)
            pieces = pieces[1:] if len(pieces) > 1 else []
            if not pieces:
                out[-1] = (out[-1][0], True)
                continue
        out.extend((piece, False) for piece in pieces[:-1])
        out.append((pieces[-1], True))
    return out


def _font_of(ch: str) -> str:
    if is_cjk(ch) or 0x1100 <= ord(ch) <= 0x11FF or 0xAC00 <= ord(ch) <= 0xD7AF:
        return "cjk"
    if ord(ch) >= 0x1F000:
        return "emoji"
    return "sans"


def runs(text: str) -> list[tuple[str, str]]:
    """(font, text) runs of a line: CJK and Hangul in the CJK font, emoji in the emoji font,
    everything else (spaces included) in DejaVu Sans."""
    out: list[tuple[str, str]] = []
    for ch in text:
        font = _font_of(ch)
        if out and out[-1][0] == font:
            out[-1] = (font, out[-1][1] + ch)
        else:
            out.append((font, ch))
    return out


class PdfWriter:
    """Writes blocks to a PDF with manual line layout (page breaks fall where lines run out;
    ``break_page()`` forces one; ``blank_page()`` adds a page with nothing on it)."""

    def __init__(self, *, width_pt: float = 300.0, lines_per_page: int = 14,
                 footer: bool = False, fonts: tuple[str, ...] = tuple(FONTS)) -> None:  # fmt: skip
        """``fonts``: the fonts to embed (DejaVu Sans alone writes faster, for text without
        CJK or emoji)."""
        from fpdf import FPDF

        fonts_found = require_fonts()
        self.pdf = FPDF(unit="pt", format=(width_pt + 72, 72 + lines_per_page * 24 + 72))
        self.pdf.set_auto_page_break(False)
        self.pdf.set_margins(36, 36, 36)
        for name, path in fonts_found.items():
            if name not in fonts and name != "sans":
                continue
            if path.suffix == ".ttc":
                self.pdf.add_font(name, "", str(path), collection_font_number=0)
            else:
                self.pdf.add_font(name, "", str(path))
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
        pieces = runs(text)
        width = self.text_width(text, size)
        x = 36 + (self.width - width if align == "R" else 0.0)
        for font, piece in pieces:
            self.pdf.set_font(font, size=size)
            piece_width = self.pdf.get_string_width(piece)
            self.pdf.set_xy(x, self.y)
            self.pdf.cell(w=piece_width, h=pitch, text=piece)
            x += piece_width
        self.y += pitch
        self.used = True

    def text_width(self, text: str, size: float) -> float:
        """Width of ``text`` set in its runs' fonts at ``size`` points."""
        total = 0.0
        for font, piece in runs(text):
            self.pdf.set_font(font, size=size)
            total += self.pdf.get_string_width(piece)
        return total

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
        line = ""
        for sentence in block.sentences:
            tokens = _tokens(sentence, rtl=block.rtl)
            start = end = 0
            for k, (piece, space) in enumerate(tokens):
                candidate = line + piece
                flushed_head = False
                if line and self.text_width(candidate, BODY_PT) > self.width - 12:
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
