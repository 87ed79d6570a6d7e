"""Node-version vectors in the PostgreSQL store (see :mod:`planner_svc.store.vectors`): one
float32 little-endian ``bytea`` per node version."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from planner_svc.core.errors import InvalidRequest
from planner_svc.store.postgres.clock import PgClock
from planner_svc.store.postgres.db import PAGE_ROWS, live
from planner_svc.store.vectors import vector_array


class PgVectors(PgClock):
    """Node-version vectors (a part of :class:`planner_svc.store.postgres.PostgresStore`)."""

    def vector_dim(self) -> int | None:
        """Dimension of the stored vectors; None before the first vector (never changes once
        set, so it is read once)."""
        known = self._settled_fact("vector_dim")
        if known is not None:
            return known
        value = self.get_meta("vector_dim")
        if value is None:
            return None
        self._settle("vector_dim", int(value))
        return int(value)

    def put_vector(self, version_id: int, vector: npt.NDArray[np.float32]) -> None:
        """Store the embedding of one node version (replacing any earlier one).

        Raises:
            InvalidRequest: (``version_id``) unknown; (``vector``) wrong type, shape, dtype,
                dimension or a non-finite value.
        """
        self.put_vectors([(version_id, vector)])

    def put_vectors(self, items: Iterable[tuple[int, npt.NDArray[np.float32]]]) -> int:
        """Batched :meth:`put_vector`, atomically. Returns the number stored."""
        pairs = [(vid, vector_array(vec, field="vector")) for vid, vec in items]
        if not pairs:
            return 0
        dims = {vec.shape[0] for _vid, vec in pairs}
        with self._write(savepoint=False):
            stored = self.vector_dim()
            if len(dims) > 1 or (stored is not None and dims != {stored}):
                raise InvalidRequest(
                    "vector", f"dimension {sorted(dims)} differs from the store's {stored}"
                )
            ids = sorted({vid for vid, _v in pairs})
            if not self._tx().created_nodes.issuperset(ids):  # else this write created them
                row = self._row("SELECT count(*) FROM nodes "
                                "WHERE version_id = ANY(%s::bigint[])", (ids,))
                if row is None or int(row[0]) != len(ids):
                    raise InvalidRequest("version_id",
                                         "names a node version that does not exist")
            if stored is None:
                dim = dims.pop()
                self._run("INSERT INTO meta (key, value) VALUES ('vector_dim', %s) "
                          "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(dim),))
                self._settle("vector_dim", dim)
            latest = {vid: vec.tobytes() for vid, vec in pairs}  # the last vector of an id wins
            self._pending().vectors.extend(latest.items())
            self._changed()
        return len(pairs)

    def get_vectors(self, version_ids: Iterable[int]) -> dict[int, npt.NDArray[np.float32]]:
        """Stored vectors by version_id (float32, 1-D); versions without one are absent."""
        ids = sorted(set(version_ids))
        if not ids:
            return {}
        rows = self._rows("SELECT version_id, vector FROM vectors "
                          "WHERE version_id = ANY(%s::bigint[])", (ids,))
        return {int(r[0]): np.frombuffer(r[1], dtype="<f4").astype(np.float32) for r in rows}

    def iter_vectors(
        self, after_version_id: int = 0
    ) -> Iterator[tuple[int, str, int, npt.NDArray[np.float32]]]:
        """Every stored vector with ``version_id > after_version_id``, in version_id order:
        ``(version_id, node_id, valid_from_us, vector)``, read in pages."""
        after = after_version_id
        while True:
            rows = self._rows(
                "SELECT v.version_id, n.node_id, n.valid_from, v.vector FROM vectors AS v "
                "JOIN nodes AS n ON n.version_id = v.version_id WHERE v.version_id > %s "
                "ORDER BY v.version_id LIMIT %s", (after, PAGE_ROWS))
            if not rows:
                return
            for vid, node_id, valid_from, blob in rows:
                yield (int(vid), node_id, int(valid_from),
                       np.frombuffer(blob, dtype="<f4").astype(np.float32))
            after = int(rows[-1][0])

    def max_vector_version_id(self) -> int:
        """Largest version_id that has a vector, 0 when there is none."""
        row = self._row("SELECT coalesce(max(version_id), 0) FROM vectors")
        assert row is not None
        return int(row[0])

    def count_vectors(self) -> int:
        """Number of stored vectors."""
        row = self._row("SELECT count(*) FROM vectors")
        assert row is not None
        return int(row[0])

    def live_version_ids(self, version_ids: Iterable[int], valid_us: int, tx_us: int) -> set[int]:
        """The subset of ``version_ids`` live at (``valid_us``, ``tx_us``). One query."""
        ids = sorted(set(version_ids))
        if not ids:
            return set()
        rows = self._rows(f"SELECT version_id FROM nodes WHERE version_id = ANY(%s::bigint[]) "
                          f"AND {live()}", (ids, valid_us, valid_us, tx_us, tx_us))
        return {int(r[0]) for r in rows}
