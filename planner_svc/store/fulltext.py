"""Phrase lookup over node text (SQLite FTS5): the candidates of late title mentions.

The index is ``nodes_fts`` (external content over ``nodes.text``, Porter stemming over the
unicode61 tokenizer with diacritics removed). User text never reaches FTS5's query syntax: its
words are quoted (:func:`planner_svc.store.text.fts_phrase_query`). Ranking is not the
store's: recall ranks with the catalog's BM25 (:mod:`planner_svc.index.catalog`), the same on
every backend.
"""

from __future__ import annotations

from collections.abc import Iterable

from planner_svc.store.clock import TransactionClock
from planner_svc.store.nodes import NODE_COLUMNS, node_from_row
from planner_svc.store.records import NodeVersion
from planner_svc.store.text import fts_phrase_query


class FullText(TransactionClock):
    """Phrase lookup (a part of :class:`planner_svc.store.Store`)."""

    def current_nodes_matching_phrase(self, phrase: str, *, label: str) -> list[NodeVersion]:
        """Current node versions (open tx interval) carrying ``label`` whose text contains the
        words of ``phrase`` in sequence, case-insensitively and after stemming (a superset of
        exact matches: callers verify). Ordered by version_id."""
        fts = fts_phrase_query(phrase)
        if fts is None:
            return []
        rows = self._conn().execute(
            f"SELECT {', '.join('n.' + c for c in NODE_COLUMNS.split(', '))} "
            "FROM nodes_fts JOIN nodes AS n ON n.version_id = nodes_fts.rowid "
            "WHERE nodes_fts MATCH ? AND n.tx_to IS NULL AND EXISTS (SELECT 1 FROM node_labels "
            "AS l WHERE l.label = ? AND l.version_id = n.version_id) ORDER BY n.version_id",
            (fts, label),
        )
        return [node_from_row(row) for row in rows]

    def current_nodes_matching_phrases(
        self, phrases: Iterable[str], *, label: str
    ) -> list[NodeVersion]:
        """The union of :meth:`current_nodes_matching_phrase` over ``phrases`` (an FTS5
        lookup each: a local read costs no round trip), ordered by version_id."""
        found: dict[int, NodeVersion] = {}
        for phrase in phrases:
            for node in self.current_nodes_matching_phrase(phrase, label=label):
                found[node.version_id] = node
        return [found[k] for k in sorted(found)]
