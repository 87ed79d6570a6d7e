"""The transaction clock and metadata of the PostgreSQL store (the ``clock`` row, ``meta``).

Same contract as :mod:`planner_svc.store.clock`: ``last_tx`` is the latest transaction time any
write recorded, every write records the time it writes at and refuses an earlier one, and
``stamped`` hands out a proposal in ``[last_tx, now]`` or the clock ``max(now, last_tx + 1)``.
The row is locked by every write transaction before its first statement
(:mod:`planner_svc.store.postgres.db`), so reading and advancing it inside a write cannot race
another replica's writer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from planner_svc.core.errors import InvalidRequest
from planner_svc.store.clock import RESERVED_META
from planner_svc.store.postgres.db import PgDatabase
from planner_svc.store.rules import check_not_before, stamp_time

PG_RESERVED_META = (*RESERVED_META, "schema_version", "store_id")
"""Metadata keys the PostgreSQL store maintains itself."""


class PgClock(PgDatabase):
    """The transaction clock and free-form metadata (a part of
    :class:`planner_svc.store.postgres.PostgresStore`)."""

    def generation(self) -> int:
        """A counter incremented by every committed write that changed something (read once
        per snapshot)."""
        row = self._snapshot_constant("SELECT generation FROM clock")
        assert row is not None
        return int(row[0])

    def last_tx(self) -> int | None:
        """The latest transaction time (microseconds) any write has recorded; None for an empty
        store. Inside a write, including the times that write recorded so far."""
        if self._local_depth() > 0:
            return self._tx().last_tx
        row = self._row("SELECT last_tx FROM clock")
        return None if row is None or row[0] is None else int(row[0])

    def _local_depth(self) -> int:
        return int(getattr(self._local, "depth", 0))

    def _record_tx(self, tx_us: int, *, field: str) -> None:
        """Refuse ``tx_us`` before the latest recorded transaction time, else advance the clock
        to it (inside the running write transaction, which holds the clock row's lock and
        stores the time when it commits).

        Raises:
            InvalidRequest: (``field``) ``tx_us`` is earlier than the latest recorded time.
        """
        tx = self._tx()
        check_not_before(tx.last_tx, tx_us, field=field)
        if tx.last_tx is None or tx_us > tx.last_tx:
            tx.last_tx = tx_us

    @contextmanager
    def stamped(
        self,
        proposed_us: int | None,
        *,
        now_us: int,
        field: str = "version_tx",
        or_clock: bool = False,
    ) -> Iterator[int]:
        """A write transaction (a savepoint when nested) stamped with one transaction time;
        see :meth:`planner_svc.store.clock.TransactionClock.stamped`.

        Raises:
            InvalidRequest: (``field``) the proposal is in the future or earlier than the
                latest recorded transaction time (unless ``or_clock``).
        """
        with self._write():
            yield stamp_time(self.last_tx(), proposed_us, now_us=now_us, field=field,
                             or_clock=or_clock)

    def get_meta(self, key: str) -> str | None:
        """A free-form metadata value (e.g. the embedder name), or None when unset."""
        row = self._row("SELECT value FROM meta WHERE key = %s", (key,))
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a free-form metadata value; the keys of :data:`PG_RESERVED_META` are refused.

        Raises:
            InvalidRequest: (``key``) reserved key.
        """
        if key in PG_RESERVED_META:
            raise InvalidRequest("key", f"{key!r} is maintained by the store")
        with self._write(savepoint=False):
            self._run("INSERT INTO meta (key, value) VALUES (%s, %s) "
                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))
            self._changed()
