"""Evaluation question files: the format, the ``unanswerable`` type, errors naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner_svc.core.errors import InvalidRequest
from planner_svc.evaluation.questions import Question, load_questions, parse_lines


def _line(**fields: object) -> str:
    return json.dumps(fields) + "\n"


SINGLE = _line(id="s1", type="single", question="Who?", gold=["A"], answer="x")
UNANSWERABLE = _line(id="u1", type="unanswerable", question="Refund window?", gold=[])


def test_mixed_types_load_in_order_and_unanswerable_needs_no_answer(tmp_path: Path) -> None:
    first = tmp_path / "dev.jsonl"
    first.write_text(SINGLE + "\n" + _line(id="c1", type="compare", question="Older?",
                                           gold=["A", "B"], answer=1960))
    second = tmp_path / "none.jsonl"
    second.write_text(UNANSWERABLE)
    questions = load_questions([first, second])
    assert questions == [
        Question(id="s1", type="single", question="Who?", gold=("A",), answer="x"),
        Question(id="c1", type="compare", question="Older?", gold=("A", "B"), answer="1960"),
        Question(id="u1", type="unanswerable", question="Refund window?", gold=(), answer=None),
    ]
    assert [q.answerable for q in questions] == [True, True, False]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (_line(id="s2", type="single", question="Who?", gold=["A"]),
         "f.jsonl line 2: answer: is required"),
        (_line(id="s2", type="trivia", question="Who?", gold=["A"], answer="x"),
         "f.jsonl line 2: type: must be one of ('single', 'multi', 'compare', 'unanswerable'), "
         "got 'trivia'"),
        (_line(id="u2", type="unanswerable", question="Who?", gold=["A"]),
         "f.jsonl line 2: gold: must be empty for type 'unanswerable'"),
        (_line(id="m2", type="multi", question="Who?", gold=[], answer="x"),
         "f.jsonl line 2: gold: must name at least one title for 'multi'"),
        (_line(id="s2", type="single", question=" ", gold=["A"], answer="x"),
         "f.jsonl line 2: question: must be a non-empty string"),
        (_line(id="s2", type="single", question="Who?", gold="A", answer="x"),
         "f.jsonl line 2: gold: must be a list of non-empty titles"),
        (_line(type="single", question="Who?", gold=["A"], answer="x"),
         "f.jsonl line 2: id: is required"),
        ("{not json\n", "f.jsonl line 2: is not valid JSON: Expecting property name enclosed in "
                        "double quotes"),
        ("[1, 2]\n", "f.jsonl line 2: is not a JSON object"),
    ],
)
def test_bad_lines_name_file_line_and_field(line: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_lines([SINGLE, line], "f.jsonl")
    assert str(info.value) == message


def test_ids_must_be_unique_across_files(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_text(SINGLE)
    b = tmp_path / "b.jsonl"
    b.write_text(SINGLE)
    with pytest.raises(InvalidRequest, match=r"^id: 's1' appears more than once$"):
        load_questions([a, b])


def test_empty_and_non_utf8_files_are_rejected(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(InvalidRequest, match=r"empty\.jsonl: holds no question$"):
        load_questions([empty])
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"id": "\xe9"}\n')
    with pytest.raises(InvalidRequest, match=r"latin\.jsonl: is not UTF-8 text$"):
        load_questions([latin])
