"""Bitemporal nodes in the PostgreSQL store (see :mod:`planner_svc.store.nodes`: same methods,
rules and results), and the phrase lookup of late mentions."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from planner_svc.core.errors import InvalidRequest
from planner_svc.store.edges import EDGE_COLUMNS, edge_from_row
from planner_svc.store.fulltext import rare_word_order
from planner_svc.store.nodes import node_from_row
from planner_svc.store.postgres.clock import PgClock
from planner_svc.store.postgres.db import PAGE_ROWS, live
from planner_svc.store.postgres.pending import NodeRow
from planner_svc.store.records import Edge, NodeVersion, NodeWrite, NodeWriteResult
from planner_svc.store.rules import provenance_json, same_node, to_json
from planner_svc.store.text import check_time

NODE_COLUMNS = (
    "version_id, node_id, labels, properties, text, confidence, provenance, "
    "valid_from, valid_to, tx_from, tx_to"
)
"""Columns of a node row, in the order :func:`pg_node` reads them."""
_N_COLUMNS = ", ".join(f"n.{c.strip()}" for c in NODE_COLUMNS.split(","))
_E_COLUMNS = ", ".join(f"e.{c.strip()}" for c in EDGE_COLUMNS.split(","))

_WORD = re.compile(r"\w+")

PHRASE_STATEMENT_PARAMS = 30_000
"""Bind parameters of one phrase lookup statement at most (one a phrase word, plus the label):
PostgreSQL's protocol allows 65,535 a statement, so a batch of more phrase words is sent as
several statements, each phrase whole in one of them."""


def rarest_first(phrase: str, commonness: Mapping[str, int] | None = None) -> list[str]:
    """The distinct words of ``phrase`` a PostgreSQL phrase lookup tests (``\\w+`` runs, NFC,
    as written: case-sensitive), in the order the lookup tests them: that of their lower-case
    forms in :func:`planner_svc.store.fulltext.rare_word_order` (stop words last, then fewest
    in ``commonness``, then longer, then later first); words it leaves out (no letter or digit)
    last; ties by code point."""
    rank = {w: i for i, w in enumerate(rare_word_order(phrase, commonness))}
    words = set(_WORD.findall(unicodedata.normalize("NFC", phrase)))
    return sorted(words, key=lambda w: (rank.get(w.lower(), len(rank)), w))


def pg_node(row: Sequence[Any]) -> NodeVersion:
    """The :class:`NodeVersion` of one row selected with :data:`NODE_COLUMNS` (the text is
    stored as UTF-8 ``bytea``)."""
    return node_from_row((*row[:4], bytes(row[4]).decode("utf-8"), *row[5:]))


class PgNodes(PgClock):
    """Bitemporal node versions (a part of :class:`planner_svc.store.postgres.PostgresStore`).
    """

    def put_node(self, write: NodeWrite, *, tx_us: int) -> int:
        """Write one node version; returns the tx of the node's current version."""
        return self.write_nodes([write], tx_us=tx_us)[0].tx_us

    def write_nodes(self, writes: Sequence[NodeWrite], *, tx_us: int) -> list[NodeWriteResult]:
        """See :meth:`planner_svc.store.nodes.Nodes.write_nodes`.

        Raises:
            InvalidRequest: (``node_id``) a node id repeats; (``tx``) ``tx_us`` is earlier than
                the latest recorded transaction time. Nothing is written then.
        """
        check_time(tx_us, field="tx")
        ids = [w.node_id for w in writes]
        if len(set(ids)) != len(ids):
            raise InvalidRequest("node_id", "a node id occurs more than once in one write")
        if not writes:
            return []
        with self._write(savepoint=False):
            current = self._current_in_write(ids)
            fresh = [w for w in writes
                     if w.node_id not in current or not same_node(w, current[w.node_id])]
            if fresh:
                self._record_tx(tx_us, field="tx")
            next_id = self._next_id("nodes", "version_id", len(fresh)) if fresh else 0
            tx = self._tx()
            results: list[NodeWriteResult] = []
            for w in writes:
                cur = current.get(w.node_id)
                if cur is not None and same_node(w, cur):
                    results.append(NodeWriteResult(node_id=w.node_id, version_id=cur.version_id,
                                                   tx_us=cur.tx_from_us, created=False))
                    continue
                if cur is not None:
                    tx.pending.node_closings.append((cur.version_id, tx_us))
                row: NodeRow = (next_id, w.node_id, to_json(list(w.labels)),
                                to_json(dict(w.properties)), w.text.encode("utf-8"),
                                w.confidence, provenance_json(w.provenance), w.valid_from_us,
                                w.valid_to_us, tx_us)
                tx.pending.nodes.append(row)
                tx.known.set_node(w.node_id, node_from_row((*row[:4], w.text, *row[5:], None)))
                tx.created_nodes.add(next_id)
                results.append(NodeWriteResult(node_id=w.node_id, version_id=next_id,
                                               tx_us=tx_us, created=True))
                next_id += 1
            if fresh:
                self._changed()
        return results

    def retire_nodes(self, node_ids: Iterable[str], *, tx_us: int) -> int:
        """End the current version of each node at ``tx_us``; returns the versions closed.

        Raises:
            InvalidRequest: (``tx``) ``tx_us`` is earlier than the latest recorded time.
        """
        check_time(tx_us, field="tx")
        ids = sorted(set(node_ids))
        if not ids:
            return 0
        with self._write(savepoint=False):
            current = self._current_in_write(ids)
            if not current:
                return 0
            self._record_tx(tx_us, field="tx")
            tx = self._tx()
            for node_id, version in sorted(current.items()):
                tx.pending.node_closings.append((version.version_id, tx_us))
                tx.known.set_node(node_id, None)
            self._changed()
            return len(current)

    def _current_in_write(self, node_ids: Iterable[str]) -> dict[str, NodeVersion]:
        """Inside a write: the current versions of the given nodes, from the known state
        (:class:`~planner_svc.store.postgres.db.Known`), reading those not known yet in one
        query."""
        ids = sorted(set(node_ids))
        known = self._tx().known
        unknown = [i for i in ids if not known.knows_node(i)]
        if unknown:
            self.load_nodes(unknown)
        found = {i: known.nodes.get(i) for i in ids}
        return {i: v for i, v in found.items() if v is not None}

    def load_nodes(self, node_ids: Iterable[str], prefixes: Iterable[str] = ()) -> None:
        """Inside a write: read the current versions of the given nodes and of every node
        whose id starts with one of ``prefixes`` (non-empty), and the current edges leaving
        them, into the known state (two queries, one round trip); a no-op outside a write."""
        if self._local_depth() == 0:
            return
        ids = sorted(set(node_ids))
        starts = sorted({p for p in prefixes if p})
        if not ids and not starts:
            return
        self._flush()
        uppers = [p[:-1] + chr(ord(p[-1]) + 1) for p in starts]
        node_rows, edge_rows = self._pipelined([
            (f"SELECT {NODE_COLUMNS} FROM nodes WHERE tx_to IS NULL AND node_id = ANY(%s) "
             f"UNION ALL SELECT {_N_COLUMNS} FROM unnest(%s::text[], %s::text[]) AS r(lo, hi) "
             "JOIN nodes AS n ON n.node_id >= r.lo AND n.node_id < r.hi AND n.tx_to IS NULL",
             (ids, starts, uppers)),
            (f"SELECT edge_id, {EDGE_COLUMNS} FROM edges WHERE tx_to IS NULL AND src = ANY(%s) "
             f"UNION ALL SELECT e.edge_id, {_E_COLUMNS} FROM unnest(%s::text[], %s::text[]) "
             "AS r(lo, hi) JOIN edges AS e ON e.src >= r.lo AND e.src < r.hi "
             "AND e.tx_to IS NULL", (ids, starts, uppers)),
        ])
        known = self._tx().known
        known.add_prefixes(starts)
        for node_id in ids:
            known.set_node(node_id, None)
        for row in node_rows.fetchall():
            known.set_node(row[1], pg_node(row))
        leaving: dict[str, dict[tuple[str, str, str], tuple[int, Edge]]] = {i: {} for i in ids}
        for row in edge_rows.fetchall():
            edge = edge_from_row(row[1:])
            leaving.setdefault(edge.src, {})[edge.key] = (int(row[0]), edge)
        known.edges.update(leaving)

    def current_node_ids(self, prefix: str) -> list[str]:
        """Ids of nodes with a current version that start with ``prefix`` (non-empty), sorted.

        Raises:
            InvalidRequest: (``prefix``) empty.
        """
        if not prefix:
            raise InvalidRequest("prefix", "must not be empty")
        if self._local_depth() > 0:
            known_ids = self._tx().known.ids_starting(prefix)
            if known_ids is not None:
                return known_ids
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self._rows(
            "SELECT node_id FROM nodes WHERE node_id >= %s AND node_id < %s AND tx_to IS NULL "
            "ORDER BY node_id", (prefix, upper))
        return [r[0] for r in rows]

    def current_nodes(self, node_ids: Iterable[str]) -> dict[str, NodeVersion]:
        """Current versions (open tx interval, any valid interval) of the given nodes."""
        ids = sorted(set(node_ids))
        if not ids:
            return {}
        if self._local_depth() > 0:
            return self._current_in_write(ids)
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE tx_to IS NULL "
                          "AND node_id = ANY(%s)", (ids,))
        return {row[1]: pg_node(row) for row in rows}

    def get_as_of(self, node_id: str, valid_us: int, tx_us: int) -> NodeVersion | None:
        """The node version live at (``valid_us``, ``tx_us``); None when there is none."""
        return self.get_many_as_of([node_id], valid_us, tx_us).get(node_id)

    def get_many_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int
    ) -> dict[str, NodeVersion]:
        """Batched :meth:`get_as_of` in one query."""
        ids = sorted(set(node_ids))
        if not ids:
            return {}
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE node_id = ANY(%s) "
                          f"AND {live()}", (ids, valid_us, valid_us, tx_us, tx_us))
        return {row[1]: pg_node(row) for row in rows}

    def get_versions(self, version_ids: Iterable[int]) -> dict[int, NodeVersion]:
        """Node versions by ``version_id`` regardless of liveness; unknown ids are absent."""
        ids = sorted(set(version_ids))
        if not ids:
            return {}
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes "
                          "WHERE version_id = ANY(%s::bigint[])", (ids,))
        return {int(row[0]): pg_node(row) for row in rows}

    def node_history(self, node_id: str) -> list[NodeVersion]:
        """Every stored version of a node, ordered by (tx_from, version_id)."""
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE node_id = %s "
                          "ORDER BY tx_from, version_id", (node_id,))
        return [pg_node(row) for row in rows]

    def iter_current_nodes(
        self, *, label: str | None = None, after_version_id: int = 0
    ) -> Iterator[NodeVersion]:
        """Every current node version (carrying ``label`` when given), in version_id order,
        read in pages."""
        after = after_version_id
        while True:
            if label is None:
                rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE version_id > %s "
                                  "AND tx_to IS NULL ORDER BY version_id LIMIT %s",
                                  (after, PAGE_ROWS))
            else:
                rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE version_id > %s "
                                  "AND tx_to IS NULL AND %s = ANY(label_set) "
                                  "ORDER BY version_id LIMIT %s", (after, label, PAGE_ROWS))
            if not rows:
                return
            yield from (pg_node(row) for row in rows)
            after = int(rows[-1][0])

    def current_nodes_matching_phrase(
        self, phrase: str, *, label: str, commonness: Mapping[str, int] | None = None
    ) -> list[NodeVersion]:
        """Current node versions carrying ``label`` whose text holds every word of ``phrase``
        (``\\w+`` runs, NFC, as written: case-sensitive). A superset of the texts that name
        the phrase's words in sequence (callers verify); ordered by version_id.
        ``commonness`` orders the word tests (:func:`rarest_first`); it never changes the
        answer."""
        return self.current_nodes_matching_phrases([phrase], label=label, commonness=commonness)

    def current_nodes_matching_phrases(
        self, phrases: Iterable[str], *, label: str, commonness: Mapping[str, int] | None = None
    ) -> list[NodeVersion]:
        """The union of :meth:`current_nodes_matching_phrase` over ``phrases``, in one query
        (one pass over the current nodes) per :data:`PHRASE_STATEMENT_PARAMS` phrase words,
        ordered by version_id (each version once). Each phrase's words are tested rarest first
        (:func:`rarest_first`, by ``commonness``): PostgreSQL stops at a phrase's first word a
        text does not hold, so most texts cost one test per phrase, that of its rarest word,
        not one per word. A phrase of more words than a statement holds is tested on its
        rarest ones (a superset: callers verify)."""
        groups = [rarest_first(p, commonness)[:PHRASE_STATEMENT_PARAMS - 1] for p in phrases]
        found: dict[int, NodeVersion] = {}
        for batch in _statement_batches([g for g in groups if g]):
            held = " OR ".join(
                "(" + " AND ".join("position(%s::bytea IN text) > 0" for _ in g) + ")"
                for g in batch)
            rows = self._rows(
                f"SELECT {NODE_COLUMNS} FROM nodes WHERE tx_to IS NULL AND %s = ANY(label_set) "
                f"AND ({held}) ORDER BY version_id",
                (label, *(w.encode("utf-8") for g in batch for w in g)))
            for row in rows:
                found.setdefault(int(row[0]), pg_node(row))
        return [found[k] for k in sorted(found)]

    def max_version_id(self) -> int:
        """Largest node version_id stored, 0 when there is none (read once per snapshot)."""
        row = self._snapshot_constant("SELECT coalesce(max(version_id), 0) FROM nodes")
        assert row is not None
        return int(row[0])

    def count_nodes(self, *, current_only: bool = True) -> int:
        """Number of node versions (only current ones by default)."""
        row = self._row("SELECT count(*) FROM nodes"
                        + (" WHERE tx_to IS NULL" if current_only else ""))
        assert row is not None
        return int(row[0])


def _statement_batches(groups: list[list[str]]) -> Iterator[list[list[str]]]:
    """``groups`` (each a phrase's words, at most ``PHRASE_STATEMENT_PARAMS - 1``) in order,
    cut into runs of at most :data:`PHRASE_STATEMENT_PARAMS` - 1 words (one parameter is the
    label); a phrase is never split."""
    batch: list[list[str]] = []
    words = 0
    for group in groups:
        if batch and words + len(group) > PHRASE_STATEMENT_PARAMS - 1:
            yield batch
            batch, words = [], 0
        batch.append(group)
        words += len(group)
    if batch:
        yield batch
