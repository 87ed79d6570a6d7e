"""Coverage metrics of a plan against a question's gold articles.

A plan covers a gold article when at least one selected span comes from that article's source;
it contains the answer when the answer string occurs inside the text of one selected span.
Scores are aggregated per question type (``single``, ``multi``, ``compare``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from planner_svc.core.errors import InvalidRequest

QUESTION_TYPES = ("single", "multi", "compare")


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """One evaluation question.

    Attributes:
        id, type, question: as in the file; ``type`` is one of :data:`QUESTION_TYPES`.
        gold: titles of the articles whose text is needed.
        answer: a string that occurs verbatim in the answer's article.
    """

    id: str
    type: str
    question: str
    gold: tuple[str, ...]
    answer: str


def load_questions(path: Path) -> list[Question]:
    """Read a JSON Lines question file.

    Raises:
        InvalidRequest: a line is not JSON or lacks a field (``line N: field``).
    """
    out: list[Question] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidRequest(f"line {lineno}", f"is not valid JSON: {exc.msg}") from None
            for name in ("id", "type", "question", "gold", "answer"):
                if name not in obj:
                    raise InvalidRequest(f"line {lineno}: {name}", "is required")
            if obj["type"] not in QUESTION_TYPES:
                raise InvalidRequest(
                    f"line {lineno}: type", f"must be one of {QUESTION_TYPES}, got {obj['type']!r}"
                )
            out.append(Question(id=str(obj["id"]), type=obj["type"], question=obj["question"],
                                gold=tuple(obj["gold"]), answer=str(obj["answer"])))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """How one plan did on one question."""

    question: Question
    covered: tuple[str, ...]
    answer_in_plan: bool
    used: int

    @property
    def gold_coverage(self) -> float:
        """Share of gold articles with a selected span."""
        return len(self.covered) / len(self.question.gold) if self.question.gold else 0.0

    @property
    def all_gold(self) -> bool:
        """Every gold article covered."""
        return len(self.covered) == len(self.question.gold)


def score(question: Question, titles: Sequence[str], texts: Sequence[str], used: int) -> Outcome:
    """The outcome of a plan given its spans' source titles and texts (parallel sequences)."""
    present = set(titles)
    covered = tuple(t for t in question.gold if t in present)
    answer = any(question.answer in text for text in texts)
    return Outcome(question=question, covered=covered, answer_in_plan=answer, used=used)


def aggregate(outcomes: Iterable[Outcome]) -> dict[str, dict[str, float | int]]:
    """Per type: ``n``, ``goldCoverage``, ``allGold``, ``answerInPlan`` (means, 4 decimals)."""
    by_type: dict[str, list[Outcome]] = {t: [] for t in QUESTION_TYPES}
    for outcome in outcomes:
        by_type[outcome.question.type].append(outcome)
    result: dict[str, dict[str, float | int]] = {}
    for qtype, items in by_type.items():
        n = len(items)
        result[qtype] = {
            "n": n,
            "goldCoverage": round(sum(o.gold_coverage for o in items) / n, 4) if n else 0.0,
            "allGold": round(sum(o.all_gold for o in items) / n, 4) if n else 0.0,
            "answerInPlan": round(sum(o.answer_in_plan for o in items) / n, 4) if n else 0.0,
        }
    return result


def titles_of(source_ids: Iterable[str], title_of: Mapping[str, str | None]) -> list[str]:
    """Source titles for source ids (the id itself when the store has no title)."""
    return [title_of.get(sid) or sid for sid in source_ids]
