"""Title mentions: which documents a passage names by title.

A passage mentions a document when the document's title occurs in the passage as whole words,
case-sensitively. A title ending in a parenthetical qualifier (``Capra (genus)``) also matches
its bare form (``Capra``). Titles and texts are cut into tokens (runs of word characters, and
every other non-space character on its own), and a title matches a run of equal tokens, so
``Johnny Cash's`` mentions ``Johnny Cash`` while ``Cashmere`` does not mention ``Cash``.

Forms that would match noise are not registered: a form without any letter (``1``, ``1960``)
and a single-token form of one character.

Matching is a dictionary lookup of token n-grams (a map from a form's first token to the
n-gram lengths registered for it, then a set lookup per length), so its cost grows with the
passage length and not with the number of titles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Protocol

from planner_svc.store.fulltext import phrase_words

_TOKEN = re.compile(r"\w+|[^\w\s]")
_QUALIFIED = re.compile(r"^(.*\S)\s+\([^()]*\)$")


def tokens(text: str) -> list[str]:
    """Match tokens of ``text``: ``\\w+`` runs and single non-space, non-word characters."""
    return _TOKEN.findall(text)


def title_forms(title: str) -> list[tuple[str, ...]]:
    """Token forms a title matches: itself and, for ``Name (qualifier)``, ``Name``; forms that
    would match noise (see the module docstring) are left out. Deduplicated, in that order."""
    candidates = [title.strip()]
    qualified = _QUALIFIED.match(title.strip())
    if qualified:
        candidates.append(qualified.group(1))
    out: list[tuple[str, ...]] = []
    for candidate in candidates:
        form = tuple(tokens(candidate))
        if not form or form in out:
            continue
        if not any(ch.isalpha() for ch in candidate):
            continue
        if len(form) == 1 and len(form[0]) < 2:
            continue
        out.append(form)
    return out


class TitleMatcher:
    """Finds the sources whose titles a text mentions (see the module docstring).

    Matching is leftmost-longest: scanning the text's tokens left to right, the longest
    registered form starting at a token wins and its tokens are consumed, so ``Roman Empire``
    (when that is a title) hides ``Empire`` and ``Frank Capra`` hides ``Capra``.
    """

    def __init__(self) -> None:
        self._forms: dict[tuple[str, ...], set[str]] = {}
        self._lengths: dict[str, tuple[int, ...]] = {}
        self._titles: dict[str, str] = {}
        self._word_titles: dict[str, int] = {}

    def __len__(self) -> int:
        """Number of registered sources."""
        return len(self._titles)

    def add(self, source_id: str, title: str) -> bool:
        """Register ``source_id`` under ``title``'s forms, replacing its previous title.

        Returns:
            True when this registered at least one form not mapped to ``source_id`` before.
        """
        previous = self._titles.get(source_id)
        new_forms = title_forms(title)
        if previous is not None and previous != title:
            for form in title_forms(previous):
                if form not in new_forms:
                    self._forms.get(form, set()).discard(source_id)
        if previous != title:
            counts = self._word_titles
            for word in set(phrase_words(previous or "")):
                counts[word] -= 1
                if not counts[word]:
                    del counts[word]
            for word in set(phrase_words(title)):
                counts[word] = counts.get(word, 0) + 1
        self._titles[source_id] = title
        added = False
        for form in new_forms:
            owners = self._forms.setdefault(form, set())
            if source_id not in owners:
                owners.add(source_id)
                added = True
            sizes = self._lengths.get(form[0], ())
            if len(form) not in sizes:
                self._lengths[form[0]] = tuple(sorted((*sizes, len(form)), reverse=True))
        return added

    def add_all(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Register every ``(source_id, title)``."""
        for source_id, title in pairs:
            self.add(source_id, title)

    @property
    def word_titles(self) -> Mapping[str, int]:
        """Lower-case word (:func:`planner_svc.store.fulltext.phrase_words`) -> number of
        registered titles holding it: a cheap hint of which word of a title is rarest."""
        return self._word_titles

    def title(self, source_id: str) -> str | None:
        """The title registered for ``source_id``."""
        return self._titles.get(source_id)

    def find(self, text: str) -> set[str]:
        """Source ids whose title (or bare form) ``text`` mentions (leftmost-longest)."""
        toks = tokens(text)
        found: set[str] = set()
        forms = self._forms
        lengths = self._lengths
        n = len(toks)
        i = 0
        while i < n:
            step = 1
            for size in lengths.get(toks[i], ()):
                if i + size > n:
                    continue
                owners = forms.get(tuple(toks[i : i + size]))
                if owners:
                    found.update(owners)
                    step = size
                    break
            i += step
        return found


class TitleFeed(Protocol):
    """Source titles in commit order (the store satisfies it)."""

    def source_titles_after(self, after_row_id: int) -> list[tuple[int, str, str]]:
        """A page of ``(row id, source_id, title)`` past a row id, in row id order."""
        ...


class KnownTitles:
    """A :class:`TitleMatcher` of every source's latest title, kept across ingest calls.

    Rebuilding the matcher from every source on each call costs in proportion to the store; this
    one is caught up instead from the source versions committed since it last looked (by any
    process: row ids follow commit order), so a call costs what it adds. Not thread-safe: one
    writer uses it at a time (the ingest service's write lock).
    """

    def __init__(self) -> None:
        self._matcher: TitleMatcher | None = None
        self._after = 0

    def checkout(self, store: TitleFeed) -> TitleMatcher:
        """The matcher, caught up with ``store``. The caller may add titles to it; unless it
        calls :meth:`invalidate`, those must be titles it commits."""
        if self._matcher is None:
            self._matcher, self._after = TitleMatcher(), 0
        while page := store.source_titles_after(self._after):
            for _row, source_id, title in page:
                self._matcher.add(source_id, title)
            self._after = page[-1][0]
        return self._matcher

    def invalidate(self) -> None:
        """Forget the matcher (a call added titles it did not commit); the next
        :meth:`checkout` rebuilds it from the store."""
        self._matcher, self._after = None, 0
