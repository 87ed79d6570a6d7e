"""The gRPC server: build it over the services, run it, shut it down cleanly.

``create_server(settings, services) -> RunningServer`` (with its bound port) is separate from
running it, so tests bind port 0 and talk to a real server. It registers the servicers of every
RPC, standard health (``Check``, ``Watch`` and ``List``) and server reflection (v1 and v1alpha,
method names included), the bearer-token interceptor when a token is set, the decode guard
(:mod:`planner_svc.server.wire`: a request that does not decode is INVALID_ARGUMENT, never
INTERNAL), the message size limits, the keepalive policy (:func:`server_options`) and TLS,
mutual when client certificate authorities are given. Shutdown order: health NOT_SERVING, the
drain, ``stop(grace)`` with every research session ended by a final CANCELLED message, then the
services close. :func:`serve` and :func:`serve_workers` claim the port first
(:mod:`planner_svc.server.port`), so a second server on a served port refuses to start.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import signal
import threading
import time
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
import structlog

# Pins FAISS to one OpenMP thread; must run before anything imports faiss (see
# docs/architecture.md, "Processes and threads").
import planner_svc.index  # noqa: F401  isort: skip

from grpc_health.v1 import health_pb2, health_pb2_grpc

from planner_svc.api.planner.v1 import (
    memory_pb2,
    memory_pb2_grpc,
    plan_pb2,
    plan_pb2_grpc,
    research_pb2,
)
from planner_svc.core.errors import ConfigError
from planner_svc.server.auth import BearerTokenInterceptor
from planner_svc.server.health import HEALTH_SERVICE_NAME, HealthServicer
from planner_svc.server.port import PortClaim, claim_port
from planner_svc.server.reflection import add_reflection
from planner_svc.server.research import ResearchPlannerServicer, add_research_servicer
from planner_svc.server.servicers import EvidencePlannerServicer, MemoryServicer
from planner_svc.server.services import Services
from planner_svc.server.wire import DecodeGuard
from planner_svc.settings import ServerSettings, TransportSettings

log = structlog.get_logger("planner_svc.server")

HANDLER_EXIT_S = 10.0
"""Seconds a stopping server waits, after the grace period, for handlers of cancelled calls to
return before it closes the store."""

__all__ = [
    "MAX_PING_STRIKES",
    "SERVICE_NAMES",
    "RunningServer",
    "create_server",
    "serve",
    "serve_workers",
    "server_options",
]

SERVICE_NAMES: tuple[str, ...] = (
    plan_pb2.DESCRIPTOR.services_by_name["EvidencePlannerService"].full_name,
    memory_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name,
    research_pb2.DESCRIPTOR.services_by_name["ResearchPlannerService"].full_name,
)
"""The planner's own services, registered for health and reflection."""

MAX_PING_STRIKES = 2
"""Client pings sooner than ``min_ping_interval_s`` the server tolerates before it sends
``GOAWAY ENHANCE_YOUR_CALM`` (gRPC's default)."""

_TOLERANT_METHODS = frozenset({
    f"/{memory_pb2.DESCRIPTOR.services_by_name['MemoryService'].full_name}/IngestSources",
})
"""Methods whose request streams take an undecodable message as one failed item."""


def server_options(transport: TransportSettings) -> list[tuple[str, int]]:
    """The gRPC server's channel options: message size limits, port sharing, and the
    keepalive policy.

    Keepalive: the server pings a connection silent for ``keepalive_time_s`` and drops it when
    no acknowledgement comes within ``keepalive_timeout_s`` (a client that vanished without
    closing its streams frees its research session); it accepts client pings every
    ``min_ping_interval_s`` or more, with or without a call open, and keeps pinging an idle
    stream (no cap on pings without data). ``grpc.http2.min_ping_interval_without_data_ms`` is
    the one that matters for long streams: gRPC's default (5 minutes) answers a client pinging
    every 10 s while a research stream waits for its workers with ``GOAWAY too_many_pings``
    after three pings.
    """

    def ms(seconds: float) -> int:
        return round(seconds * 1000)

    return [
        ("grpc.max_receive_message_length", transport.max_message_bytes),
        ("grpc.max_send_message_length", transport.max_message_bytes),
        ("grpc.so_reuseport", 1 if transport.reuse_port else 0),
        ("grpc.keepalive_time_ms", ms(transport.keepalive_time_s)),
        ("grpc.keepalive_timeout_ms", ms(transport.keepalive_timeout_s)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", ms(transport.min_ping_interval_s)),
        ("grpc.http2.max_ping_strikes", MAX_PING_STRIKES),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def _read_pem(path: Path, field: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(field, f"cannot read {path}: {exc.strerror}") from None


def _credentials(transport: TransportSettings) -> grpc.ServerCredentials | None:
    """TLS credentials (mutual when ``tls_client_ca`` is set); None = plaintext.

    Raises:
        ConfigError: a PEM file cannot be read (named by its setting).
    """
    if transport.tls_cert is None or transport.tls_key is None:
        return None
    pair = [(_read_pem(transport.tls_key, "tls_key"), _read_pem(transport.tls_cert, "tls_cert"))]
    if transport.tls_client_ca is None:
        return grpc.ssl_server_credentials(pair)
    return grpc.ssl_server_credentials(
        pair, root_certificates=_read_pem(transport.tls_client_ca, "tls_client_ca"),
        require_client_auth=True,
    )


@dataclass(slots=True)
class RunningServer:
    """A started server with its health servicer and bound port."""

    server: grpc.Server
    port: int
    health: HealthServicer
    services: Services
    research: ResearchPlannerServicer
    handlers: futures.ThreadPoolExecutor

    def stop(self, grace_s: float, *, drain_s: float = 0.0) -> None:
        """Health NOT_SERVING; keep accepting calls for ``drain_s`` seconds while load
        balancers notice; then refuse new calls, end every research session with a final
        CANCELLED message, give in-flight calls ``grace_s`` seconds, wait for their handlers
        to return (at most :data:`HANDLER_EXIT_S` seconds), and close the services."""
        self.health.enter_graceful_shutdown()
        if drain_s > 0:
            time.sleep(drain_s)
        stopped = self.server.stop(grace_s)
        self.research.shutdown()
        stopped.wait()
        self._await_handlers()
        self.services.close()

    def _await_handlers(self) -> None:
        """Wait for the handler threads: a call the transport cancelled at the end of the grace
        period keeps running in its thread until it next checks for cancellation (a plan:
        its next stage), and closing the store under it would fail it mid-read."""
        waiter = threading.Thread(target=self.handlers.shutdown, kwargs={"wait": True},
                                  name="planner-rpc-exit", daemon=True)
        waiter.start()
        waiter.join(HANDLER_EXIT_S)
        if waiter.is_alive():
            log.warning("handlers_still_running", waited_s=HANDLER_EXIT_S,
                        hint="calls still running when the store closes fail")


def create_server(settings: ServerSettings, services: Services) -> RunningServer:
    """Build and start a server bound to ``settings.transport.address`` over ``services``;
    returns it with its port.

    Raises:
        RuntimeError: the address could not be bound.
    """
    transport = settings.transport
    interceptors: list[Any] = []
    if transport.auth_token:
        interceptors.append(BearerTokenInterceptor(transport.auth_token))
    interceptors.append(DecodeGuard(planner_services=SERVICE_NAMES, tolerant=_TOLERANT_METHODS))
    handlers = futures.ThreadPoolExecutor(max_workers=transport.max_workers,
                                          thread_name_prefix="planner-rpc")
    server = grpc.server(
        handlers,
        interceptors=interceptors,
        options=server_options(transport),
        maximum_concurrent_rpcs=transport.max_workers * 16,
    )
    limit = transport.max_message_bytes
    plan_pb2_grpc.add_EvidencePlannerServiceServicer_to_server(
        EvidencePlannerServicer(services.planner, max_response_bytes=limit), server
    )
    memory_pb2_grpc.add_MemoryServiceServicer_to_server(
        MemoryServicer(ingest=services.ingest, memory=services.memory, max_response_bytes=limit),
        server,
    )
    research = add_research_servicer(
        server,
        evidence=services.evidence,
        provider_factory=services.providers,
        max_sessions=settings.research_sessions,
        max_message_bytes=limit,
        duplicates=services.duplicates,
    )
    names = list(SERVICE_NAMES)
    health_servicer = HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    add_reflection(server, [*names, HEALTH_SERVICE_NAME])
    creds = _credentials(transport)
    try:
        if creds is not None:
            port = server.add_secure_port(transport.address, creds)
        else:
            port = server.add_insecure_port(transport.address)
    except RuntimeError:  # grpcio raises on some bind failures instead of returning 0
        port = 0
    if port == 0:
        raise RuntimeError(
            f"could not bind {transport.address} (in use by another process, or not an address "
            "of this machine)"
        )
    server.start()
    for name in ("", *names):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningServer(server=server, port=port, health=health_servicer, services=services,
                         research=research, handlers=handlers)


def serve(settings: ServerSettings, *, ready: threading.Event | None = None) -> int:
    """Open the services, serve until SIGINT/SIGTERM, then shut down gracefully.

    Raises:
        ConfigError: the data directory, the model registry or the embedding model is unusable.
        RuntimeError: the address (or the metrics port) could not be bound.
    """
    transport = settings.transport
    # A worker of a group shares the port its parent claimed; a single server claims it (port
    # 0: the port it bound, once bound).
    claim = None if transport.reuse_port else claim_port(transport.host, transport.port)
    try:
        return _serve(settings, ready, claim)
    finally:
        if claim is not None:
            claim.release()


def _serve(settings: ServerSettings, ready: threading.Event | None,
           claim: PortClaim | None) -> int:
    transport = settings.transport
    services = Services.open(settings, read_ahead=True)
    try:
        # health turns SERVING only once the first plan is as fast as the next one
        services.planner.warm()
        # The start-up heap (the recall catalog: millions of objects at scale) is long-lived:
        # a full collection walking it stalls every call in flight (about 0.4 s on the demo
        # corpus), so it moves to the permanent generation, which collections skip.
        gc.collect()
        gc.freeze()
        running = create_server(settings, services)
    except BaseException:
        services.close()
        raise
    if claim is not None and claim.port == 0:
        try:
            claim.hold(running.port)
        except BaseException:
            running.stop(0)
            raise
    if transport.metrics_port is not None:
        from prometheus_client import start_http_server

        try:
            start_http_server(transport.metrics_port, addr=transport.host)
        except OSError as exc:
            running.stop(0)
            raise RuntimeError(
                f"cannot serve metrics on {transport.host}:{transport.metrics_port}: "
                f"{exc.strerror}"
            ) from None
    facts = services.describe()
    log.info("serving", address=dataclasses.replace(transport, port=running.port).address,
             data_dir=str(settings.data_dir), **facts)
    if not facts["sources"]:
        log.warning("store_empty", data_dir=str(settings.data_dir),
                    hint="every plan will be empty: ingest documents with "
                         "`planner-svc ingest PATH --data DIR` or the Memory service")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if ready is not None:
        ready.set()
    stop.wait()
    log.info("shutting_down", drain_s=transport.drain_s, grace_s=transport.grace_s)
    started = time.perf_counter()
    running.stop(transport.grace_s, drain_s=transport.drain_s)
    log.info("stopped", seconds=round(time.perf_counter() - started, 2))
    return 0


def _worker_main(settings: ServerSettings, log_json: bool, log_level: str) -> None:
    """Entry point of one worker process (started with ``spawn``)."""
    from planner_svc.server.observe import configure_logging

    configure_logging(json_logs=log_json, level=log_level)
    raise SystemExit(serve(settings))


def serve_workers(
    settings: ServerSettings, *, log_json: bool = True, log_level: str = "info"
) -> int:
    """Serve from ``settings.workers`` processes sharing one port (SO_REUSEPORT), until
    SIGINT/SIGTERM.

    The parent opens the services once first, so the vector index is built or caught up and
    persisted before any worker starts; workers then map the same index files. Workers are
    started with ``spawn`` (never ``fork`` once gRPC or FAISS exist, see docs/architecture.md).
    Port 0: the parent reserves one ephemeral port for the whole group (each worker's
    ``serving`` line names it).

    Raises:
        PortInUse: another server serves the port.
    """
    if settings.workers == 1:
        return serve(settings)
    transport = settings.transport
    claim = claim_port(transport.host, transport.port, group=True)
    try:
        if transport.port == 0:
            settings = dataclasses.replace(
                settings, transport=dataclasses.replace(transport, port=claim.port))
        return _serve_workers(settings, log_json, log_level)
    finally:
        claim.release()


def _serve_workers(settings: ServerSettings, log_json: bool, log_level: str) -> int:
    import multiprocessing

    # the index built or caught up and persisted once, before the workers map it; the
    # parent serves no plan, so it builds no recall catalog
    Services.open(settings, catalog=False).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(
            target=_worker_main,
            args=(settings.worker(i), log_json, log_level),
            name=f"planner-worker-{i}",
        )
        for i in range(settings.workers)
    ]
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for proc in procs:
        proc.start()
    log.info("workers_started", workers=settings.workers, pids=[p.pid for p in procs])
    while not stop.wait(0.5):
        if any(not p.is_alive() for p in procs):
            log.error("worker_exited", codes=[p.exitcode for p in procs])
            break
    for proc in procs:
        if proc.is_alive() and proc.pid is not None:
            os.kill(proc.pid, signal.SIGTERM)
    for proc in procs:
        # a worker's own stop: drain, grace, its handlers' exit, then closing its services
        proc.join(settings.transport.drain_s + settings.transport.grace_s + HANDLER_EXIT_S + 10)
    failed = [p.exitcode for p in procs if p.exitcode not in (0, None)]
    return 1 if failed and not stop.is_set() else 0
