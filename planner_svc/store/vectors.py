"""Node-version vectors: one float32 little-endian embedding per node version.

Every vector of a store has the same dimension (recorded in the ``vector_dim`` metadata row on
the first write). The vector index (:mod:`planner_svc.index`) is derived from these rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from planner_svc.core.errors import InvalidRequest
from planner_svc.store.clock import TransactionClock
from planner_svc.store.db import PAGE_ROWS, live


def vector_array(vector: npt.ArrayLike, *, field: str) -> npt.NDArray[np.float32]:
    """``vector`` as a contiguous little-endian float32 array, validated.

    Raises:
        InvalidRequest: (``field``) not a numpy array, not 1-D and non-empty, not float32, or
            holding a non-finite value.
    """
    if not isinstance(vector, np.ndarray):
        raise InvalidRequest(field, f"expected a numpy array, got {type(vector).__name__}")
    if vector.ndim != 1 or vector.shape[0] == 0:
        raise InvalidRequest(field, f"expected a non-empty 1-D array, got shape {vector.shape}")
    if vector.dtype != np.float32:
        raise InvalidRequest(field, f"expected dtype float32, got {vector.dtype}")
    if not np.all(np.isfinite(vector)):
        raise InvalidRequest(field, "holds a non-finite value")
    return np.ascontiguousarray(vector, dtype="<f4")


class Vectors(TransactionClock):
    """Node-version vectors (a part of :class:`planner_svc.store.Store`)."""

    def vector_dim(self) -> int | None:
        """Dimension of the stored vectors; None before the first vector."""
        value = self.get_meta("vector_dim")
        return None if value is None else int(value)

    def put_vector(self, version_id: int, vector: npt.NDArray[np.float32]) -> None:
        """Store the embedding of one node version (replacing any earlier one).

        Args:
            version_id: an existing node version's id.
            vector: 1-D float32 numpy array with finite values; every vector of a store has
                the same dimension.

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
        with self._write() as conn:
            stored = self.vector_dim()
            if len(dims) > 1 or (stored is not None and dims != {stored}):
                raise InvalidRequest(
                    "vector", f"dimension {sorted(dims)} differs from the store's {stored}"
                )
            ids = {vid for vid, _v in pairs}
            [(known,)] = self._read_batch(
                "SELECT count(*) FROM nodes WHERE version_id IN (SELECT value FROM json_each(?))",
                ids,
            )
            if known != len(ids):
                raise InvalidRequest("version_id", "names a node version that does not exist")
            if stored is None:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('vector_dim', ?)",
                    (str(dims.pop()),),
                )
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (version_id, vector) VALUES (?, ?)",
                [(vid, vec.tobytes()) for vid, vec in pairs],
            )
            self._changed()
        return len(pairs)

    def get_vectors(self, version_ids: Iterable[int]) -> dict[int, npt.NDArray[np.float32]]:
        """Stored vectors by version_id (float32, 1-D); versions without one are absent."""
        rows = self._read_batch(
            "SELECT version_id, vector FROM vectors "
            "WHERE version_id IN (SELECT value FROM json_each(?))",
            version_ids,
        )
        return {r[0]: np.frombuffer(r[1], dtype="<f4").astype(np.float32) for r in rows}

    def iter_vectors(
        self, after_version_id: int = 0
    ) -> Iterator[tuple[int, str, int, npt.NDArray[np.float32]]]:
        """Every stored vector with ``version_id > after_version_id``, in version_id order.

        Yields:
            ``(version_id, node_id, valid_from_us, vector)``; vector is 1-D float32 (a fresh
            array). Read in pages, so a long iteration holds no read transaction.
        """
        conn = self._conn()
        after = after_version_id
        while True:
            rows = conn.execute(
                "SELECT v.version_id, n.node_id, n.valid_from, v.vector FROM vectors AS v "
                "JOIN nodes AS n ON n.version_id = v.version_id WHERE v.version_id > ? "
                "ORDER BY v.version_id LIMIT ?",
                (after, PAGE_ROWS),
            ).fetchall()
            if not rows:
                return
            for vid, node_id, valid_from, blob in rows:
                yield vid, node_id, valid_from, np.frombuffer(blob, dtype="<f4").astype(np.float32)
            after = rows[-1][0]

    def max_vector_version_id(self) -> int:
        """Largest version_id that has a vector, 0 when there is none."""
        row = self._conn().execute("SELECT max(version_id) FROM vectors").fetchone()
        return int(row[0] or 0)

    def count_vectors(self) -> int:
        """Number of stored vectors."""
        return int(self._conn().execute("SELECT count(*) FROM vectors").fetchone()[0])

    def live_version_ids(self, version_ids: Iterable[int], valid_us: int, tx_us: int) -> set[int]:
        """The subset of ``version_ids`` whose node version is live at (``valid_us``,
        ``tx_us``) (microseconds, half-open intervals). One SQL query."""
        rows = self._read_batch(
            "SELECT version_id FROM nodes WHERE version_id IN (SELECT value FROM json_each(?)) "
            f"AND {live('')}",
            version_ids, valid_us, valid_us, tx_us, tx_us,
        )
        return {r[0] for r in rows}
