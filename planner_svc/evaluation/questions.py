"""Evaluation questions: the JSON Lines format and its loader.

One JSON object per line (format in ``bench/eval/README.md``): ``id``, ``type``, ``question``,
``gold`` (titles of the articles whose text is needed) and ``answer`` (a string found verbatim in
the answer's article). Type ``unanswerable`` marks a question the corpus cannot answer: its
``gold`` is empty and it needs no ``answer``; every other type needs both. Several files may be
read together and may mix types; ids must be unique across them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner_svc.core.errors import InvalidRequest

ANSWERABLE_TYPES = ("single", "multi", "compare")
"""Types whose questions have gold articles and an answer string."""

UNANSWERABLE = "unanswerable"
"""The type of a question nothing in the corpus supports (empty ``gold``, no ``answer``)."""

QUESTION_TYPES = (*ANSWERABLE_TYPES, UNANSWERABLE)
"""Every accepted ``type``, in report order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """One evaluation question.

    Attributes:
        id, type, question: as in the file; ``type`` is one of :data:`QUESTION_TYPES`.
        gold: titles of the articles whose text is needed; empty exactly when ``type`` is
            ``unanswerable``.
        answer: a string that occurs verbatim in the answer's article; None for an
            ``unanswerable`` question.
    """

    id: str
    type: str
    question: str
    gold: tuple[str, ...]
    answer: str | None

    @property
    def answerable(self) -> bool:
        """Whether the corpus holds the answer (every type but ``unanswerable``)."""
        return self.type != UNANSWERABLE


def parse_question(obj: Any, where: str) -> Question:
    """One question from a decoded JSON line.

    Args:
        obj: the decoded line.
        where: its location for error messages (``dev.jsonl line 3``).

    Raises:
        InvalidRequest: a field is missing, of the wrong kind or inconsistent with the type
            (field ``<where>: <name>``).
    """
    if not isinstance(obj, dict):
        raise InvalidRequest(where, "is not a JSON object")
    for name in ("id", "type", "question", "gold"):
        if name not in obj:
            raise InvalidRequest(f"{where}: {name}", "is required")
    qtype = obj["type"]
    if qtype not in QUESTION_TYPES:
        raise InvalidRequest(f"{where}: type", f"must be one of {QUESTION_TYPES}, got {qtype!r}")
    text = obj["question"]
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest(f"{where}: question", "must be a non-empty string")
    gold = obj["gold"]
    if not isinstance(gold, list) or not all(isinstance(g, str) and g for g in gold):
        raise InvalidRequest(f"{where}: gold", "must be a list of non-empty titles")
    if qtype == UNANSWERABLE:
        if gold:
            raise InvalidRequest(f"{where}: gold", f"must be empty for type {UNANSWERABLE!r}")
        answer = None if obj.get("answer") is None else str(obj["answer"])
    else:
        if not gold:
            raise InvalidRequest(f"{where}: gold", f"must name at least one title for {qtype!r}")
        if "answer" not in obj:
            raise InvalidRequest(f"{where}: answer", "is required")
        answer = str(obj["answer"])
    return Question(id=str(obj["id"]), type=qtype, question=text, gold=tuple(gold), answer=answer)


def parse_lines(lines: Iterable[str], name: str) -> list[Question]:
    """Questions from the lines of one JSON Lines file named ``name`` (blank lines skipped).

    Raises:
        InvalidRequest: a line is not JSON or not a valid question (``<name> line N: ...``).
    """
    out: list[Question] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name} line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(where, f"is not valid JSON: {exc.msg}") from None
        out.append(parse_question(obj, where))
    return out


def check_unique_ids(questions: Sequence[Question]) -> None:
    """Raise :class:`InvalidRequest` (field ``id``) when two questions share an id."""
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise InvalidRequest("id", f"{q.id!r} appears more than once")
        seen.add(q.id)


def load_questions(paths: Sequence[Path]) -> list[Question]:
    """Read one or more JSON Lines question files, in order.

    Raises:
        OSError: a file cannot be read.
        InvalidRequest: a line is not a valid question, a file is not UTF-8 or holds no
            question, or an id repeats.
    """
    out: list[Question] = []
    for path in paths:
        try:
            with path.open(encoding="utf-8") as fh:
                found = parse_lines(fh, str(path))
        except UnicodeDecodeError:
            raise InvalidRequest(str(path), "is not UTF-8 text") from None
        if not found:
            raise InvalidRequest(str(path), "holds no question")
        out.extend(found)
    check_unique_ids(out)
    return out
