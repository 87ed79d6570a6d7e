"""Loading a client command's module stays cheap: ``planner-svc`` imports every subcommand
module to build its help, and a module that pulled in gRPC there would slow every command."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    ["planner_svc.client.research", "planner_svc.client.plan", "planner_svc.client.eval",
     "planner_svc.server.cli", "planner_svc.demo.cli"],
)
def test_command_modules_import_neither_grpc_nor_protobuf(module: str) -> None:
    code = (
        f"import sys, {module}; "
        "print(sorted(m for m in ('grpc', 'google.protobuf', 'faiss') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
