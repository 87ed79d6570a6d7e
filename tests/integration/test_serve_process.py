"""`planner-svc serve` as a real process: worker processes, graceful SIGTERM, and a second
server on a served port refused in every mode (single process or a ``--workers`` group, against
either)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from planner_svc.api.planner.v1 import plan_pb2_grpc
from planner_svc.client.common import question_request
from tests.serving import ServeProcess, serving_address

pytestmark = pytest.mark.integration


def _serve(data: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "planner_svc.cli", "serve", "--data", str(data), "--port",
         str(port), "--log-level", "warning", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_two_workers_share_a_port_and_stop_on_sigterm(
    fixture_data_dir: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    server = ServeProcess(data, "--workers", "2")  # port 0: one ephemeral port for the group
    try:
        address = server.wait_serving(timeout_s=60)
        port = int(address.rpartition(":")[2])
        hashes = set()
        for _ in range(4):  # separate connections may land on either worker
            with grpc.insecure_channel(
                address, options=[("grpc.use_local_subchannel_pool", 1)]
            ) as channel:
                plan = plan_pb2_grpc.EvidencePlannerServiceStub(channel).Plan(
                    question_request("Which port is the world's busiest by cargo tonnage?",
                                     budget_tokens=400),
                    timeout=30,
                ).plan
                hashes.add(plan.plan_hash)
        assert len(hashes) == 1  # every worker plans identically
        # A second server on the same port is refused while the workers hold it, single or a
        # group of its own (SO_REUSEPORT would let that one join and split the traffic).
        other = tmp_path / "other"
        _assert_refused(_serve(data, port), _served_message(port))
        _assert_refused(_serve(other, port, "--workers", "2"), _served_message(port))
        assert not other.exists()  # refused before touching its data directory
    finally:
        code = server.stop()
    assert code == 0
    serving = {line for line in server.stderr.splitlines() if serving_address(line)}
    assert len(serving) == 2  # each worker serves the group's port
    assert {serving_address(line) for line in serving} == {address}
    # each worker says it is going, then that it has gone (its store closed)
    events = [json.loads(line) for line in server.stderr.splitlines() if line.startswith("{")]
    assert sum(e["event"] == "shutting_down" for e in events) == 2
    assert sum(e["event"] == "stopped" and e["seconds"] >= 0 for e in events) == 2


def _served_message(port: int) -> str:
    return (
        f"planner-svc serve: port {port} is already served by another planner-svc server on "
        "this machine (any mode, e.g. another --workers group over another data directory); "
        "stop it or pick another --port"
    )


def _assert_refused(proc: subprocess.Popen[str], message: str) -> None:
    code = proc.wait(timeout=60)
    _, stderr = proc.communicate()
    assert (code, stderr.splitlines()[-1:]) == (1, [message])


def test_a_served_port_refuses_a_second_server_of_either_mode(
    fixture_data_dir: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    server = ServeProcess(data)
    try:
        port = int(server.wait_serving(timeout_s=60).rpartition(":")[2])
        _assert_refused(_serve(tmp_path / "b", port), _served_message(port))
        _assert_refused(_serve(tmp_path / "c", port, "--workers", "2"), _served_message(port))
    finally:
        assert server.stop() == 0


def test_a_port_another_program_listens_on_is_refused(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        for mode in ((), ("--workers", "2")):
            _assert_refused(
                _serve(tmp_path / "data", port, *mode),
                f"planner-svc serve: 127.0.0.1:{port} is already in use by another process; "
                "stop it or pick another --port",
            )
