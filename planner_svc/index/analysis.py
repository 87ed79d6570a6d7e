"""Text analysis for lexical recall: the terms a text is indexed and searched by.

``analyze(text)``: Unicode NFKC, case folding, words (``\\w+`` runs), English stopwords
dropped, the Snowball English stemmer (PyStemmer) on each word. Runs of Han, Hiragana and
Katakana characters, which carry no spaces between words, and of Hangul, whose words carry
their particles and endings ("한글은", "한글을"), become overlapping character bigrams (a lone
character stays a unigram), as CJK-aware search engines index them (Lucene's CJK bigram
filter, which covers the same four scripts). The same function
analyses documents and queries, so a query term matches exactly the indexed terms.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import Stemmer

from planner_svc.store.text import STOPWORDS

__all__ = ["CONNECTIVES", "STOPWORDS", "analyze", "distinct", "is_cjk", "query_terms"]

_WORD = re.compile(r"\w+")
_CJK = re.compile(
    r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    r"\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\U00020000-\U0003134f]+")
"""Han (with its extensions and compatibility ideographs), Hiragana, Katakana and Hangul
(syllables and jamo)."""
_STEMMER = Stemmer.Stemmer("english")


def _words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    words: list[str] = _WORD.findall(folded)
    if _CJK.search(folded) is None:  # no word holds a CJK run: every word stays whole
        return words
    out: list[str] = []
    for word in words:
        if not _CJK.search(word):
            out.append(word)
            continue
        # split the word into CJK runs (as bigrams) and the other characters (as words)
        at = 0
        for run in _CJK.finditer(word):
            if run.start() > at:
                out.append(word[at : run.start()])
            chars = run.group()
            if len(chars) == 1:
                out.append(chars)
            else:
                out.extend(chars[i : i + 2] for i in range(len(chars) - 1))
            at = run.end()
        if at < len(word):
            out.append(word[at:])
    return out


_STEMS: dict[str, str | None] = dict.fromkeys(STOPWORDS)
"""Word -> its stem (None for a stopword), filled as words are first met: a dictionary lookup
costs a fraction of a stemmer call, and the words of a corpus repeat (Zipf)."""
STEM_MEMO_WORDS = 262_144
"""Words whose stems are kept, at most (about 40 MB; later new words are stemmed each time)."""


def analyze(text: str) -> list[str]:
    """The index terms of ``text``, in order (repeats kept): stemmed words without stopwords."""
    stems = _STEMS
    out: list[str] = []
    for word in _words(text):
        stem = stems.get(word, word)
        if stem is word:  # not met yet (or a one-letter word that is its own stem: same result)
            stem = _STEMMER.stemWord(word)
            if len(stems) < STEM_MEMO_WORDS:
                stems[word] = stem
        if stem is not None:
            out.append(stem)
    return out


CONNECTIVES = frozenset({"vs", "versus"})
"""Words that join the alternatives of a comparison ("France vs Germany"): not a term of a
query (a document holding "vs" answers nothing the question asks). Texts keep them: the index
is unchanged."""


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in first-occurrence order, without :data:`CONNECTIVES`.

    A query made only of stopwords ("Who is it?") keeps its stopwords, stemmed (never its
    connectives: "Who vs What" is ``["who", "what"]``, not a search for the texts that hold
    "vs").
    """
    terms = [t for t in analyze(text) if t not in CONNECTIVES]
    if not terms:
        words = _words(text)
        stems = _STEMMER.stemWords(words) if words else []
        terms = [t for t in stems if t not in CONNECTIVES]
    return list(dict.fromkeys(terms))


def is_cjk(term: str) -> bool:
    """Whether an analysed term is made of Han, Hiragana, Katakana or Hangul characters (a
    character pair or a single character of a CJK run)."""
    return bool(term) and _CJK.fullmatch(term) is not None


def distinct(terms: Iterable[str]) -> list[str]:
    """``terms`` without repeats, in first-occurrence order."""
    return list(dict.fromkeys(terms))
