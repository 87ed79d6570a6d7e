"""The store's transaction clock and metadata: ``generation``, ``last_tx``, ``stamped``.

Transaction time never moves backwards. The ``meta`` row ``last_tx`` holds the latest
transaction time any write recorded (microseconds); every write method records the time it
writes at through :meth:`TransactionClock._record_tx`, which refuses an earlier one, inside the
write's own transaction. :meth:`TransactionClock.stamped` opens a write stamped with one time:
a proposal the caller makes (deterministic bulk loads) or the store's clock,
``max(now, last_tx + 1)``, strictly increasing across every process writing the file. So no
write can change what an as-of read about a past transaction time returns.

``generation`` counts committed writes that changed something; a derived structure (the vector
index) records it to tell that it lags.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from planner_svc.core.errors import InvalidRequest
from planner_svc.store.db import Database
from planner_svc.store.rules import check_not_before, stamp_time

RESERVED_META = ("generation", "last_tx")
"""Metadata keys the store maintains itself (:meth:`TransactionClock.set_meta` refuses them)."""


class TransactionClock(Database):
    """The transaction clock and free-form metadata of the store (a part of
    :class:`planner_svc.store.Store`)."""

    def generation(self) -> int:
        """A counter incremented by every committed write that changed something.

        A derived structure (the vector index) records it and compares later to tell that it
        lags the store.
        """
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0])

    def last_tx(self) -> int | None:
        """The latest transaction time (microseconds) any write has recorded; None for an empty
        store. Every later write carries a transaction time at or after it."""
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'last_tx'").fetchone()
        return None if row is None else int(row[0])

    def _record_tx(self, conn: sqlite3.Connection, tx_us: int, *, field: str) -> None:
        """Refuse ``tx_us`` when it lies before the latest recorded transaction time, else
        advance the clock row to it (inside the running write transaction).

        Raises:
            InvalidRequest: (``field``) ``tx_us`` is earlier than the latest recorded time.
        """
        row = conn.execute("SELECT value FROM meta WHERE key = 'last_tx'").fetchone()
        last = None if row is None else int(row[0])
        check_not_before(last, tx_us, field=field)
        if last is None or tx_us > last:
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_tx', ?)", (tx_us,)
            )

    @contextmanager
    def stamped(
        self,
        proposed_us: int | None,
        *,
        now_us: int,
        field: str = "version_tx",
        or_clock: bool = False,
    ) -> Iterator[int]:
        """A write transaction (a savepoint when nested) stamped with one transaction time.

        The time is ``proposed_us`` when given, which must lie in ``[last_tx, now_us]`` (equal to
        the latest recorded time is allowed, so one bulk load can stamp all its documents with
        one time); else the store's clock, ``max(now_us, last_tx + 1)``, strictly increasing
        across every writer of the file. Writes inside the block use the yielded time; each
        write method records the time it writes at (a block that writes nothing records none).

        Args:
            proposed_us: a transaction time the caller proposes, microseconds, or None.
            now_us: the current time, microseconds.
            field: request field named by errors about ``proposed_us``.
            or_clock: take the clock instead of refusing a proposal outside
                ``[last_tx, now_us]`` (a follow-up write that prefers its batch's time).

        Raises:
            InvalidRequest: (``field``) the proposal is in the future or earlier than the
                latest recorded transaction time (unless ``or_clock``).
        """
        with self._write() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'last_tx'").fetchone()
            last = None if row is None else int(row[0])
            yield stamp_time(last, proposed_us, now_us=now_us, field=field, or_clock=or_clock)

    def get_meta(self, key: str) -> str | None:
        """A free-form metadata value (e.g. the embedder name), or None when unset."""
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a free-form metadata value; the keys of :data:`RESERVED_META` are refused.

        Raises:
            InvalidRequest: (``key``) reserved key.
        """
        if key in RESERVED_META:
            raise InvalidRequest("key", f"{key!r} is maintained by the store")
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
            self._changed()
