"""The Go client in clients/go against a real server: it recomputes the same plan hash.

Builds ``clients/go/cmd/planner-plan`` with the ``go`` on PATH (module downloads come from the
Go module proxy on a cold cache), runs it against the fixture server and compares its output with
the plan the Python stub receives for the same request.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner_svc.client.common import question_request
from tests.integration.conftest import Live

pytestmark = pytest.mark.integration

GO_MODULE = Path(__file__).resolve().parents[2] / "clients" / "go"
HASH_LINE = re.compile(r"^hash verified: (b3:[0-9a-f]{64})$", re.MULTILINE)


@pytest.fixture(scope="module")
def go_cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The planner-plan binary built from clients/go into a temporary directory."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("the Go toolchain is required: `go` is not on PATH (clients/go needs Go 1.25+)")
    binary = tmp_path_factory.mktemp("go-cli") / "planner-plan"
    build = subprocess.run(
        [go, "build", "-o", str(binary), "./cmd/planner-plan"],
        cwd=GO_MODULE, capture_output=True, text=True, timeout=600, check=False,
    )
    assert build.returncode == 0, f"go build failed:\n{build.stderr}"
    yield binary


def _run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("question", "budget"),
    [
        ("In which present-day country did goats first get domesticated?", 500),
        ("Which port is the world's busiest by cargo tonnage?", 800),
    ],
)
def test_go_cli_verifies_the_same_hash_as_python(
    live: Live, go_cli: Path, question: str, budget: int
) -> None:
    result = _run(go_cli, "-addr", live.address, "-budget", str(budget), question)
    assert result.returncode == 0, result.stderr
    match = HASH_LINE.search(result.stdout)
    assert match is not None, result.stdout

    plan = live.planner.Plan(question_request(question, budget_tokens=budget), timeout=30)
    assert plan.spans, "the fixture must recall something for this question"
    assert match.group(1) == plan.plan_hash
    # One row per span, in the plan's order: source, kind, tokens, shortest round-trip weight.
    rows = [line.rsplit(None, 3) for line in result.stdout.splitlines()[1 : 1 + len(plan.spans)]]
    assert [(src, kind, int(tokens), float(weight)) for src, kind, tokens, weight in rows] == [
        (s.span.source_id, s.kind, s.tokens, s.weight) for s in plan.spans
    ]
    assert f"{len(plan.spans)} spans, used {plan.used}/{plan.budget} tokens" in result.stdout


def test_go_cli_reports_the_field_violation(live: Live, go_cli: Path) -> None:
    result = _run(go_cli, "-addr", live.address, "-depth", "5", "goats")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Plan failed: InvalidArgument: " in result.stderr
    assert "field violation: expand_depth: must be in 0..2, got 5" in result.stderr
