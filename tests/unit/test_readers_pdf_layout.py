"""The pure parts of the PDF reader: line joining, de-hyphenation, ligatures, running lines,
heading levels, page-break continuation and visual -> logical reordering."""

from __future__ import annotations

import pytest

from planner_svc.ingest.readers.bidi import levels, visual_to_logical
from planner_svc.ingest.readers.pdf_layout import Line, clean, joiner, layout


def line(page: int, text: str, baseline: float, *, size: float = 10.0, right: float = 300.0,
         height: float = 800.0) -> Line:  # fmt: skip
    return Line(page=page, text=text, size=size, baseline=baseline, left=50.0, right=right,
                page_height=height)  # fmt: skip


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("infor-", "mation", ("infor", "")),
        ("infor\x02", "mation", ("infor", "")),
        ("infor\u00ad", "mation", ("infor", "")),
        ("Jean-", "Paul", ("Jean-", " ")),  # capital after: a real hyphen
        ("page 3-", "4", ("page 3-", " ")),
        ("word", "next", ("word", " ")),
        ("\u6771\u4eac", "\u306f", ("\u6771\u4eac", "")),
        ("Tokyo", "\u6771", ("Tokyo", " ")),
        ("-", "x", ("-", " ")),
    ],
)
def test_joiner(before: str, after: str, expected: tuple[str, str]) -> None:
    assert joiner(before, after) == expected


def test_clean_expands_ligatures_and_resolves_hyphen_markers() -> None:
    assert clean("\ufb01ne \ufb02ow \ufb03ce \ufb04e \ufb00 \ufb05 \ufb06") == (
        "fine flow ffice ffle ff st st"
    )
    assert clean("infor\x02mation  and  Jean\ufffePaul\t x\x00") == "information and Jean-Paul x"


def test_lines_join_into_paragraphs_by_spacing_and_sentence_ends() -> None:
    pages = [
        [
            line(1, "Title line", 760, size=18),
            line(1, "first line of a paragraph that", 730),
            line(1, "ends here.", 718, right=120),  # short line ending a sentence: its end
            line(1, "next paragraph after a short", 706),
            line(1, "line, which runs on", 694),
            line(1, "after a gap.", 660),  # a gap more than 1.5 lines: a new block
        ]
    ]
    blocks = layout(pages)
    assert [(b.kind, b.level, b.text) for b in blocks] == [
        ("heading", 1, "Title line"),
        ("paragraph", 0, "first line of a paragraph that ends here."),
        ("paragraph", 0, "next paragraph after a short line, which runs on"),
        ("paragraph", 0, "after a gap."),
    ]


def test_paragraph_runs_across_a_page_break_with_a_hyphen_and_an_empty_page() -> None:
    pages = [
        [line(1, "A sentence without its end goes to infor-", 100)],
        [],
        [line(3, "mation on a later page.", 760), line(3, "Second paragraph.", 700)],
    ]
    blocks = layout(pages)
    assert [(b.kind, b.parts) for b in blocks] == [
        ("paragraph",
         [(1, "A sentence without its end goes to infor"), (3, "mation on a later page.")]),
        ("paragraph", [(3, "Second paragraph.")]),
    ]  # fmt: skip


def test_finished_sentence_does_not_continue_on_the_next_page() -> None:
    pages = [[line(1, "Done here.", 100)], [line(2, "fresh start.", 760)]]
    assert [b.parts for b in layout(pages)] == [[(1, "Done here.")], [(2, "fresh start.")]]


def test_running_lines_and_page_numbers_dropped() -> None:
    pages = [
        [
            line(p, f"Annual report {2020 + p}", 790),
            line(p, f"Body text on page {p}.", 500),
            line(p, f"- {p} -", 20),
        ]
        for p in (1, 2)
    ]
    pages.append([line(3, "Page 3 of 3", 15), line(3, "Last page.", 500)])
    assert [b.text for b in layout(pages)] == [
        "Body text on page 1.",
        "Body text on page 2.",
        "Last page.",
    ]


def test_heading_levels_rank_sizes_and_long_big_lines_are_paragraphs() -> None:
    pages = [
        [
            line(1, "Big", 760, size=24),
            line(1, "Medium", 720, size=16),
            line(1, "Body text " * 30, 690),
            line(1, "Medium again", 650, size=16),
            line(1, "x" * 250, 600, size=16),
            line(1, "Body text " * 30, 560),
        ]
    ]
    assert [(b.kind, b.level) for b in layout(pages)] == [
        ("heading", 1),
        ("heading", 2),
        ("paragraph", 0),
        ("heading", 2),
        ("paragraph", 0),
        ("paragraph", 0),
    ]


def _visual(logical_runs: list[tuple[str, bool]]) -> list[str]:
    """Clusters of a line drawn left to right from (text, is_rtl) runs (RTL runs reversed)."""
    out: list[str] = []
    for text, rtl in logical_runs:
        out.extend(reversed(text) if rtl else text)
    return out


@pytest.mark.parametrize(
    ("runs", "logical"),
    [
        ([("Hebrew ", False), ("\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd", True),
          (" end.", False)], "Hebrew \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd end."),
        ([("\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd.", True)],
         "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd."),
        ([("abc def", False)], "abc def"),
    ],
)  # fmt: skip
def test_visual_to_logical(runs: list[tuple[str, bool]], logical: str) -> None:
    assert visual_to_logical(_visual(runs)) == logical


def test_right_to_left_base_keeps_embedded_latin_and_digits_in_order() -> None:
    # logical: SHALOM Hello 42 OLAM; under UAX #9 the digits are their own run at level 2, so
    # drawn left to right it reads: OLAM 42 Hello SHALOM (each Hebrew word mirrored)
    shalom, olam = "\u05e9\u05dc\u05d5\u05dd", "\u05e2\u05d5\u05dc\u05dd"
    visual = [*reversed(olam), " ", "4", "2", " ", *"Hello", " ", *reversed(shalom)]
    assert visual_to_logical(visual) == f"{shalom} Hello 42 {olam}"
    assert levels(["\u05e9", " ", "a"])[0] == 1


def test_ligature_clusters_move_as_one() -> None:
    lam_alef = "\u0644\u0627"
    visual = ["\u0646", lam_alef, "\u0633"]  # three clusters of an Arabic word, drawn RTL
    assert visual_to_logical(visual) == "\u0633" + lam_alef + "\u0646"
