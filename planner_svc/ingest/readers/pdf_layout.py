"""Lines of PDF pages -> headings and paragraphs (pure: no PDF library here).

Input: each page's text lines in reading order (:class:`Line`: text in logical order, font
size in points, baseline and horizontal extent in PDF user space, y growing upwards). Output:
blocks (:class:`Block`) whose text is split into per-page parts.

1. **Running headers and footers** are dropped: a line whose baseline lies in the top or
   bottom :data:`MARGIN_SHARE` of the page and that is a page number (``7``, ``- 7 -``,
   ``Page 7 of 9``), or whose text with digits masked recurs in that band on at least half of
   the pages with text (at least 2).
2. **Body size**: the font size (to 0.5 pt) holding the most text, counted in display columns
   (:func:`columns`: a wide East Asian character counts two, as it takes two Latin letters'
   room; of equal counts the smaller size). A document whose headings hold more text than its
   body still reads them as body text (a heading of nine Chinese characters over a line of
   fourteen Latin letters, say); the rule is for documents with more body than headings. A
   line at least
   :data:`HEADING_RATIO` times larger and at most :data:`HEADING_MAX_CHARS` long is a heading
   line; heading levels rank the distinct heading sizes, largest = 1 (at most 6).
3. **Blocks** on a page: consecutive lines of one kind and size join while the baseline step
   stays within :data:`PARAGRAPH_STEP` times the font size, and (for paragraphs) the previous
   line does not end a sentence well short of the text width (a paragraph's last line).
4. **Text**: lines of a block join with a space, or with nothing between two CJK characters
   (:func:`is_cjk`: Han, kana, CJK punctuation) or
   after a line-end hyphen followed by a lower-case letter (the hyphen is dropped:
   ``infor-`` + ``mation`` -> ``information``; a hyphen a PDF marks as line-end, U+0002 or
   U+FFFE, the same way); ligature characters (U+FB00-FB06) are expanded; runs of spaces
   collapse.
5. **Page breaks**: a paragraph that ends a page without ending a sentence continues in the
   first paragraph of the next page with text: one block, one part per page.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

MARGIN_SHARE = 0.08
HEADING_RATIO = 1.15
HEADING_MAX_CHARS = 200
PARAGRAPH_STEP = 1.5
SHORT_LINE_SHARE = 0.75

LIGATURES = str.maketrans(
    {chr(c): unicodedata.normalize("NFKC", chr(c)) for c in range(0xFB00, 0xFB07)}
)
_PAGE_NUMBER = re.compile(r"^[\W_]*(?:page\s*)?\d{1,5}(?:\s*(?:/|of)\s*\d{1,5})?[\W_]*$", re.I)
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f:;][\"'\u201d\u2019\u00bb)\]]*$")
_LINE_HYPHEN = "\x02\ufffe"
_HYPHENS = "-\u00ad\u2010"
_SPACES = re.compile(r"[ \t]+")
_CONTROLS = re.compile(r"[\x00\x01\x03-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    """One text line of a page.

    Attributes:
        page: 1-based page number.
        text: the line's text in logical order (may hold a line-end hyphen marker U+0002).
        size: font size, points.
        baseline: y of the baseline, points from the page's bottom edge.
        left, right: horizontal extent, points from the page's left edge.
        page_height: height of the page, points.
        last_baseline: y of the baseline where the line ends (lower than ``baseline`` when
            a hyphenated word joined two physical lines into one), points; None = same.
    """

    page: int
    text: str
    size: float
    baseline: float
    left: float
    right: float
    page_height: float
    last_baseline: float | None = None

    @property
    def end_baseline(self) -> float:
        """Baseline of the physical line where this line ends, points."""
        return self.baseline if self.last_baseline is None else self.last_baseline


@dataclass(slots=True)
class Block:
    """A heading or paragraph: ``parts`` are ``(page, text)``, joined as given."""

    kind: str
    level: int
    parts: list[tuple[int, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(text for _, text in self.parts)


def clean(text: str) -> str:
    """Line text with ligatures expanded, in-line hyphen markers resolved (dropped before a
    lower-case letter, else a hyphen), control characters removed and spaces collapsed."""
    text = text.translate(LIGATURES)
    if any(m in text for m in _LINE_HYPHEN):
        out: list[str] = []
        for i, ch in enumerate(text):
            if ch in _LINE_HYPHEN:
                nxt = text[i + 1] if i + 1 < len(text) else ""
                if not nxt.islower():
                    out.append("-")
                continue
            out.append(ch)
        text = "".join(out)
    return _SPACES.sub(" ", _CONTROLS.sub("", text)).strip()


_CJK_RANGES = (
    (0x2E80, 0x2FDF), (0x3000, 0x30FF), (0x3190, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF), (0x20000, 0x3FFFF),
)  # fmt: skip
"""Han, kana, CJK punctuation and full-width forms: scripts written without spaces between
words (Hangul uses spaces, so it is not here)."""


def is_cjk(ch: str) -> bool:
    """Whether ``ch`` (one character, or empty) is written without spaces between words."""
    return bool(ch) and any(a <= ord(ch) <= b for a, b in _CJK_RANGES)


def joiner(before: str, after: str) -> tuple[str, str]:
    """``(before', separator)`` to put ``after`` behind ``before`` in one paragraph: a line-end
    hyphen after a letter and before a lower-case letter is dropped with no separator; a CJK
    character meets a CJK character with none; otherwise one space."""
    hyphenated = len(before) > 1 and before[-1] in _HYPHENS + _LINE_HYPHEN
    if hyphenated and before[-2].isalpha() and after[:1].islower():
        return before[:-1], ""
    if before and before[-1] in _LINE_HYPHEN:
        before = before[:-1] + "-"
    if is_cjk(before[-1:]) and is_cjk(after[:1]):
        return before, ""
    return before, " "


def _masked(text: str) -> str:
    return re.sub(r"\d+", "#", text.strip().lower())


def drop_running_lines(pages: Sequence[Sequence[Line]]) -> list[list[Line]]:
    """Pages without running headers, footers and page numbers (module docstring, step 1)."""

    def in_margin(line: Line) -> bool:
        band = MARGIN_SHARE * line.page_height
        return line.baseline <= band or line.baseline >= line.page_height - band

    recurring: Counter[str] = Counter()
    for lines in pages:
        recurring.update({_masked(ln.text) for ln in lines if in_margin(ln)})
    with_text = sum(1 for lines in pages if lines)
    need = max(2, (with_text + 1) // 2)
    return [
        [
            ln
            for ln in lines
            if not (
                in_margin(ln)
                and (_PAGE_NUMBER.match(ln.text) or recurring[_masked(ln.text)] >= need)
            )
        ]
        for lines in pages
    ]


def _size_key(size: float) -> float:
    return round(size * 2) / 2


def columns(text: str) -> int:
    """Display columns of ``text``: two for each wide or full-width East Asian character
    (Unicode's East_Asian_Width W or F: Han, kana, Hangul, their punctuation), one for any
    other character."""
    if text.isascii():
        return len(text)
    return len(text) + sum(unicodedata.east_asian_width(ch) in "WF" for ch in text)


def heading_levels(pages: Sequence[Sequence[Line]]) -> tuple[float, dict[float, int]]:
    """Body size and the level of each heading size (module docstring, step 2)."""
    held: Counter[float] = Counter()  # display columns of text by font size
    for lines in pages:
        for ln in lines:
            held[_size_key(ln.size)] += columns(ln.text)
    if not held:
        return 0.0, {}
    body = max(sorted(held), key=lambda s: held[s])
    larger = sorted(
        (
            s
            for lines in pages
            for s in {_size_key(ln.size) for ln in lines if len(ln.text) <= HEADING_MAX_CHARS}
            if s >= body * HEADING_RATIO
        ),
        reverse=True,
    )
    distinct = list(dict.fromkeys(larger))
    return body, {s: min(i + 1, 6) for i, s in enumerate(distinct)}


def page_blocks(lines: Sequence[Line], levels: dict[float, int]) -> list[Block]:
    """Headings and paragraphs of one page (module docstring, steps 3-4)."""
    blocks: list[Block] = []
    width = max((ln.right for ln in lines), default=0.0) - min(
        (ln.left for ln in lines), default=0.0
    )
    previous: Line | None = None
    for ln in lines:
        text = clean(ln.text) if ln.text.strip() else ""
        if not text:
            continue
        level = levels.get(_size_key(ln.size), 0) if len(text) <= HEADING_MAX_CHARS else 0
        kind = "heading" if level else "paragraph"
        joins = (
            previous is not None
            and blocks
            and blocks[-1].kind == kind
            and blocks[-1].level == level
            and _size_key(previous.size) == _size_key(ln.size)
            and 0 < previous.end_baseline - ln.baseline <= PARAGRAPH_STEP * max(ln.size, 1.0)
            and not (
                kind == "paragraph"
                and _SENTENCE_END.search(blocks[-1].text)
                and previous.right - previous.left < SHORT_LINE_SHARE * width
            )
        )
        if joins:
            page, before = blocks[-1].parts[-1]
            before, separator = joiner(before, text)
            blocks[-1].parts[-1] = (page, before + separator + text)
        else:
            blocks.append(Block(kind, level, [(ln.page, text)]))
        previous = ln
    return blocks


def layout(pages: Sequence[Sequence[Line]]) -> list[Block]:
    """Blocks of a whole document (module docstring), page breaks resolved (step 5)."""
    kept = drop_running_lines(pages)
    _, levels = heading_levels(kept)
    out: list[Block] = []
    for lines in kept:
        blocks = page_blocks(lines, levels)
        if not blocks:
            continue
        first = blocks[0]
        if (
            out
            and out[-1].kind == "paragraph"
            and first.kind == "paragraph"
            and not _SENTENCE_END.search(out[-1].text)
        ):
            page, before = out[-1].parts[-1]
            before, separator = joiner(before, first.text)
            out[-1].parts[-1] = (page, before + separator)
            out[-1].parts.extend(first.parts)
            blocks = blocks[1:]
        out.extend(blocks)
    return out
