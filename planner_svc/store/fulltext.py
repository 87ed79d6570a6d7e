"""Phrase lookup over node text (SQLite FTS5): the candidates of late title mentions.

The index is ``nodes_fts`` (external content over ``nodes.text``, Porter stemming over the
unicode61 tokenizer with diacritics removed). User text never reaches FTS5's query syntax: its
words are quoted (:func:`planner_svc.store.text.fts_phrase_query`). Ranking is not the
store's: recall ranks with the catalog's BM25 (:mod:`planner_svc.index.catalog`), the same on
every backend.

A phrase query opens a cursor on every word's posting list in every index segment, so in a large
store a title of common words costs what its commonest word costs. A lookup first asks for the
rows holding the phrase's likely rarest word (:func:`rare_word_order`: stop words last, then
the words the caller says are least common, e.g. in fewest titles, then longer words first), at
most :data:`RARE_WORD_MAX_ROWS` of them: when that word is that rare, its rows
are the candidates (every row holding the phrase holds each of its words); else the next word
is tried, then the phrase query runs as before. Either way the answer holds every row that
holds the phrase, which is what callers rely on (they verify).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

from planner_svc.store.clock import TransactionClock
from planner_svc.store.nodes import NODE_COLUMNS, node_from_row
from planner_svc.store.records import NodeVersion
from planner_svc.store.text import STOPWORDS, fts_phrase_query

RARE_WORD_MAX_ROWS = 64
"""A phrase's rarest word is looked up alone when it occurs in at most this many rows (node
versions); otherwise the phrase query runs (about what reading and matching that many candidate
passages costs, measured on 2 cores: ~0.2 ms a phrase query at a million passages)."""

RARE_WORD_TRIES = 2
"""Words of a phrase tried alone (in :func:`rare_word_order`) before the phrase query runs."""

_WORD = re.compile(r"\w+")
_NODE_SELECT = ", ".join("n." + c for c in NODE_COLUMNS.split(", "))
_CURRENT_WITH_LABEL = (
    "n.tx_to IS NULL AND EXISTS (SELECT 1 FROM node_labels AS l WHERE l.label = ? "
    "AND l.version_id = n.version_id)"
)


def phrase_words(phrase: str) -> list[str]:
    """The words of ``phrase`` a lookup may try alone: ``\\w+`` runs holding a letter or digit,
    NFC, lower-case, in order (repeats kept)."""
    return [w for w in _WORD.findall(unicodedata.normalize("NFC", phrase).lower())
            if any(ch.isalnum() for ch in w)]


def rare_word_order(phrase: str, commonness: Mapping[str, int] | None = None) -> list[str]:
    """The distinct :func:`phrase_words` of ``phrase`` in the order they are tried alone:
    words that are not stop words before stop words, then lower ``commonness`` first (a word
    it does not hold counts 0), then longer first, then later in the phrase first (a title's
    last word, often a name, is rarer than its first)."""
    words = phrase_words(phrase)
    last = {w: i for i, w in enumerate(words)}
    common = commonness or {}
    return sorted(last, key=lambda w: (w in STOPWORDS, common.get(w, 0), -len(w), -last[w]))


class FullText(TransactionClock):
    """Phrase lookup (a part of :class:`planner_svc.store.Store`)."""

    def current_nodes_matching_phrase(
        self, phrase: str, *, label: str, commonness: Mapping[str, int] | None = None
    ) -> list[NodeVersion]:
        """Current node versions (open tx interval) carrying ``label``: every one whose text
        contains the words of ``phrase`` in sequence (case-insensitively, after stemming), and
        possibly others holding one of its words (see the module docstring): callers verify.
        ``commonness`` (lower-case word -> count) orders the words tried alone
        (:func:`rare_word_order`); it changes the cost, never which matches are returned.
        Ordered by version_id."""
        fts = fts_phrase_query(phrase)
        if fts is None:
            return []
        conn = self._conn()
        words = rare_word_order(phrase, commonness)
        if len(words) > 1:
            for word in words[:RARE_WORD_TRIES]:
                ids = [row[0] for row in conn.execute(
                    "SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ? LIMIT ?",
                    (f'"{word}"', RARE_WORD_MAX_ROWS + 1))]
                # No row at all is an answer only for an ASCII word: FTS5's tokenizer surely
                # keeps it; another word might hold characters it treats as separators.
                if len(ids) <= RARE_WORD_MAX_ROWS and (ids or word.isascii()):
                    held = self._read_batch(
                        f"SELECT {_NODE_SELECT} FROM nodes AS n WHERE n.version_id IN "
                        f"(SELECT value FROM json_each(?)) AND {_CURRENT_WITH_LABEL} "
                        "ORDER BY n.version_id",
                        ids, label)
                    return [node_from_row(row) for row in held]
        rows = conn.execute(
            f"SELECT {_NODE_SELECT} FROM nodes_fts JOIN nodes AS n "
            f"ON n.version_id = nodes_fts.rowid WHERE nodes_fts MATCH ? "
            f"AND {_CURRENT_WITH_LABEL} ORDER BY n.version_id",
            (fts, label),
        )
        return [node_from_row(row) for row in rows]

    def current_nodes_matching_phrases(
        self, phrases: Iterable[str], *, label: str, commonness: Mapping[str, int] | None = None
    ) -> list[NodeVersion]:
        """The union of :meth:`current_nodes_matching_phrase` over ``phrases``, each looked up
        by its rarest word first (``commonness`` as there; an FTS5 lookup each: a local read
        costs no round trip), ordered by version_id."""
        found: dict[int, NodeVersion] = {}
        for phrase in phrases:
            for node in self.current_nodes_matching_phrase(phrase, label=label,
                                                           commonness=commonness):
                found[node.version_id] = node
        return [found[k] for k in sorted(found)]
