"""HTML reader: the page's main content as headings, paragraphs, code and table cells.

Parsing is the WHATWG HTML algorithm (selectolax's Lexbor engine), after decoding by byte order
mark, else a ``<meta charset>`` in the first 1024 bytes, else UTF-8, else windows-1252.

Main content, by explicit, deterministic rules (nothing is scored, so nothing in the content is
dropped for being short):

- the root is the ``<main>`` (or ``role="main"``) element when there is one, else the only
  ``<article>``, else ``<body>``;
- left out wherever they are: scripts, styles, templates, embedded media, form controls,
  ``<nav>``, ``<aside>``, ``<menu>``, ``<dialog>``; elements that are hidden (``hidden``,
  ``aria-hidden="true"``, ``display: none``); ARIA landmarks that are not content
  (navigation, banner, contentinfo, complementary, search, menus, toolbars, dialogs);
  ``<header>`` and ``<footer>`` outside ``<article>``, ``<aside>``, ``<main>``, ``<nav>`` and
  ``<section>`` (the page's banner and footer, as HTML-AAM maps them); elements whose class or
  id names boilerplate (:data:`BOILERPLATE_NAME`: cookie banners, menus, sidebars, sharing,
  related links, comments, ads, widgets) unless they contain ``<main>``, ``<article>`` or
  ``<h1>``;
- a paragraph more than half of whose characters are link text (a menu without markup) is
  dropped (link density, as in Kohlschütter et al., "Boilerplate Detection using Shallow Text
  Features", WSDM 2010). Headings and table cells are kept whatever their links.

Blocks: ``h1``-``h6`` -> ``heading`` with that level; every run of inline content between block
boundaries (``p``, ``li``, ``blockquote``, ``dd``, ``figcaption``, ``div``, ...) -> ``paragraph``
with whitespace collapsed (``<br>`` keeps a line break); ``pre`` -> ``code`` (whitespace kept);
``table`` -> one ``cell`` span per non-empty ``td``/``th`` and one passage per row (a caption
is a paragraph). Heading paths come from the headings. The title is the first heading, else
``<title>``.
"""

from __future__ import annotations

import codecs
import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from planner_svc.ingest.document import DocumentBuilder, ParsedDocument
from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES
from planner_svc.ingest.readers.base import HTML

SKIP_TAGS = frozenset({
    "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed",
    "canvas", "video", "audio", "map", "button", "input", "select", "textarea", "option",
    "datalist", "nav", "aside", "menu", "dialog", "head", "title",
})  # fmt: skip
SKIP_ROLES = frozenset({
    "navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar",
    "toolbar", "dialog", "alertdialog", "tooltip",
})  # fmt: skip
SECTIONING = frozenset({"article", "aside", "main", "nav", "section"})
BLOCK_TAGS = frozenset({
    "address", "article", "blockquote", "body", "center", "dd", "details", "dir", "div", "dl",
    "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr",
    "html", "legend", "li", "main", "ol", "p", "section", "summary", "ul", "caption", "tbody",
    "thead", "tfoot", "tr", "td", "th",
})  # fmt: skip
HEADINGS = {f"h{i}": i for i in range(1, 7)}
BOILERPLATE_NAME = re.compile(
    r"(?:^|[\s_-])(?:cookies?|consent|gdpr|navbar|nav|navigation|menu|breadcrumbs?|sidebar|"
    r"footer|masthead|share|sharing|social|related|newsletter|subscribe|advert\w*|ads?|"
    r"sponsored|promo|popup|modal|skip-link|toolbar|pagination|comments?|disqus|widgets?)"
    r"(?=$|[\s_-])"
)
"""Class or id tokens that name page furniture rather than content."""

MAX_LINK_DENSITY = 0.5
"""A paragraph with more than this share of its characters in links is dropped."""

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)""", re.I)
_SPACES = re.compile(r"[ \t\n\r\f]+")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)


def decode_html(data: bytes) -> str:
    """Text of an HTML document: BOM, else ``<meta charset>`` (first 1024 bytes), else UTF-8,
    else windows-1252 (undecodable bytes become U+FFFD)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    declared = _META_CHARSET.search(data[:1024])
    if declared is not None:
        label = declared.group(1).decode("ascii").lower()
        try:
            name = codecs.lookup(label).name
        except LookupError:
            name = ""
        if name in ("latin-1", "iso8859-1", "ascii"):
            name = "cp1252"  # as browsers do (WHATWG Encoding: these labels mean windows-1252)
        if name.startswith("utf-16"):
            name = "utf-8"  # a meta tag cannot declare UTF-16 (the bytes were readable as ASCII)
        if name:
            try:
                return data.decode(name, errors="replace")
            except LookupError:  # a codec that is not a text encoding (rot13, hex, ...)
                pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _hidden(node: LexborNode) -> bool:
    attrs = node.attributes
    if "hidden" in attrs or (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return bool(_HIDDEN_STYLE.search(attrs.get("style") or ""))


def _content_root(tree: LexborHTMLParser) -> LexborNode | None:
    mains = [n for n in tree.css("main, [role=main]") if not _hidden(n)]
    if mains:
        return mains[0]
    articles = tree.css("article")
    if len(articles) == 1:
        return articles[0]
    return tree.body or tree.root


class _Walker:
    """Depth-first walk of the content root that emits blocks into the builder."""

    def __init__(self, builder: DocumentBuilder) -> None:
        self.builder = builder
        self.pieces: list[str] = []
        self.link_chars = 0
        self.chars = 0
        self.links = 0  # open <a> elements
        self.sectioning = 0  # open article/aside/main/nav/section elements
        self.headings: list[int] = []  # levels of open h1-h6 elements

    def walk(self, root: LexborNode) -> None:
        stack: list[tuple[LexborNode, bool]] = [(root, False)]
        while stack:
            node, leaving = stack.pop()
            if leaving:
                self.leave(node)
                continue
            if node.is_text_node:
                self.text(node.text_content or "")
                continue
            if not node.is_element_node or not self.enter(node, node is root):
                continue
            stack.append((node, True))
            children = list(node.iter(include_text=True))
            stack.extend((child, False) for child in reversed(children))
        self.flush()

    def skip(self, node: LexborNode, tag: str, is_root: bool) -> bool:
        if tag in SKIP_TAGS or _hidden(node):
            return True
        if (node.attributes.get("role") or "").strip().lower() in SKIP_ROLES:
            return True
        if is_root:
            return False
        if tag in ("header", "footer") and not self.sectioning:
            return True
        if tag in ("html", "body", "main", "article"):
            return False
        names = f"{node.attributes.get('class') or ''} {node.attributes.get('id') or ''}"
        return bool(
            BOILERPLATE_NAME.search(names.lower())
            and node.css_first("main, article, h1") is None
        )

    def enter(self, node: LexborNode, is_root: bool) -> bool:
        """Handle an element's start; False = its subtree is done (skipped or consumed)."""
        tag = node.tag or ""
        if self.skip(node, tag, is_root):
            return False
        if tag == "br":
            self.pieces.append("\n")
            return False
        if tag == "pre":
            self.flush()
            self.builder.add_block("code", node.text(deep=True))
            return False
        if tag == "table":
            self.flush()
            self.table(node)
            return False
        if tag in HEADINGS:
            self.flush()
            self.headings.append(HEADINGS[tag])
        elif tag in BLOCK_TAGS:
            self.flush()
        if tag == "a":
            self.links += 1
        if tag in SECTIONING:
            self.sectioning += 1
        return True

    def leave(self, node: LexborNode) -> None:
        tag = node.tag or ""
        if tag in HEADINGS:
            self.flush()
            self.headings.pop()
        elif tag in BLOCK_TAGS:
            self.flush()
        if tag == "a":
            self.links -= 1
        if tag in SECTIONING:
            self.sectioning -= 1

    def text(self, value: str) -> None:
        value = _SPACES.sub(" ", value)
        self.pieces.append(value)
        size = len(value.strip())
        self.chars += size
        if self.links:
            self.link_chars += size

    def flush(self) -> None:
        text = re.sub(r" *\n *", "\n", "".join(self.pieces)).strip(" \n")
        chars, link_chars = self.chars, self.link_chars
        self.pieces, self.chars, self.link_chars = [], 0, 0
        if not text:
            return
        if self.headings:
            self.builder.add_block("heading", text, level=self.headings[-1])
        elif link_chars <= MAX_LINK_DENSITY * chars:
            self.builder.add_block("paragraph", text)

    def table(self, table: LexborNode) -> None:
        first = True
        for node in table.css("caption, tr"):
            if _hidden_below(node, table):
                continue
            if node.tag == "caption":
                self.builder.add_block("paragraph", _inline_text(node))
                continue
            cells = [
                _inline_text(c) for c in node.iter() if c.tag in ("td", "th") and not _hidden(c)
            ]
            if any(c.strip() for c in cells):
                self.builder.add_table_row(cells, first=first)
                first = False


def _hidden_below(node: LexborNode, table: LexborNode) -> bool:
    """Whether ``node`` belongs to a table nested in ``table``, or it or an element between
    it and ``table`` is hidden."""
    current: LexborNode | None = node
    while current is not None and current.mem_id != table.mem_id:
        if _hidden(current) or (current is not node and current.tag == "table"):
            return True
        current = current.parent
    return False


def _inline_text(node: LexborNode) -> str:
    """Text of a subtree on one line: block boundaries and ``<br>`` become spaces; skipped and
    hidden elements (:data:`SKIP_TAGS`) are left out."""
    parts: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_text_node:
            parts.append(current.text_content or "")
            continue
        if not current.is_element_node:
            continue
        tag = current.tag or ""
        if current is not node and (tag in SKIP_TAGS or _hidden(current)):
            continue
        if tag == "br" or tag in BLOCK_TAGS or tag in HEADINGS:
            parts.append(" ")
        stack.extend(reversed(list(current.iter(include_text=True))))
    return " ".join(_SPACES.sub(" ", "".join(parts)).split())


def read_html(
    data: bytes,
    *,
    max_passage_bytes: int = DEFAULT_MAX_PASSAGE_BYTES,
    min_passage_bytes: int = 0,
) -> ParsedDocument:
    """Read an HTML document's main content (module docstring).

    Args:
        data: the document's bytes.
        max_passage_bytes, min_passage_bytes: passage limits, UTF-8 bytes
            (:class:`planner_svc.ingest.document.DocumentBuilder`).

    Returns:
        Canonical text, spans (UTF-8 byte offsets; locations carry heading paths) and passages.

    Raises:
        InvalidRequest: (``max_passage_bytes``) below 64.
    """
    builder = DocumentBuilder(
        max_passage_bytes=max_passage_bytes, min_passage_bytes=min_passage_bytes
    )
    tree = LexborHTMLParser(decode_html(data))
    root = _content_root(tree)
    if root is not None:
        _Walker(builder).walk(root)
    title_node = tree.css_first("title")
    title = " ".join(title_node.text(deep=True).split()) if title_node is not None else ""
    return builder.finish(HTML, fallback_title=title or None)
