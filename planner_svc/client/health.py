"""``planner-svc health``: ask a server's standard health service (``grpc.health.v1.Health``
``Check``) for one service's status, as a probe would.

Prints the status (``SERVING``, ``NOT_SERVING``, ...) on stdout. Exit codes: 0 SERVING; 1 the
server answered with another status; 3 no status could be read (the server unreachable, no
answer within ``--timeout``, a service name it does not know: one line on stderr naming the
address); 2 bad arguments.
"""

from __future__ import annotations

import argparse
import sys

from planner_svc.cliargs import DefaultsHelpFormatter, address, bounded
from planner_svc.client.connection import (
    ADDRESS_HELP,
    DEADLINE_S,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    add_tls_flags,
    client_address,
    command_channel,
    unavailable_hint,
)

__all__ = ["EXIT_NOT_SERVING", "EXIT_NO_STATUS", "EXIT_SERVING", "register"]

EXIT_SERVING = 0
"""Exit code: the service is SERVING."""
EXIT_NOT_SERVING = 1
"""Exit code: the server answered with a status other than SERVING."""
EXIT_NO_STATUS = EXIT_UNAVAILABLE
"""Exit code: no status was read (unreachable, deadline exceeded, unknown service, ...)."""

DEFAULT_HEALTH_TIMEOUT_S = 5.0
"""Default ``--timeout``, seconds."""

_FMT = DefaultsHelpFormatter


def _health(args: argparse.Namespace) -> int:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    channel = command_channel(args, "health")
    if channel is None:
        return EXIT_USAGE
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=args.service),
                               timeout=args.timeout)
        except grpc.RpcError as err:
            code = err.code()  # type: ignore[attr-defined]
            details = str(err.details() or "")  # type: ignore[attr-defined]
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                reason = f"no answer from {args.address} within {args.timeout:g} s"
            elif code == grpc.StatusCode.UNAVAILABLE:
                reason = f"cannot reach {args.address}: {details}"
            else:
                reason = f"{args.address}: {details}"
            print(f"planner-svc health: {code.name}: {reason}"
                  f"{unavailable_hint(code.name, args.address, err)}", file=sys.stderr)
            return EXIT_NO_STATUS
    name = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(name)
    return EXIT_SERVING if reply.status == health_pb2.HealthCheckResponse.SERVING \
        else EXIT_NOT_SERVING


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``health`` subcommand."""
    health = subparsers.add_parser(
        "health",
        help="print a server's health status; exit 0 only when SERVING",
        description=(
            "Call grpc.health.v1.Health/Check on a server and print the status (SERVING, "
            "NOT_SERVING). Exit codes: 0 SERVING, 1 another status, 3 no status (unreachable, "
            "no answer within --timeout, unknown service), 2 bad arguments."
        ),
        formatter_class=_FMT,
    )
    health.add_argument("--address", type=address, default=client_address(),
                        help=ADDRESS_HELP)
    health.add_argument("--service", default="",
                        help="service to check, e.g. planner.v1.EvidencePlannerService "
                             "(default: the whole server)%(default).0s")
    health.add_argument("--timeout", type=bounded(float, DEADLINE_S),
                        default=DEFAULT_HEALTH_TIMEOUT_S,
                        help="deadline of the check, connecting included, seconds")
    add_tls_flags(health)
    health.set_defaults(func=_health)
