"""Near-duplicate sub-questions: same words, similar meaning, the measured threshold."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_duplicates import load, score, table
from planner_svc.core.errors import ConfigError
from planner_svc.embed import default_embedder
from planner_svc.embed.base import Embedder
from planner_svc.research.duplicates import (
    DEFAULT_DUPLICATE_SIMILARITY,
    DuplicatePolicy,
    DuplicateRule,
    DuplicateScreen,
    content_words,
    wording_key,
)

PAIRS = Path(__file__).resolve().parents[2] / "bench" / "eval" / "question-pairs.jsonl"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return default_embedder()


@pytest.fixture
def embedded(embedder: Embedder) -> DuplicateScreen:
    return DuplicateScreen(embedder=embedder)


def test_wording_key_ignores_width_case_punctuation_and_order() -> None:
    base = wording_key("What caused the Cold War?")
    assert base == "caused cold the war what"
    for variant in ("what caused the cold war", "WHAT CAUSED THE COLD WAR?!",
                    "Ｗｈａｔ ｃａｕｓｅｄ ｔｈｅ Ｃｏｌｄ Ｗａｒ？",
                    "Cold War — what caused the?"):
        assert wording_key(variant) == base, variant
    assert wording_key(" ?! … ") == ""
    assert content_words("Which sources cover the causes of the Cold War?") == (
        "causes", "cold", "war")


def test_merkle_tree_paraphrases_are_one_question_without_an_embedder() -> None:
    screen = DuplicateScreen()
    screen.add("q1", "What is a Merkle tree?")
    same = screen.match("Ｗｈａｔ　ｉｓ　ａ　Ｍｅｒｋｌｅ　ｔｒｅｅ？")
    assert same is not None
    assert (same.question_id, same.rule, same.similarity) == ("q1", DuplicateRule.SAME_WORDS, 1.0)
    for text in ("Define Merkle tree", "Merkle tree — definition?", "Merkle trees: explain"):
        match = screen.match(text)
        assert match is not None, text
        assert (match.question_id, match.rule) == ("q1", DuplicateRule.SIMILAR_MEANING)
        assert match.similarity == 1.0  # the same content words, stems included
    assert screen.match("How are Merkle trees used in Bitcoin?") is None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How is NATO related to the Cold War?", "How is the Warsaw Pact related to the Cold War?"),
        ("What caused the 2020 outage?", "What caused the 2021 outage?"),
        ("Who painted the Mona Lisa?", "When was the Mona Lisa painted?"),
        ("What were the short-term effects of the Marshall Plan?",
         "What were the long-term effects of the Marshall Plan?"),
        ("What caused the Cold War?", "What is known about the Cold War?"),
        ("What caused the Cold War?", "What caused the Cold War in Asia?"),
    ],
)
def test_distinct_questions_are_not_duplicates(embedded: DuplicateScreen, a: str, b: str) -> None:
    assert embedded.similarity(a, b) < DEFAULT_DUPLICATE_SIMILARITY
    embedded.add("q1", a)
    assert embedded.match(b) is None


def test_word_vectors_pair_word_forms_the_stemmer_misses(embedded: DuplicateScreen) -> None:
    a, b = "When did the French Revolution begin?", "When did the French Revolution start?"
    assert DuplicateScreen().similarity(a, b) == 0.0  # begin / start: different stems
    similarity = embedded.similarity(a, b)
    assert DEFAULT_DUPLICATE_SIMILARITY <= similarity < 1.0
    assert embedded.similarity(a, b) == similarity  # the same bits every time


def test_best_match_wins_and_ties_go_to_the_earliest(embedded: DuplicateScreen) -> None:
    screen = embedded
    screen.add("q1", "When did the French Revolution start?")
    screen.add("q2", "When did the French Revolution begin?")
    screen.add("q3", "Define French Revolution beginning")
    match = screen.match("French Revolution: when did it begin")
    assert match is not None and (match.question_id, match.similarity) == ("q2", 1.0)
    screen.add("q4", "When did the French Revolution begin")  # same words as q2: q2 still first
    again = screen.match("When did the French Revolution begin?!")
    assert again is not None and (again.question_id, again.rule) == (
        "q2", DuplicateRule.SAME_WORDS)


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.01, float("nan")])
def test_threshold_out_of_range_is_refused(threshold: float) -> None:
    with pytest.raises(ConfigError) as err:
        DuplicatePolicy(threshold=threshold)
    assert err.value.field == "duplicate_similarity"
    with pytest.raises(ConfigError):
        DuplicateScreen(threshold=threshold)


def test_the_default_threshold_is_the_measured_one() -> None:
    """bench/bench_duplicates.py's rule: the lowest threshold (steps of 0.05) that refuses no
    distinct pair of the labelled set; it must still catch every paraphrase kind that a
    session meets most (definitions, reorderings, references, style)."""
    embedder_name, scored = score(load(PAIRS))
    report = table(scored)
    assert embedder_name == default_embedder().name
    assert report["paraphrases"] >= 100 and report["distinct"] >= 150
    assert report["chosen"]["threshold"] == DEFAULT_DUPLICATE_SIMILARITY
    chosen = next(r for r in report["thresholds"]
                  if r["threshold"] == DEFAULT_DUPLICATE_SIMILARITY)
    assert chosen["distinct_refused_similar"] == 0
    by_kind = report["paraphrases_by_kind"]
    for kind in ("definition", "reordered", "reference", "style"):
        assert chosen["caught_by_kind"][kind] == by_kind[kind], kind
    # Only the pairs that reverse word order are refused among the distinct ones, by design.
    reversed_ids = {s.id for s in scored if s.kind == "reversed"}
    assert set(report["distinct_refused_same_words"]) == reversed_ids
