"""Question analysis: the alternatives of a comparison or choice become parts."""

from __future__ import annotations

import pytest

from planner_svc.index.analysis import analyze, query_terms
from planner_svc.recall.question import analyze_question, question_parts


@pytest.mark.parametrize(("question", "parts"), [
    ("Which is closer to Earth: Messier 31 or Messier 33?",
     ["Which is closer to Earth Messier 31", "Which is closer to Earth Messier 33"]),
    ("Which river runs farther: the Mississippi from Lake Itasca to its delta, or the Rio "
     "Grande?",
     ["Which river runs farther the Mississippi from Lake Itasca to its delta",
      "Which river runs farther the Rio Grande"]),
    ("Which was founded earlier, the one in Kyoto or the one in Osaka?",
     ["Which was founded earlier the one in Kyoto", "Which was founded earlier the one in Osaka"]),
    ("Which is the oldest: Rome, Athens or Jericho?",
     ["Which is the oldest Rome", "Which is the oldest Athens", "Which is the oldest Jericho"]),
    ("Bhutan or Montenegro: which has more inhabitants?",
     ["which has more inhabitants Bhutan", "which has more inhabitants Montenegro"]),
    ("Between Dracula and Moby-Dick, which was published first?",
     ["which was published first Dracula", "which was published first Moby-Dick"]),
    ("Is the Nile longer than the Amazon?", ["Is the Nile longer", "the Amazon longer"]),
    ("Was Dracula published earlier than Moby-Dick?",
     ["Was Dracula published earlier", "Moby-Dick earlier"]),
    ("Python vs. Java: which is older?", ["which is older Python", "which is older Java"]),
    ("Which came first, Rome versus Carthage?",
     ["Which came first Rome", "Which came first Carthage"]),
    ("France vs Germany population", ["France", "Germany population"]),
    ("Python versus Java versus Go", ["Python", "Java", "Go"]),
    ("Kramer vs. Kramer", []),  # a title: the same on both sides
    ("Who directed Kramer vs. Kramer?", []),  # the same title inside a question
    ("Kramer vs Kramer director", []),
    ("Who directed \u201cKramer vs. Kramer\u201d?", []),  # quoted
    ("Who produced Kramer vs. Kramer's sequel?", []),  # possessive
    ("Kramer vs. \uff2b\uff52\uff41\uff4d\uff45\uff52", []),  # fullwidth: the same under NFKC
    ("Who vs What", []),  # no side has a term of its own
    ("A vs vs B", []),  # "vs B" only follows a stray connective
    ("Vitamin C vs vitamin D?", ["Vitamin C", "vitamin D"]),
    ("Coke vs Pepsi", ["Coke", "Pepsi"]),
    ("A vs B vs C", ["A", "B", "C"]),  # a stopword side beside sides with terms
    ("WHO vs CDC guidance", ["WHO", "CDC guidance"]),
    ("The Who vs The Kinks", ["The Who", "The Kinks"]),
    ("C vs C++ performance", ["C", "C++ performance"]),  # not the same word: "++"
    ("C++ vs C#", ["C++", "C#"]),
    ("\u2103 vs \u2109", ["\u2103", "\u2109"]),  # no word until NFKC (a crash)
    ("tea or coffee", []),  # no head, joined by "or": not surely a choice
    ("Which is older than Rome?", []),
    ("Who painted the Mona Lisa?", []),
    ("Was the war fought in 1914 or 1915?", []),
    ("Is it true or false that water boils at 100 degrees?", []),
])
def test_parts(question: str, parts: list[str]) -> None:
    assert question_parts(question) == parts


def test_analysis_stems_drops_stopwords_and_splits_cjk_into_bigrams() -> None:
    assert analyze("The Capitals of Zambia, 1,370 m deep.") == [
        "capit", "zambia", "1", "370", "m", "deep"]
    assert analyze("富士山は静岡県") == ["富士", "士山", "山は", "は静", "静岡", "岡県"]
    assert analyze("茶") == ["茶"]
    assert query_terms("Who is it?") == ["who", "is", "it"]  # only stopwords: keep them
    question = analyze_question("Which is older: Rome or Athens?")
    assert question.terms == ("older", "rome", "athen")
    assert len(question.parts) == 2


def test_comparison_connectives_are_no_query_terms() -> None:
    # "vs" joins the alternatives; a document holding it answers nothing the question asks
    assert query_terms("France vs. Germany versus Italy") == ["franc", "germani", "itali"]
    assert analyze("Kramer vs. Kramer") == ["kramer", "vs", "kramer"]  # texts keep it
    assert analyze_question("France vs Germany population").terms == (
        "franc", "germani", "popul")
    # a query of stopwords keeps them, but never the connectives (the index holds "vs")
    assert query_terms("Who vs What") == ["who", "what"]
    assert query_terms("vs") == []
