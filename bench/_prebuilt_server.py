"""A Plan server that does no planning: the transport's upper bound for the Plan RPC.

Built from the same generated stubs, thread pool size, message limits and server reflection as
``planner-svc serve`` (:func:`planner_svc.server.app.create_server`), it answers every Plan
with one prebuilt ``PlanResponse`` read from a file (its serialized bytes, parsed once at start;
each call serializes it again, as a real answer is). :mod:`bench.bench_ghz` loads it with the
same requests as the real server, so the ratio of their throughputs is the share of the
transport's capacity that planning leaves.

Usage: python -m bench._prebuilt_server --port PORT --response FILE
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from concurrent import futures
from pathlib import Path
from types import FrameType

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from planner_svc.api.planner.v1 import plan_pb2, plan_pb2_grpc
from planner_svc.server.reflection import add_reflection
from planner_svc.settings import TransportSettings

PLAN_SERVICE = plan_pb2.DESCRIPTOR.services_by_name["EvidencePlannerService"].full_name


class PrebuiltPlanner(plan_pb2_grpc.EvidencePlannerServiceServicer):
    """Answers every Plan with ``response``, whatever the request."""

    def __init__(self, response: plan_pb2.PlanResponse) -> None:
        self._response = response

    def Plan(self, request: plan_pb2.PlanRequest,
             context: grpc.ServicerContext) -> plan_pb2.PlanResponse:
        return self._response


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--response", type=Path, required=True,
                        help="a serialized planner.v1.PlanResponse")
    args = parser.parse_args()
    response = plan_pb2.PlanResponse.FromString(args.response.read_bytes())
    transport = TransportSettings(port=args.port)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=transport.max_workers),
        options=[
            ("grpc.max_receive_message_length", transport.max_message_bytes),
            ("grpc.max_send_message_length", transport.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=transport.max_workers * 16,
    )
    plan_pb2_grpc.add_EvidencePlannerServiceServicer_to_server(PrebuiltPlanner(response), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    add_reflection(server, [PLAN_SERVICE, health.SERVICE_NAME])
    if server.add_insecure_port(transport.address) == 0:
        print(f"cannot bind {transport.address}", file=sys.stderr)
        return 1
    server.start()
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stop.wait()
    server.stop(1).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
