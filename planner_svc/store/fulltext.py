"""Full-text search over node text (SQLite FTS5, BM25) with label and property filters.

The index is ``nodes_fts`` (external content over ``nodes.text``, Porter stemming over the
unicode61 tokenizer with diacritics removed). User text never reaches FTS5's query syntax: its
words are quoted and OR-ed (:func:`planner_svc.store.text.fts_or_query`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from planner_svc.core.errors import InvalidRequest
from planner_svc.store.clock import TransactionClock
from planner_svc.store.db import live, to_json
from planner_svc.store.nodes import NODE_COLUMNS, node_from_row
from planner_svc.store.records import NodeVersion
from planner_svc.store.text import fts_or_query, fts_phrase_query

# Label/property filters of search_text; 3 parameters: labels JSON array, [[key, value], ...]
# JSON array, number of filters.
_FILTER_PER_HIT = (
    "(SELECT COUNT(*) FROM json_each(?) AS w JOIN node_labels AS l "
    "ON l.label = w.value AND l.version_id = n.version_id) + "
    "(SELECT COUNT(*) FROM json_each(?) AS w JOIN node_props AS p "
    "ON p.key = json_extract(w.value, '$[0]') AND p.value = json_extract(w.value, '$[1]') "
    "AND p.version_id = n.version_id) = ?"
)
_FILTER_GROUPED = (
    "n.version_id IN (SELECT version_id FROM ("
    "SELECT version_id FROM node_labels WHERE label IN (SELECT value FROM json_each(?)) "
    "UNION ALL SELECT p.version_id FROM json_each(?) AS w JOIN node_props AS p "
    "ON p.key = json_extract(w.value, '$[0]') AND p.value = json_extract(w.value, '$[1]')"
    ") GROUP BY version_id HAVING COUNT(*) = ?)"
)


class FullText(TransactionClock):
    """Full-text reads (a part of :class:`planner_svc.store.Store`)."""

    def search_text(
        self,
        query: str,
        *,
        labels: Iterable[str] = (),
        properties: Mapping[str, str] | None = None,
        valid_us: int,
        tx_us: int,
        limit: int,
    ) -> list[tuple[str, float]]:
        """Full-text search (FTS5, BM25) over node versions live at (valid_us, tx_us).

        The query is user text: its words (stopwords dropped) are quoted and OR-ed
        (:func:`planner_svc.store.text.fts_or_query`), so no input raises a syntax error.
        Filters: the node carries every label in ``labels`` and every ``key = value`` pair of
        ``properties``. With no query word but some filter, every live node passing the
        filters scores 1.0 (filter-only mode); with neither, the result is empty.

        Args:
            query: user text.
            labels, properties: filters (AND).
            valid_us, tx_us: as-of times, microseconds.
            limit: maximum number of results (>= 0).

        Returns:
            ``(node_id, score)`` with score = ``-bm25()`` (higher is better), sorted by score
            descending then node_id.

        Raises:
            InvalidRequest: (``limit``) negative.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidRequest("limit", f"{limit!r} must be an integer >= 0")
        if limit == 0:
            return []
        conds = [live("n")]
        params: list[Any] = [valid_us, valid_us, tx_us, tx_us]
        wanted_labels = sorted(set(labels))
        wanted_props = sorted((properties or {}).items())
        n_filters = len(wanted_labels) + len(wanted_props)
        has_filter = n_filters > 0
        fts = fts_or_query(query)
        if has_filter:
            # One statement whatever the number of filters (one subquery per filter nests the
            # SQL deeper than SQLite allows past about a thousand): a version passes when it
            # has one matching row per filter. Labels are distinct and a property key has one
            # wanted value, so counting matching rows is exact. With full text, FTS drives and
            # the count is probed per hit; filter-only, the matching versions come from the
            # label/property indexes, grouped.
            conds.append(_FILTER_PER_HIT if fts is not None else _FILTER_GROUPED)
            params.extend((to_json(wanted_labels), to_json(wanted_props), n_filters))
        conn = self._conn()
        if fts is None:
            if not has_filter:
                return []
            rows = conn.execute(
                f"SELECT n.node_id FROM nodes AS n WHERE {' AND '.join(conds)} "
                "ORDER BY n.node_id LIMIT ?",
                (*params, limit),
            )
            return [(r[0], 1.0) for r in rows]
        rows = conn.execute(
            "SELECT n.node_id, -bm25(nodes_fts) AS score FROM nodes_fts "
            "JOIN nodes AS n ON n.version_id = nodes_fts.rowid "
            f"WHERE nodes_fts MATCH ? AND {' AND '.join(conds)} "
            "ORDER BY score DESC, n.node_id LIMIT ?",
            (fts, *params, limit),
        )
        return [(r[0], float(r[1])) for r in rows]

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
