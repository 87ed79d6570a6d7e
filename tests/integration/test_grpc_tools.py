"""grpcurl and ghz against a real server, with no proto files: everything through reflection.

Both are the pinned builds of :mod:`bench.gotools`, installed with ``go install`` into
``.cache/bin`` on first use (modules from the Go module proxy, or the module cache). Without a
``go`` on PATH, or with neither the proxy nor the cache holding the modules, the tests fail
saying which.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bench.gotools import GoToolError, go_tool
from planner_svc.client.common import question_request
from tests.integration.conftest import Live
from tests.integration.test_reflection import METHODS, SERVICES

pytestmark = pytest.mark.integration

AS_OF = 1_800_000_000_000_000
QUESTION = "In which present-day country did goats first get domesticated?"


def _tool(name: str) -> Path:
    try:
        return go_tool(name)
    except GoToolError as exc:
        pytest.fail(f"cannot install {name}: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def grpcurl() -> Path:
    return _tool("grpcurl")


@pytest.fixture(scope="module")
def ghz() -> Path:
    return _tool("ghz")


def _grpcurl(binary: Path, live: Live, *args: str,
             data: object = None) -> subprocess.CompletedProcess[str]:
    """``grpcurl -plaintext [-d JSON] ADDRESS ARGS...``."""
    flags = ["-d", json.dumps(data)] if data is not None else []
    return subprocess.run([str(binary), "-plaintext", *flags, live.address, *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_grpcurl_lists_every_service(live: Live, grpcurl: Path) -> None:
    result = _grpcurl(grpcurl, live, "list")
    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) == SERVICES


def test_grpcurl_describes_every_method(live: Live, grpcurl: Path) -> None:
    services = sorted({method.rsplit(".", 1)[0] for method in METHODS})
    listed: set[str] = set()
    for service in services:
        result = _grpcurl(grpcurl, live, "list", service)
        assert result.returncode == 0, result.stderr
        listed.update(result.stdout.split())
    assert listed == set(METHODS)
    for method, (request, response) in sorted(METHODS.items()):
        result = _grpcurl(grpcurl, live, "describe", method)
        assert result.returncode == 0, (method, result.stderr)
        name = method.rsplit(".", 1)[1]
        assert re.fullmatch(
            rf"{re.escape(method)} is a method:\n"
            rf"rpc {name} \( (stream )?\.{re.escape(request)} \) "
            rf"returns \( (stream )?\.{re.escape(response)} \);\n",
            result.stdout,
        ), result.stdout


def test_grpcurl_plans_the_question_with_the_python_clients_hash(live: Live,
                                                                 grpcurl: Path) -> None:
    body = {"question": QUESTION, "expandDepth": 1, "budgetTokens": "500",
            "atValid": str(AS_OF), "atTx": str(AS_OF)}
    result = _grpcurl(grpcurl, live, "planner.v1.EvidencePlannerService/Plan", data=body)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)["plan"]
    expected = live.planner.Plan(
        question_request(QUESTION, budget_tokens=500, at_valid_us=AS_OF, at_tx_us=AS_OF),
        timeout=30,
    ).plan
    assert expected.spans
    assert plan["plan_hash"] == expected.plan_hash
    assert [s["span"]["source_id"] for s in plan["spans"]] == [
        s.span.source_id for s in expected.spans]


def test_grpcurl_decodes_the_error_details(live: Live, grpcurl: Path) -> None:
    result = _grpcurl(grpcurl, live, "planner.v1.EvidencePlannerService/Plan",
                      data={"question": "goats", "expandDepth": 5})
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "Code: InvalidArgument" in out
    assert '"@type": "type.googleapis.com/google.rpc.BadRequest"' in out
    assert '"field": "expand_depth"' in out
    assert '"description": "must be in 0..2, got 5"' in out


def test_ghz_loads_plan_through_reflection(live: Live, ghz: Path) -> None:
    body = {"question": QUESTION, "expandDepth": 1, "budgetTokens": "300"}
    result = subprocess.run(
        [str(ghz), "--insecure", "--call", "planner.v1.EvidencePlannerService.Plan",
         "-d", json.dumps(body), "-n", "20", "-c", "2", "--format", "json", live.address],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["count"] == 20
    assert report["statusCodeDistribution"] == {"OK": 20}
