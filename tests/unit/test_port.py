"""Port claims for port 0: the ephemeral port a server ends up serving is claimed like a fixed
one, and a worker group's reserved port is one its workers (and only they) can bind."""

from __future__ import annotations

import errno
import socket

import pytest

from planner_svc.server.port import PortInUse, claim_port

HOST = "127.0.0.1"


def _served(port: int) -> str:
    return f"port {port} is already served by another planner-svc server"


def test_a_worker_groups_port_0_reserves_one_port_its_workers_can_share() -> None:
    claim = claim_port(HOST, 0, group=True)
    try:
        assert claim.port > 0
        workers = []
        for _ in range(2):  # as grpc binds each worker (SO_REUSEPORT)
            worker = socket.socket()
            worker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            worker.bind((HOST, claim.port))
            worker.listen()
            workers.append(worker)
        with socket.socket() as other, pytest.raises(OSError) as info:
            other.bind((HOST, claim.port))  # another program cannot take it
        assert info.value.errno == errno.EADDRINUSE
        with pytest.raises(PortInUse, match=_served(claim.port)):
            claim_port(HOST, claim.port, group=True)  # nor another planner-svc group
        for worker in workers:
            worker.close()
    finally:
        claim.release()
    claim_port(HOST, claim.port).release()  # released: free again


def test_a_single_servers_port_0_is_claimed_once_bound() -> None:
    claim = claim_port(HOST, 0)
    assert claim.port == 0  # nothing claimed before the server binds
    with socket.socket() as server:
        server.bind((HOST, 0))
        server.listen()
        claim.hold(server.getsockname()[1])
        try:
            assert claim.port == server.getsockname()[1]
            with pytest.raises(PortInUse, match=_served(claim.port)):
                claim_port(HOST, claim.port)
        finally:
            claim.release()
        claim.release()  # idempotent
        with pytest.raises(PortInUse, match="already in use by another process"):
            claim_port(HOST, claim.port)  # the probe still sees the listener
