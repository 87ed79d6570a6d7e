"""The per-thread connections of one store, closed together: the lifecycle both store
backends (:class:`planner_svc.store.db.Database`, SQLite; and
:class:`planner_svc.store.postgres.db.PgDatabase`) share."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Generic, Protocol, Self, TypeVar

from planner_svc.core.errors import ShuttingDown


class _Closeable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closeable)


class ConnectionSet(Generic[C]):
    """Connections opened per thread (by the subclass, registered in ``_conns`` under
    ``_conns_lock``), closed together by :meth:`close`; a context manager that closes."""

    def __init__(self) -> None:
        self._conns: list[C] = []
        self._conns_lock = threading.Lock()
        self._closed = False

    @staticmethod
    def closed_error() -> ShuttingDown:
        """What a call on a closed store raises (UNAVAILABLE to a gRPC client: the process
        is shutting down)."""
        return ShuttingDown("the store is closed: the process is shutting down")

    def close(self) -> None:
        """Close every connection of every thread. Idempotent; later calls raise
        :class:`ShuttingDown` (:meth:`closed_error`)."""
        with self._conns_lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
