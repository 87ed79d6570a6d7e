"""Unit and property tests of the document parser and the title matcher."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.core.errors import InvalidRequest
from planner_svc.ingest import Location, TitleMatcher, parse_document, title_forms

MARKDOWN = """# Title here #

Intro paragraph with \u00e9
second line.

## Section

```python
print("x")
```

| a | b |
|---|:-:|
| 1 | \u00e9 2 |

Setext
======

- item one
- item two

---
plain
"""


def _slice(text: str, start: int, end: int) -> str:
    return text.encode("utf-8")[start:end].decode("utf-8")


def test_markdown_blocks_and_offsets() -> None:
    doc = parse_document(MARKDOWN, "text/markdown")
    got = [(p.kind, p.level, p.text) for p in doc.passages]
    assert got == [
        ("heading", 1, "Title here"),
        ("paragraph", 0, "Intro paragraph with \u00e9\nsecond line."),
        ("heading", 2, "Section"),
        ("code", 0, 'print("x")'),
        ("cell", 0, "a | b"),
        ("cell", 0, "1 | \u00e9 2"),
        ("heading", 1, "Setext"),
        ("paragraph", 0, "- item one\n- item two"),
        ("paragraph", 0, "plain"),
    ]
    assert doc.title == "Title here"
    assert [p.ordinal for p in doc.passages] == list(range(9))
    for passage in doc.passages:
        texts = [_slice(doc.text, s.start, s.end) for s in passage.spans]
        assert " | ".join(texts) == passage.text
    assert [s.kind for s in doc.spans].count("cell") == 4
    assert list(doc.spans) == sorted(doc.spans, key=lambda s: (s.start, s.end))
    heading = doc.passages[0].spans[0]
    assert (heading.start, heading.end) == (2, 12)
    cell = doc.passages[5].spans[1]
    assert _slice(doc.text, cell.start, cell.end) == "\u00e9 2"


def test_canonical_text_offsets_after_crlf() -> None:
    doc = parse_document("# T\r\n\r\nbody \u4e16\u754c\r\n", "text/markdown")
    assert doc.text == "# T\n\nbody \u4e16\u754c\n"
    span = doc.passages[1].spans[0]
    assert (span.start, span.end) == (5, 16)
    assert _slice(doc.text, span.start, span.end) == "body \u4e16\u754c"


def test_plain_text_paragraphs_ignore_markup() -> None:
    doc = parse_document("# not a heading\n\n  one  \ntwo\n\n\nthree", "text/plain")
    assert [(p.kind, p.text) for p in doc.passages] == [
        ("paragraph", "# not a heading"),
        ("paragraph", "one  \ntwo"),
        ("paragraph", "three"),
    ]
    assert doc.title is None


def test_unclosed_fence_runs_to_end_and_empty_blocks_vanish() -> None:
    doc = parse_document("#\n\n```\n\n```\n\n~~~\ncode line\nmore", "text/markdown")
    assert [(p.kind, p.text) for p in doc.passages] == [("code", "code line\nmore")]


def test_long_paragraph_split_at_sentences() -> None:
    sentence = "The quick brown fox jumps over the lazy dog. "
    text = (sentence * 40).strip()
    doc = parse_document(text, "text/plain", max_passage_bytes=200)
    assert len(doc.passages) > 1
    for passage in doc.passages:
        assert len(passage.text.encode()) <= 200
        assert passage.text.endswith(".")
        assert passage.text.startswith("The")
    assert " ".join(p.text for p in doc.passages) == text


def test_split_without_spaces_keeps_code_points() -> None:
    text = "\u4e16" * 300  # 900 bytes, no space
    doc = parse_document(text, "text/plain", max_passage_bytes=100)
    assert "".join(p.text for p in doc.passages) == text
    assert all(len(p.text.encode()) <= 100 for p in doc.passages)


@pytest.mark.parametrize("media_type", ["application/pdf", "image/png"])
def test_unsupported_media_type(media_type: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        parse_document("x", media_type)
    assert err.value.field == "media_type"


def test_media_type_parameters_and_plain_fallbacks() -> None:
    assert parse_document("# A", "text/markdown; charset=utf-8").passages[0].kind == "heading"
    assert parse_document("# A", "text/csv").passages[0].kind == "paragraph"
    assert parse_document("# A", "").passages[0].kind == "paragraph"


_BLOCK = st.sampled_from(
    [
        "# Head",
        "## Sub \u00e9",
        "para \u4e16 text",
        "```",
        "~~~",
        "| a | b |",
        "|---|---|",
        "===",
        "---",
        "",
        "   ",
        "- item",
        "> quote",
        "text\twith tab",
        "\U0001f600 emoji",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_BLOCK, max_size=25), st.sampled_from(["text/markdown", "text/plain"]))
def test_spans_are_well_formed(lines: list[str], media_type: str) -> None:
    doc = parse_document("\n".join(lines), media_type)
    data = doc.text.encode("utf-8")
    last_end = 0
    for span in doc.spans:
        assert 0 <= span.start < span.end <= len(data)
        assert span.start >= last_end  # in order, never overlapping
        last_end = span.end
        piece = data[span.start : span.end].decode("utf-8")  # on code point boundaries
        assert piece == piece.strip()
        assert span.kind in ("heading", "paragraph", "code", "cell")


# ---------------------------------------------------------------- title matching


def test_title_forms() -> None:
    assert title_forms("Capra (genus)") == [("Capra", "(", "genus", ")"), ("Capra",)]
    assert title_forms("2001: A Space Odyssey") == [("2001", ":", "A", "Space", "Odyssey")]
    assert title_forms("1960") == []  # no letter
    assert title_forms("C (programming language)") == [("C", "(", "programming", "language", ")")]


def test_matcher_whole_words_case_and_bare_forms() -> None:
    m = TitleMatcher()
    m.add("cash", "Johnny Cash")
    m.add("capra", "Capra (genus)")
    m.add("ant", "Ant")
    assert m.find("Johnny Cash's band") == {"cash"}
    assert m.find("johnny cash") == set()  # case-sensitive
    assert m.find("Johnny Cashmere") == set()  # whole words
    assert m.find("Members of Capra are goats") == {"capra"}
    assert m.find("the genus Capra (genus) again") == {"capra"}
    assert m.find("Ants and an Ant.") == {"ant"}
    assert m.find("") == set()


def test_matcher_leftmost_longest_and_retitle() -> None:
    m = TitleMatcher()
    m.add("empire", "Empire")
    m.add("roman", "Roman Empire")
    assert m.find("The Roman Empire fell") == {"roman"}
    assert m.find("An Empire rose") == {"empire"}
    assert m.add("roman", "Roman Empire") is False
    assert m.add("roman", "Rome") is True
    assert m.find("The Roman Empire fell") == {"empire"}
    assert m.find("Rome") == {"roman"}
    assert len(m) == 2


# ---------------------------------------------------------------- locations


def test_markdown_heading_paths() -> None:
    doc = parse_document(
        "# Guide\n\nLead.\n\n## Setup\n\nInstall it.\n\n| k | v |\n|---|---|\n| a | b |\n\n"
        "### Linux  notes\n\n```\nmake\n```\n\n## Use\n\nRun it.\n\n# Appendix\n\nMore.\n",
        "text/markdown",
    )
    got = [(_slice(doc.text, s.start, s.end), s.location.heading_path) for s in doc.spans]
    assert got == [
        ("Guide", ("Guide",)),
        ("Lead.", ("Guide",)),
        ("Setup", ("Guide", "Setup")),
        ("Install it.", ("Guide", "Setup")),
        ("k", ("Guide", "Setup")),
        ("v", ("Guide", "Setup")),
        ("a", ("Guide", "Setup")),
        ("b", ("Guide", "Setup")),
        ("Linux  notes", ("Guide", "Setup", "Linux notes")),
        ("make", ("Guide", "Setup", "Linux notes")),
        ("Use", ("Guide", "Use")),
        ("Run it.", ("Guide", "Use")),
        ("Appendix", ("Appendix",)),
        ("More.", ("Appendix",)),
    ]
    assert all(s.location.page is None and s.location.cell_index is None for s in doc.spans)
    assert [p.location.render() for p in doc.passages][:3] == [
        "Guide",
        "Guide",
        "Guide \u203a Setup",
    ]


def test_merged_passage_keeps_the_heading_location() -> None:
    doc = parse_document(
        "# A\n\nshort.\n\n## B\n\nalso short.", "text/markdown", min_passage_bytes=200
    )
    assert [(p.text, p.location.heading_path) for p in doc.passages] == [
        ("A\n\nshort.", ("A",)),
        ("B\n\nalso short.", ("A", "B")),
    ]


def test_plain_text_has_empty_locations() -> None:
    doc = parse_document("one\n\ntwo", "text/plain")
    assert {s.location for s in doc.spans} == {Location()}
    assert Location().render() == ""


def test_location_rendering_and_validation() -> None:
    assert Location(page=3).render() == "p. 3"
    assert Location(cell_index=4).render() == "cell 4"
    assert str(Location(heading_path=("Intro", "Setup"))) == "Intro \u203a Setup"
    both = Location(page=2, heading_path=("Results",), cell_index=None)
    assert both.render() == "p. 2 \u00b7 Results"
    assert Location(cell_index=0, heading_path=("A",)).render() == "cell 0 \u00b7 A"
    with pytest.raises(ValueError, match="page 0"):
        Location(page=0)
    with pytest.raises(ValueError, match="cell_index -1"):
        Location(cell_index=-1)
