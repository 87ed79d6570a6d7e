"""Standard health checking (``grpc.health.v1.Health``) with every RPC its descriptor
advertises: ``Check``, ``Watch`` and ``List``.

grpcio-health-checking implements ``Check`` and ``Watch``; ``List`` (every service's status in
one call) is in the service's descriptor, so reflection advertises it, but the servicer answers
UNIMPLEMENTED. :class:`HealthServicer` answers it from the same status table ``Check`` reads.
Its ``Check`` of a service with no status fails NOT_FOUND, as the protocol says, but with empty
details; :class:`HealthServicer` names the service and the ones it knows.
"""

from __future__ import annotations

import threading
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2

from planner_svc.core.errors import echo

__all__ = ["HEALTH_SERVICE_NAME", "MAX_LISTED", "HealthServicer"]

HEALTH_SERVICE_NAME: str = health.SERVICE_NAME
"""``grpc.health.v1.Health``."""

MAX_LISTED = 100
"""Most services ``List`` reports; with more it answers RESOURCE_EXHAUSTED (the limit the
health protocol suggests). ``Check``'s NOT_FOUND names at most this many, then how many more."""


class HealthServicer(health.HealthServicer):  # type: ignore[misc]
    """grpcio-health-checking's servicer plus ``List``.

    Statuses are set with ``set(service, status)`` as before; ``""`` is the whole server.
    ``Check`` and ``List`` answer from a table of their own, kept by :meth:`set` and
    :meth:`enter_graceful_shutdown` with the base class's rules (a status set after the
    graceful shutdown began is ignored), so they read none of the base class's internals.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Writers hold _write_lock across both tables' updates (ours, then the base class's,
        # which also tells Watch streams), so Check, List and Watch never settle on different
        # statuses; reentrant because the base class's graceful shutdown calls set() back.
        # Check and List take only _statuses_lock, so a slow Watch client never stalls them.
        self._write_lock = threading.RLock()
        self._statuses_lock = threading.Lock()
        self._statuses: dict[str, int] = {"": health_pb2.HealthCheckResponse.SERVING}
        self._shutting_down = False
        super().__init__(*args, **kwargs)

    def set(self, service: str, status: int) -> None:
        """Set a service's status (``Watch`` callers are told); ignored once the graceful
        shutdown began."""
        with self._write_lock:
            with self._statuses_lock:
                if not self._shutting_down:
                    self._statuses[service] = status
            super().set(service, status)

    def enter_graceful_shutdown(self) -> None:
        """Every service NOT_SERVING from now on, whatever is set later."""
        with self._write_lock:
            if self._shutting_down:
                return
            super().enter_graceful_shutdown()
            with self._statuses_lock:
                self._statuses = dict.fromkeys(self._statuses,
                                               health_pb2.HealthCheckResponse.NOT_SERVING)
                self._shutting_down = True

    def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.ServicerContext
    ) -> Any:
        """The status of ``request.service`` (``""``: the whole server).

        Raises:
            grpc.RpcError: NOT_FOUND (through ``context.abort``) when the service has no status;
                the details quote it (:func:`~planner_svc.core.errors.echo`: at most
                ``ECHO_CHARS`` characters of it, and its length) and name the services that
                have one (the first :data:`MAX_LISTED`, then how many more).
        """
        with self._statuses_lock:
            status = self._statuses.get(request.service)
            known = sorted(self._statuses)
        if status is None:
            shown = ", ".join(repr(name) for name in known[:MAX_LISTED])
            if len(known) > MAX_LISTED:
                shown += f" and {len(known) - MAX_LISTED} more"
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"service {echo(request.service)} is unknown to health checking; services with a "
                f"status: {shown} ('' is the whole server)",
            )
        return health_pb2.HealthCheckResponse(status=status)

    def List(
        self, request: health_pb2.HealthListRequest, context: grpc.ServicerContext
    ) -> Any:
        """Every service with a status (the whole server as ``""``), as ``Check`` would answer
        each of them at this moment."""
        with self._statuses_lock:
            statuses = dict(self._statuses)
        if len(statuses) > MAX_LISTED:
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{len(statuses)} services have a status; List reports at most {MAX_LISTED}",
            )
        return health_pb2.HealthListResponse(
            statuses={
                name: health_pb2.HealthCheckResponse(status=status)
                for name, status in sorted(statuses.items())
            }
        )
