"""What a question asks: its terms, and the parts a multi-part question has.

A comparison or choice ("Which is older: the Cupertino iPhone maker or Jeff Bezos's e-commerce
company?", "Which river runs farther, the Mississippi or the Rio Grande?") names two or more
alternatives, each of which needs evidence of its own; a plan should carry a span for every
one of them even at a small budget. :func:`question_parts` finds the alternatives of a final
``A or B`` (or ``A, B or C``; ``vs`` and ``versus`` join alternatives too) list set off by a
colon or a comma, of a leading ``A or B:`` list, and of a leading ``Between A and B,``, and
returns one sub-question per alternative: the question's head ("Which is older") followed by
that alternative. Alternatives joined by ``vs`` or ``versus`` need no head ("France vs Germany
population": "France" and "Germany population"). A yes/no comparison ("Is A older than B?")
has two parts: its words up to the comparative ("Is A older"), and what follows ``than`` with
the comparative ("B older").
Questions of other shapes have no parts.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass

from planner_svc.index.analysis import CONNECTIVES, analyze, query_terms

__all__ = ["Question", "analyze_question", "question_parts"]

_OR = re.compile(r"\s+(?:or|vs\.?|versus)\s+", re.IGNORECASE)
_BETWEEN = re.compile(r"^(?:of\s+|between\s+)(.+?)\s+and\s+(.+?),\s*(.+)$", re.IGNORECASE)
_LIST_SEP = re.compile(r",\s*|\s+(?:or|vs\.?|versus)\s+", re.IGNORECASE)
_VS = re.compile(r"\s+(?:vs\.?|versus)\s+", re.IGNORECASE)
_OR_WORD = re.compile(r"\s+or\s+", re.IGNORECASE)
_WORD = re.compile(r"\w+")
_POSSESSIVE = re.compile(r"['\u2019]s$")
_THAN = re.compile(
    r"^((?:is|was|are|were|does|did|do|has|have|had|can|could)\s+.+?\s+(\w+))\s+than\s+(.+)$",
    re.IGNORECASE)
MAX_PARTS = 8
"""Most alternatives kept (a longer list is not a comparison)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """An analysed question.

    Attributes:
        text: the question as asked.
        terms: its distinct analysed terms (:func:`planner_svc.index.analysis.query_terms`).
        parts: sub-questions of a multi-part question (empty for a single-part one).
    """

    text: str
    terms: tuple[str, ...]
    parts: tuple[str, ...]


def question_parts(question: str) -> list[str]:
    """The sub-questions of a comparison or choice, one per alternative (see the module
    docstring); ``[]`` when the question lists no alternatives."""
    text = question.strip().rstrip("?!. ").strip()
    than = _THAN.match(text)
    if than:  # "Is A older than B?"
        left, comparative, right = (g.strip() for g in than.groups())
        return [left, f"{right} {comparative}"] if right else []
    between = _BETWEEN.match(text)
    if between:  # "Between A and B, which ...?"
        first, second, head = (g.strip() for g in between.groups())
        return [f"{head} {first}", f"{head} {second}"] if first and second and head else []
    ors = list(_OR.finditer(text))
    if not ors:
        return []
    last = ors[-1]
    right = text[last.end() :].strip()
    if ":" in right:  # "A or B: which ...?"
        right, head = (x.strip() for x in right.split(":", 1))
        alternatives = [a.strip() for a in _LIST_SEP.split(text[: last.start()]) if a.strip()]
        alternatives.append(right)
        if not head or not right or not 2 <= len(alternatives) <= MAX_PARTS:
            return []
        return [f"{head} {alternative}" for alternative in alternatives]
    before = text[: last.start()].rstrip().rstrip(",").rstrip()
    colon = before.rfind(":")
    if colon >= 0:
        head, listed = before[:colon], before[colon + 1 :]
    else:
        comma = before.rfind(",")
        if comma < 0:
            return _headless(text)
        head, listed = before[:comma], before[comma + 1 :]
    alternatives = [a.strip() for a in _LIST_SEP.split(listed) if a.strip()]
    alternatives.append(right)
    head = head.strip()
    if not head or not right or not 2 <= len(alternatives) <= MAX_PARTS:
        return []
    return [f"{head} {alternative}" for alternative in alternatives]


def _headless(text: str) -> list[str]:
    """The alternatives of a comparison without a head, joined by ``vs`` or ``versus``
    ("France vs Germany population": "France", "Germany population"); ``[]`` when ``or``
    joins them ("tea or coffee" may not be a comparison at all), a side is empty, holds no
    word but a connective ("A vs vs B") or no side has a term that is not a stopword ("Who vs
    What"), two sides are the same, or the words on either side of a connective are
    ("Kramer vs. Kramer", "Who directed Kramer vs. Kramer?": a title, not a choice). A side
    of stopwords beside one that has terms is still an alternative ("WHO vs CDC", "A vs B vs
    C"), and words that differ in more than punctuation are not the same ("C vs C++")."""
    if _OR_WORD.search(text):
        return []
    alternatives = [a.strip() for a in _VS.split(text)]
    if not all(alternatives) or not 2 <= len(alternatives) <= MAX_PARTS:
        return []
    if len({a.casefold() for a in alternatives}) < len(alternatives):
        return []
    words = [_WORD.findall(unicodedata.normalize("NFKC", a).casefold()) for a in alternatives]
    if not all(w and w[0] not in CONNECTIVES and w[-1] not in CONNECTIVES for w in words):
        return []  # a side without words, or a stray connective ("A vs vs B": "vs B")
    if not any(t not in CONNECTIVES for a in alternatives for t in analyze(a)):
        return []  # stopwords only on every side: nothing of their own to find
    tokens = [unicodedata.normalize("NFKC", a).casefold().split() for a in alternatives]
    if any(_bare(left[-1]) == _bare(right[0]) != ""
           for left, right in itertools.pairwise(tokens)):
        return []  # the same word on both sides of "vs": a title, as in "Kramer vs. Kramer"
    return alternatives


def _bare(token: str) -> str:
    """``token`` without the punctuation around it (quotes, brackets, a full stop) and a
    possessive ``'s``; a ``#`` or ``+`` of a name such as "C#" or "C++" stays."""
    for _ in range(2):
        start, end = 0, len(token)
        while start < end and _edge_punctuation(token[start]):
            start += 1
        while end > start and _edge_punctuation(token[end - 1]):
            end -= 1
        token = _POSSESSIVE.sub("", token[start:end])
    return token


def _edge_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P") and char not in "#*%&@"


def analyze_question(text: str) -> Question:
    """Terms and parts of ``text``."""
    return Question(text=text, terms=tuple(query_terms(text)),
                    parts=tuple(question_parts(text)))
