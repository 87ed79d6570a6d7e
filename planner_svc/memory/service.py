"""Node and edge writes made one at a time through the API.

A node written here is embedded (when the server has an embedder and the node has text) and its
vector commits in the same transaction as the node: the vector index treats every version id up
to the store's maximum as covered, so a vector committed later would be missed. Transaction
times come from the store's clock (:meth:`~planner_svc.ingest.ports.WriteTransactions.stamped`),
taken inside the write: they never go backwards and never repeat across the processes writing
the store.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.model import SpanRef
from planner_svc.embed.base import Embedder
from planner_svc.ingest.ports import IndexCatchUp, MemoryStore
from planner_svc.store.records import NodeWrite, NodeWriteResult

__all__ = ["MemoryService"]


class MemoryService:
    """Writes single nodes and edges.

    Args:
        store: the store written.
        embedder: embeds node text; None writes no vectors.
        index: the vector index caught up after a node with a vector; None when there is none.
        write_lock: serialises this process's writers (shared with the ingest service).
        clock: now, microseconds (the floor of the store's clock, the default valid-from).
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        embedder: Embedder | None,
        index: IndexCatchUp | None,
        write_lock: threading.Lock,
        clock: Clock = wall_clock_us,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._index = index
        self._write_lock = write_lock
        self._clock = clock

    def put_node(
        self,
        write: NodeWrite,
        *,
        provenance: Sequence[SpanRef] | None = None,
        provenance_field: str = "provenance",
    ) -> NodeWriteResult:
        """Write one node version, with the vector of its text when there is an embedder.

        Its provenance must cite committed source versions, inside their text, on code point
        boundaries.

        Args:
            write: the node version.
            provenance: the provenance as the caller listed it (errors name positions in this
                list); None = ``write.provenance`` (sorted, distinct).
            provenance_field: the name errors give that list (the request's path).

        Returns:
            The node's current version: new, or the existing one when identical (``created``
            False).

        Raises:
            InvalidRequest: (``{provenance_field}[i]...``) provenance a plan could not cite.
        """
        vector: npt.NDArray[np.float32] | None = (
            self._embedder.embed([write.text])[0]
            if self._embedder is not None and write.text
            else None
        )
        with self._write_lock:
            with self._store.stamped(None, now_us=self._clock()) as tx:
                cited = write.provenance if provenance is None else provenance
                self._store.check_provenance(cited, field=provenance_field)
                result = self._store.write_nodes([write], tx_us=tx)[0]
                if result.created and vector is not None:
                    self._store.put_vector(result.version_id, vector)
            if result.created and vector is not None and self._index is not None:
                self._index.sync()
        return result

    def put_edge(
        self,
        src: str,
        dst: str,
        relation: str,
        weight: float,
        *,
        valid_from_us: int | None,
        valid_to_us: int | None,
    ) -> int:
        """Write one edge version; ``valid_from_us`` None means now.

        Returns:
            The transaction time of the edge's current version, microseconds (the existing
            one's when the write was identical).

        Raises:
            InvalidRequest: (``src_node_id``, ``dst_node_id``, ``relation``, ``weight``,
                ``valid_to``) malformed.
        """
        now = self._clock()
        with self._write_lock, self._store.stamped(None, now_us=now) as stamp:
            return self._store.put_edge(
                src, dst, relation, weight,
                valid_from_us=now if valid_from_us is None else valid_from_us,
                valid_to_us=valid_to_us,
                tx_us=stamp,
            )
