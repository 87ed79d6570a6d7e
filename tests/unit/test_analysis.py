"""Text analysis: the memoised stemming gives the terms a plain stemmer pass gives."""

from __future__ import annotations

import unicodedata

import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.index import analysis
from planner_svc.index.analysis import STOPWORDS, analyze, query_terms

_REFERENCE = Stemmer.Stemmer("english")


def _reference(text: str) -> list[str]:
    """Stopwords dropped from the words, then every word stemmed by the stemmer itself."""
    words = [w for w in analysis._words(text) if w not in STOPWORDS]
    return list(_REFERENCE.stemWords(words))


_WORDS = st.sampled_from(
    ["running", "runs", "the", "of", "Paintings", "painted", "x", "a", "É", "ﬁsh", "日本語",
     "東京タワー", "Löwe", "ΣΊΣΥΦΟΣ", "42", "data_set", "connection", "connected", "is"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_WORDS, st.text(max_size=12)), max_size=30))
def test_analyze_equals_a_plain_stemmer_pass(parts: list[str]) -> None:
    text = " ".join(parts)
    assert analyze(text) == _reference(text)
    assert analyze(text) == _reference(text)  # the second time from the memo


def test_known_terms_of_a_mixed_text() -> None:
    assert analyze("The painters were painting ﬁsh in 東京タワー, x") == [
        "painter", "paint", "fish", "東京", "京タ", "タワ", "ワー", "x"]
    assert query_terms("Who is it?") == ["who", "is", "it"]


def test_words_past_the_memo_bound_are_still_stemmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analysis, "_STEMS", dict.fromkeys(STOPWORDS))
    monkeypatch.setattr(analysis, "STEM_MEMO_WORDS", len(STOPWORDS) + 1)
    assert analyze("walking talking") == ["walk", "talk"]
    assert list(analysis._STEMS) == [*STOPWORDS, "walking"]  # the bound reached
    assert analyze("talking walking the") == ["talk", "walk"]
    assert analysis._STEMS["walking"] == "walk" and "talking" not in analysis._STEMS


def test_a_text_without_cjk_keeps_its_words_whole() -> None:
    text = unicodedata.normalize("NFKC", "Ångström's café-au-lait 3.14")
    assert analysis._words(text) == ["ångström", "s", "café", "au", "lait", "3", "14"]


def test_hangul_words_become_bigrams_so_a_stem_matches_across_particles() -> None:
    # "김장은" (topic particle) and "김장이라고" (quotative ending) share the stem "김장"
    assert analyze("김장은 무엇") == ["김장", "장은", "무엇"]
    assert "김장" in analyze("이것을 김장이라고 합니다")
    assert analysis.is_cjk("김장") and analysis.is_cjk("の高") and not analysis.is_cjk("rust")
    # an initial and a vowel typed apart (compatibility or conjoining jamo) compose under NFKC
    assert analyze("ㅎㅏ") == analyze("\u1112\u1161") == ["하"]
    # a final consonant only as a conjoining jongseong: compatibility "ㄴ" becomes an initial
    assert analyze("\u1112\u1161\u11ab") == ["한"] != analyze("ㅎㅏㄴ")
