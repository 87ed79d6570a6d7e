"""Standard health checking (``grpc.health.v1.Health``) with every RPC its descriptor
advertises: ``Check``, ``Watch`` and ``List``.

grpcio-health-checking implements ``Check`` and ``Watch``; ``List`` (every service's status in
one call) is in the service's descriptor, so reflection advertises it, but the servicer answers
UNIMPLEMENTED. :class:`HealthServicer` answers it from the same status table ``Check`` reads.
Its ``Check`` of a service with no status fails NOT_FOUND, as the protocol says, but with empty
details; :class:`HealthServicer` names the service and the ones it knows.
"""

from __future__ import annotations

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
    """

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
        with self._lock:
            status = self._server_status.get(request.service)
            known = sorted(self._server_status)
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
        # The base class keeps the table in ``_server_status`` under ``_lock`` (an RLock), the
        # two attributes its own ``Check`` reads; this reads them the same way.
        with self._lock:
            statuses = dict(self._server_status)
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
