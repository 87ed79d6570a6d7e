"""HTML reader: main content only, exact spans and heading paths, encodings, furniture rules."""

from __future__ import annotations

from planner_svc.ingest.document import ParsedDocument
from planner_svc.ingest.readers.html import decode_html, read_html

PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>T | Site</title>
<script>var s = 1;</script><style>p{}</style></head><body>
<div id="cookie-banner">We use cookies.</div>
<header><nav><a href="/">Home</a></nav><p>Banner text</p></header>
<main>
<h1>Caf\xc3\xa9  guide</h1>
<p>Intro with <a href="#">a link</a> and <b>bold</b>.<br>Second line.</p>
<h2>Steps</h2>
<ul><li>First step.</li><li>Second <em>step</em>.</li></ul>
<blockquote><p>Quoted words.</p></blockquote>
<pre><code>x = 1
  y = 2
</code></pre>
<table><caption>Prices</caption><tr><th>Item</th><th>Cost</th></tr><tr><td></td><td>free</td></tr>
</table>
<p><a href="/a">Link one</a> | <a href="/b">Link two</a></p>
<aside><p>Side note.</p></aside>
</main>
<footer>Footer text</footer>
</body></html>"""


def _triples(doc: ParsedDocument) -> list[tuple[int, int, str, str, tuple[str, ...]]]:
    data = doc.text.encode("utf-8")
    return [
        (s.start, s.end, s.kind, data[s.start : s.end].decode("utf-8"), s.location.heading_path)
        for s in doc.spans
    ]


def test_main_content_exact_text_spans_and_paths() -> None:
    doc = read_html(PAGE)
    assert doc.text == (
        "Café guide\n\nIntro with a link and bold.\nSecond line.\n\nSteps\n\nFirst step.\n\n"
        "Second step.\n\nQuoted words.\n\nx = 1\n  y = 2\n\nPrices\n\nItem | Cost\nfree"
    )
    guide, steps = ("Café guide",), ("Café guide", "Steps")
    assert _triples(doc) == [
        (0, 11, "heading", "Café guide", guide),
        (13, 53, "paragraph", "Intro with a link and bold.\nSecond line.", guide),
        (55, 60, "heading", "Steps", steps),
        (62, 73, "paragraph", "First step.", steps),
        (75, 87, "paragraph", "Second step.", steps),
        (89, 102, "paragraph", "Quoted words.", steps),
        (104, 117, "code", "x = 1\n  y = 2", steps),
        (119, 125, "paragraph", "Prices", steps),
        (127, 131, "cell", "Item", steps),
        (134, 138, "cell", "Cost", steps),
        (139, 143, "cell", "free", steps),
    ]
    assert doc.title == "Café guide"
    assert doc.media_type == "text/html"
    assert [(p.kind, p.text, p.level) for p in doc.passages][-2:] == [
        ("cell", "Item | Cost", 0),
        ("cell", "free", 0),
    ]
    for gone in ("cookies", "Home", "Banner", "Link one", "Side note", "Footer", "var s"):
        assert gone not in doc.text


def test_heading_merges_with_short_paragraph_under_one_path() -> None:
    doc = read_html(b"<h1>A</h1><p>one.</p><h2>B</h2><p>two.</p>", min_passage_bytes=200)
    assert [(p.text, p.location.render()) for p in doc.passages] == [
        ("A\n\none.", "A"),
        ("B\n\ntwo.", "A \u203a B"),
    ]


def test_body_root_and_furniture_by_name_role_and_hidden() -> None:
    page = b"""<body>
<div class="site-menu"><a href="/">Home</a> <a href="/x">News</a></div>
<div class="widget_text"><p>Subscribe to the newsletter for updates every week.</p></div>
<div role="navigation"><p>Role navigation text.</p></div>
<div class="content">
  <div class="title">Plain div title</div>
  <p hidden>Hidden paragraph.</p>
  <p style="display: none">Display none.</p>
  <p aria-hidden="true">Aria hidden.</p>
  <p>Visible paragraph with enough words to count as text.</p>
  <div>Directly in a div.</div>
  <form><label>Your name</label><input value="typed"><button>Send</button></form>
</div>
<div class="footer">Footer by class.</div>
</body>"""
    doc = read_html(page)
    assert [p.text for p in doc.passages] == [
        "Plain div title",
        "Visible paragraph with enough words to count as text.",
        "Directly in a div.",
        "Your name",
    ]
    assert doc.title is None


def test_article_header_and_footer_are_content_but_page_ones_are_not() -> None:
    page = (
        b"<body><header>Page header</header><article><header><h1>Post</h1></header>"
        b"<p>Body.</p><footer><p>Written in May.</p></footer></article>"
        b"<footer>Page footer</footer></body>"
    )
    assert [p.text for p in read_html(page).passages] == ["Post", "Body.", "Written in May."]


def test_class_rule_spares_elements_holding_the_content() -> None:
    page = b'<body class="has-sidebar"><div class="layout-with-sidebar"><h1>Kept</h1>' \
        b"<p>Text.</p></div></body>"
    assert [p.text for p in read_html(page).passages] == ["Kept", "Text."]


def test_link_dense_paragraph_dropped_but_linked_heading_and_cells_kept() -> None:
    page = (
        b'<main><h2><a href="/p">Linked heading</a></h2>'
        b'<p><a href="/1">one</a> <a href="/2">two</a> three</p>'
        b'<p>Mostly words and <a href="/3">one link</a> in a sentence.</p>'
        b'<table><tr><td><a href="/4">cell link</a></td></tr></table></main>'
    )
    assert [p.text for p in read_html(page).passages] == [
        "Linked heading",
        "Mostly words and one link in a sentence.",
        "cell link",
    ]


def test_nested_table_text_joins_its_cell_and_hidden_rows_vanish() -> None:
    page = (
        b"<table><tr><td>outer <table><tr><td>inner</td></tr></table></td><td>b</td></tr>"
        b'<tr hidden><td>secret</td></tr><tr><td> </td><td></td></tr></table>'
    )
    doc = read_html(page)
    assert [p.text for p in doc.passages] == ["outer inner | b"]
    assert [s.kind for s in doc.spans] == ["cell", "cell"]


def test_encodings() -> None:
    latin = '<meta charset="iso-8859-1"><p>Caf\u00e9 \u20ac</p>'.encode("cp1252")
    assert read_html(latin).text == "Caf\u00e9 \u20ac"
    assert decode_html(b"<p>caf\xe9</p>") == "<p>caf\u00e9</p>"  # not UTF-8: windows-1252
    assert decode_html("<p>\u05e9\u05dc\u05d5\u05dd</p>".encode("utf-16")) == (
        "<p>\u05e9\u05dc\u05d5\u05dd</p>"
    )
    assert decode_html(b"\xef\xbb\xbf<p>x</p>") == "<p>x</p>"
    assert decode_html(b'<meta charset="no-such-codec"><p>\xc3\xa9</p>').endswith("\u00e9</p>")
    assert read_html('<p dir="rtl">\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd.</p>'
                     .encode()).text == "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd."


def test_deep_nesting_and_empty_documents() -> None:
    deep = b"<div>" * 5000 + b"<p>deep text</p>" + b"</div>" * 5000
    assert read_html(deep).text == "deep text"
    empty = read_html(b"")
    assert (empty.text, empty.spans, empty.passages) == ("", (), ())
    assert read_html(b"<html><head><title> Only  a title </title></head></html>").title == (
        "Only a title"
    )


def test_long_paragraph_splits_into_passages_of_bounded_size() -> None:
    sentence = "Evidence plans cite exact spans of text. "
    doc = read_html(f"<p>{sentence * 30}</p>".encode(), max_passage_bytes=120)
    assert len(doc.passages) > 5
    assert all(len(p.text.encode()) <= 120 for p in doc.passages)
    assert " ".join(p.text for p in doc.passages) == (sentence * 30).strip()


def test_a_meta_charset_naming_a_non_text_codec_falls_back() -> None:
    assert read_html(b'<meta charset="rot13"><p>caf\xc3\xa9</p>').text == "caf\u00e9"
