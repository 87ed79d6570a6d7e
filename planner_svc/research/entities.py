"""Which knowledge-graph entities a piece of text mentions (used by the offline provider).

The planner depends only on :class:`EntityLookup`. :class:`TitleEntityLookup` adapts anything
that can resolve a document title to source IDs (the store's ``source_ids_by_title``) by
probing the text's word n-grams, longest first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class EntityLookup(Protocol):
    """Finds the entities (document titles) a text mentions."""

    def find_entities(self, text: str) -> list[str]:
        """Titles mentioned in ``text``, in order of first mention, without duplicates."""
        ...


class NoEntities:
    """An :class:`EntityLookup` that knows no entities (no knowledge graph configured)."""

    def find_entities(self, text: str) -> list[str]:
        """Always ``[]``."""
        return []


@runtime_checkable
class TitleIndex(Protocol):
    """The part of the store :class:`TitleEntityLookup` needs."""

    def source_ids_by_title(self, title: str) -> Sequence[str]:
        """Source IDs of the documents titled ``title``; empty when none."""
        ...


_WORD_RE = re.compile(r"[\w][\w'’.-]*[\w]|[\w]")

_STOPWORDS_TEXT = """a about after all also an and any are as at be been before between but by can
    could did do does during each for from had has have how if in into is it its more most not of
    on or other over should since so some such than that the their them then there these they
    this those through to under until was were what when where whether which who whom whose
    why will with within would you your"""

STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
"""Words that never make an entity on their own (an n-gram made only of them is not probed)."""


class TitleEntityLookup:
    """:class:`EntityLookup` over a :class:`TitleIndex`: a title is mentioned when some run of
    up to ``max_words`` consecutive words of the text resolves to at least one source.

    Scans left to right and takes the longest matching run at each position, so "New York
    Times" wins over "New York". Runs made only of :data:`STOPWORDS` are skipped. Probes at most
    ``len(words) * max_words`` titles; matching is exactly as case-sensitive as the index.

    Args:
        index: the title resolver (the store).
        max_words: longest run probed, 1..12.
        max_entities: most titles returned, >= 1.

    Raises:
        ValueError: an argument out of range.
    """

    def __init__(self, index: TitleIndex, *, max_words: int = 6, max_entities: int = 8) -> None:
        if not 1 <= max_words <= 12:
            raise ValueError(f"max_words: {max_words}; allowed range 1..12")
        if max_entities < 1:
            raise ValueError(f"max_entities: {max_entities}; must be >= 1")
        self._index = index
        self._max_words = max_words
        self._max_entities = max_entities

    def find_entities(self, text: str) -> list[str]:
        """Titles mentioned in ``text``, in order of first mention, without duplicates."""
        words = _WORD_RE.findall(text)
        found: list[str] = []
        seen: set[str] = set()
        i = 0
        while i < len(words) and len(found) < self._max_entities:
            matched = 0
            for n in range(min(self._max_words, len(words) - i), 0, -1):
                run = words[i : i + n]
                if all(w.casefold() in STOPWORDS for w in run):
                    continue
                title = " ".join(run)
                if self._index.source_ids_by_title(title):
                    if title not in seen:
                        seen.add(title)
                        found.append(title)
                    matched = n
                    break
            i += matched or 1
        return found
