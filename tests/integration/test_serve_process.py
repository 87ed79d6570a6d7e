"""`planner-svc serve` as a real process: worker processes, graceful SIGTERM, loud port clash."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from planner_svc.api.planner.v1 import plan_pb2_grpc
from planner_svc.client.common import question_request, wait_serving

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    port = _free_port()
    address = f"127.0.0.1:{port}"
    proc = _serve(data, port, "--workers", "2")
    try:
        wait_serving(address, proc, timeout_s=60)
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
        # a second server on the same port is refused while the workers hold it
        clash = _serve(data, port)
        assert clash.wait(timeout=60) != 0
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0
