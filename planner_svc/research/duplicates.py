"""Near-duplicate sub-questions: when a proposal repeats a thread the session already has.

A research session admits a proposed sub-question only when it is new. Two rules decide, in
order, against every sub-question of the session (all rounds):

1. **Same words** (:data:`DuplicateRule.SAME_WORDS`): the two texts have the same set of words
   after Unicode NFKC normalisation and case folding, ignoring punctuation, symbols and word
   order (:func:`wording_key`). "Merkle tree — definition?" and "definition: MERKLE TREE" are
   one question; so, by design, are "Did Athens defeat Sparta?" and "Did Sparta defeat
   Athens?" (word order is not read).
2. **Similar meaning** (:data:`DuplicateRule.SIMILAR_MEANING`): every content word of each text
   has a counterpart in the other, a word with the same Snowball English stem ("founded",
   "founders") or whose embedding cosine (the service's embedder, one word at a time) is at
   least the threshold ("began", "started"); numbers match exactly, and when both texts ask with
   interrogatives (who, when, why, ...) they ask with the same ones. The similarity of the pair
   is the weakest of those best matches (:meth:`DuplicateScreen.similarity`), so one word
   without a counterpart ("short-term" against "long-term", "Hamlet" against "Macbeth") keeps
   two questions apart however much else they share. Content words are the words outside
   :data:`FUNCTION_WORDS` (English function words) and :data:`REQUEST_WORDS` (the wording of a
   request rather than its subject: define, explain, sources, known, ...). Without an embedder
   two words are counterparts only when they share a stem, so the rule becomes "the same
   content words".

Why words and not whole sentences: the service's embedder is a static model (token vectors,
mean-pooled), which scores "What were the short-term effects of the Marshall Plan?" against
"... long-term effects ..." at 0.976 and "Who painted the Mona Lisa?" against "When was the
Mona Lisa painted?" at 0.939: no sentence threshold keeps such pairs apart while catching
paraphrases. Compared word by word, co-ordinate words stay apart (short/long 0.54, who/when
0.23, Hamlet/Macbeth 0.40) while synonyms and word forms meet (began/started 0.80,
founded/founders 0.77).

:data:`DEFAULT_DUPLICATE_SIMILARITY` was chosen by measurement on
``bench/eval/question-pairs.jsonl`` (paraphrase pairs against distinct questions on the same
subjects; ``bench/bench_duplicates.py`` prints the table): it is the lowest threshold, in steps
of 0.05, at which no distinct pair is refused. Similarities are computed in a fixed order and
precision (products exact in float64, added in index order), so the same proposals get the same
verdict on every machine.
"""

from __future__ import annotations

import enum
import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner_svc.core.errors import ConfigError
from planner_svc.core.limits import Bounds

if TYPE_CHECKING:  # numpy and the stemmer load on first use: the CLI imports this module
    import numpy as np
    import numpy.typing as npt
    import Stemmer

    from planner_svc.embed.base import Embedder

__all__ = [
    "DEFAULT_DUPLICATE_SIMILARITY",
    "DUPLICATE_SIMILARITY",
    "FUNCTION_WORDS",
    "INTERROGATIVES",
    "REQUEST_WORDS",
    "DuplicateMatch",
    "DuplicatePolicy",
    "DuplicateRule",
    "DuplicateScreen",
    "content_words",
    "wording_key",
    "words",
]

DEFAULT_DUPLICATE_SIMILARITY = 0.8
"""Default threshold of the similar-meaning rule, dimensionless (see the module docstring for
how it was measured)."""

DUPLICATE_SIMILARITY = Bounds(0.0, 1.0, low_open=True)
"""Allowed thresholds: (0, 1]. At 1 only words with identical vectors are counterparts."""

_WORD = re.compile(r"\w+")


@functools.cache
def _stemmer() -> Stemmer.Stemmer:
    """The Snowball English stemmer (PyStemmer), loaded once."""
    import Stemmer

    return Stemmer.Stemmer("english")


_INTERROGATIVES_TEXT = "who whom whose when where why how what which whether"

_FUNCTION_WORDS_TEXT = """a an the of in on at to for from by with about into onto over under as
    and or but nor if is are was were be been being am do does did done doing has have had having
    will would shall should can could may might must it its this that these those there their
    they them he his she her him i me my we our us you your one ones some any all each every
    other such than then so not no also just very more most much many"""

_REQUEST_WORDS_TEXT = """define definition defined defines explain explained explanation
    describe described description meaning mean means meant term terms known know say said says
    tell give list overview information details detail sources source cover covers covering
    covered record records please"""

INTERROGATIVES = frozenset(_INTERROGATIVES_TEXT.split())
"""Question words: compared as a set when both texts ask with them, never as content."""

FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())
"""English function words: never content words."""

REQUEST_WORDS = frozenset(_REQUEST_WORDS_TEXT.split())
"""Words that word a request rather than its subject ("Define X", "Which sources cover X",
"What is known about X"): never content words."""


def words(text: str) -> list[str]:
    """The words of ``text``: runs of word characters after NFKC normalisation and case
    folding, in order (punctuation and symbols separate words and are dropped)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def wording_key(text: str) -> str:
    """The identity of a wording: its distinct :func:`words`, sorted, joined by one space.
    ``""`` for a text without a word (such a proposal is not a question).

    >>> wording_key("Merkle tree — definition?") == wording_key("DEFINITION: merkle  tree")
    True
    """
    return " ".join(sorted(set(words(text))))


def content_words(text: str) -> tuple[str, ...]:
    """The distinct words of ``text`` outside :data:`FUNCTION_WORDS`, :data:`REQUEST_WORDS`
    and :data:`INTERROGATIVES`, in order of first use."""
    stop = FUNCTION_WORDS | REQUEST_WORDS | INTERROGATIVES
    return tuple(dict.fromkeys(w for w in words(text) if w not in stop))


class DuplicateRule(enum.IntEnum):
    """Which rule found a duplicate (numbers match the proto enum ``DuplicateRule``)."""

    SAME_WORDS = 1
    SIMILAR_MEANING = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class DuplicateMatch:
    """The sub-question a proposal repeats.

    Attributes:
        question_id: the digest ID of the sub-question it repeats.
        rule: the rule that matched.
        similarity: the pair's similarity in [0, 1]; 1.0 for :data:`DuplicateRule.SAME_WORDS`.
    """

    question_id: str
    rule: DuplicateRule
    similarity: float


@dataclass(frozen=True, slots=True)
class _Entry:
    question_id: str
    key: str
    content: tuple[str, ...]
    stems: tuple[str, ...]
    numbers: frozenset[str]
    asks: frozenset[str]


class DuplicateScreen:
    """The sub-questions of one session, and the rules that say when a proposal repeats one.

    Not thread-safe: the digest that owns it calls it under its lock.

    Args:
        threshold: similar-meaning threshold in (0, 1].
        embedder: embeds words for the similar-meaning rule; None = words are counterparts only
            when equal.

    Raises:
        ConfigError: (``duplicate_similarity``) the threshold is outside (0, 1].
    """

    def __init__(self, *, threshold: float = DEFAULT_DUPLICATE_SIMILARITY,
                 embedder: Embedder | None = None) -> None:
        if threshold not in DUPLICATE_SIMILARITY:
            raise ConfigError("duplicate_similarity",
                              f"{threshold}; allowed range {DUPLICATE_SIMILARITY}")
        self._threshold = threshold
        self._embedder = embedder
        self._entries: list[_Entry] = []
        self._by_key: dict[str, str] = {}
        self._vectors: dict[str, npt.NDArray[np.float64]] = {}

    @property
    def threshold(self) -> float:
        """The similar-meaning threshold."""
        return self._threshold

    def add(self, question_id: str, text: str) -> None:
        """Register an admitted sub-question (its wording and content words)."""
        entry = _entry(question_id, text)
        self._entries.append(entry)
        self._by_key.setdefault(entry.key, question_id)

    def match(self, text: str) -> DuplicateMatch | None:
        """The sub-question ``text`` repeats, or None when it is new.

        Same words win; otherwise the most similar sub-question at or above the threshold (the
        earliest on a tie).
        """
        proposal = _entry("", text)
        same = self._by_key.get(proposal.key)
        if same is not None:
            return DuplicateMatch(question_id=same, rule=DuplicateRule.SAME_WORDS, similarity=1.0)
        best: DuplicateMatch | None = None
        for entry in self._entries:
            score = self._similarity(proposal, entry)
            if score >= self._threshold and (best is None or score > best.similarity):
                best = DuplicateMatch(question_id=entry.question_id,
                                      rule=DuplicateRule.SIMILAR_MEANING, similarity=score)
        return best

    def similarity(self, a: str, b: str) -> float:
        """The similar-meaning score of two texts in [0, 1] (see the module docstring): 0 when
        their numbers or interrogatives differ or either has no content word."""
        return self._similarity(_entry("", a), _entry("", b))

    def _similarity(self, a: _Entry, b: _Entry) -> float:
        if a.asks and b.asks and a.asks != b.asks:
            return 0.0
        if not a.content or not b.content or a.numbers != b.numbers:
            return 0.0
        if set(a.stems) == set(b.stems):
            return 1.0
        if self._embedder is None:
            return 0.0  # some word has no counterpart with the same stem
        sims = self._word_similarities(a, b)
        weakest = min(float(sims.max(axis=1).min()), float(sims.max(axis=0).min()))
        return max(0.0, min(1.0, weakest))

    def _word_similarities(self, a: _Entry, b: _Entry) -> npt.NDArray[np.float64]:
        """``(len(a.content), len(b.content))`` similarities: 1 for words with the same
        Snowball English stem ("founded", "founders"), 0 when either is a number (numbers match
        only themselves), else the cosine of the two words' vectors."""
        from planner_svc.embed.base import ordered_sum

        va, vb = self._matrix(a.content), self._matrix(b.content)
        # float32 * float32 is exact in float64; the sum runs in index order (same bits on
        # every machine).
        cos = ordered_sum(va[:, None, :] * vb[None, :, :], axis=2)
        for i, (wa, sa) in enumerate(zip(a.content, a.stems, strict=True)):
            for j, (wb, sb) in enumerate(zip(b.content, b.stems, strict=True)):
                if sa == sb:
                    cos[i, j] = 1.0
                elif _numeric(wa) or _numeric(wb):
                    cos[i, j] = 0.0
        return cos

    def _matrix(self, items: Sequence[str]) -> npt.NDArray[np.float64]:
        import numpy as np

        assert self._embedder is not None
        missing = [w for w in dict.fromkeys(items) if w not in self._vectors]
        if missing:
            rows = self._embedder.embed(missing)
            for word, row in zip(missing, rows, strict=True):
                self._vectors[word] = np.asarray(row, dtype=np.float64)
        return np.stack([self._vectors[w] for w in items])


@dataclass(frozen=True, slots=True, kw_only=True)
class DuplicatePolicy:
    """How a server screens proposals: the threshold and the embedder, shared by its sessions.

    Attributes:
        threshold: similar-meaning threshold in (0, 1].
        embedder: the service's embedder; None on a store-only server (content words must then
            be equal).

    Raises:
        ConfigError: (``duplicate_similarity``) the threshold is outside (0, 1].
    """

    threshold: float = DEFAULT_DUPLICATE_SIMILARITY
    embedder: Embedder | None = None

    def __post_init__(self) -> None:
        if self.threshold not in DUPLICATE_SIMILARITY:
            raise ConfigError("duplicate_similarity",
                              f"{self.threshold}; allowed range {DUPLICATE_SIMILARITY}")

    @property
    def embedder_name(self) -> str:
        """The embedder's name, ``""`` without one."""
        return "" if self.embedder is None else self.embedder.name

    def screen(self) -> DuplicateScreen:
        """A new, empty screen for one session."""
        return DuplicateScreen(threshold=self.threshold, embedder=self.embedder)


def _entry(question_id: str, text: str) -> _Entry:
    all_words = words(text)
    content = content_words(text)
    return _Entry(
        question_id=question_id,
        key=" ".join(sorted(set(all_words))),
        content=content,
        stems=tuple(_stemmer().stemWords(list(content))) if content else (),
        numbers=frozenset(w for w in content if _numeric(w)),
        asks=frozenset(w for w in all_words if w in INTERROGATIVES),
    )


def _numeric(word: str) -> bool:
    return any(ch.isdigit() for ch in word)
