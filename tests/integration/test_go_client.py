"""The Go client in clients/go against a real server: it recomputes the same plan hash.

Builds ``clients/go/cmd/planner-plan`` with the ``go`` on PATH (module downloads come from the
Go module proxy on a cold cache), runs it against the fixture server and compares its output with
the plan the Python stub receives for the same request.

These tests never skip: without a Go toolchain, with one older than ``clients/go/go.mod``
asks for, or without the modules (no module proxy reachable and none cached) they fail with a
message saying which of those is missing and how to provide it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from planner_svc.client.common import question_request
from tests.integration.conftest import Live

pytestmark = pytest.mark.integration

GO_MODULE = Path(__file__).resolve().parents[2] / "clients" / "go"
HASH_LINE = re.compile(r"^hash verified: (b3:[0-9a-f]{64})$", re.MULTILINE)


GO_DIRECTIVE = re.compile(r"^go (\d+)\.(\d+)", re.MULTILINE)
GO_VERSION = re.compile(r"\bgo(\d+)\.(\d+)")


def _tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def go_problem(env: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """``(go, None)`` when clients/go can be built here, else ``(go or None, what is missing)``.

    Checks, in order: a ``go`` on PATH; its version against the ``go`` directive of
    clients/go/go.mod; the modules go.mod requires, from the module cache or the module proxy.
    """
    environ = dict(os.environ if env is None else env)
    required = GO_DIRECTIVE.search((GO_MODULE / "go.mod").read_text())
    assert required is not None, "clients/go/go.mod has no go directive"
    need = (int(required.group(1)), int(required.group(2)))
    go = shutil.which("go", path=environ.get("PATH"))
    if go is None:
        return None, (
            f"the Go toolchain is missing: no `go` on PATH (clients/go needs Go "
            f"{need[0]}.{need[1]} or later; install it from https://go.dev/dl/)"
        )
    version = subprocess.run([go, "version"], capture_output=True, text=True, env=environ,
                             timeout=60, check=False).stdout
    found = GO_VERSION.search(version)
    if found is None or (int(found.group(1)), int(found.group(2))) < need:
        return go, (
            f"the Go toolchain is too old: `go version` says {version.strip()!r}, clients/go "
            f"needs Go {need[0]}.{need[1]} or later"
        )
    download = subprocess.run([go, "mod", "download"], cwd=GO_MODULE, capture_output=True,
                              text=True, env=environ, timeout=600, check=False)
    if download.returncode != 0:
        settings = subprocess.run([go, "env", "GOPROXY", "GOMODCACHE"], capture_output=True,
                                  text=True, env=environ, timeout=60, check=False).stdout.split()
        proxy, cache = [*settings, "?", "?"][:2]
        return go, (
            "the Go modules clients/go needs are missing: they are not in the module cache "
            f"({cache}) and the module proxy (GOPROXY={proxy}) did not supply them. Give the "
            "machine access to the proxy, point GOPROXY at a reachable one, or run "
            "`go mod download` in clients/go where the proxy is reachable and copy the cache. "
            f"`go mod download` said:\n{_tail(download.stderr)}"
        )
    return go, None


@pytest.fixture(scope="module")
def go_cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The planner-plan binary built from clients/go into a temporary directory."""
    go, problem = go_problem()
    if problem is not None:
        pytest.fail(f"cannot build the Go client: {problem}", pytrace=False)
    assert go is not None
    binary = tmp_path_factory.mktemp("go-cli") / "planner-plan"
    build = subprocess.run(
        [go, "build", "-o", str(binary), "./cmd/planner-plan"],
        cwd=GO_MODULE, capture_output=True, text=True, timeout=600, check=False,
    )
    assert build.returncode == 0, (
        f"go build of clients/go failed (the toolchain and modules are present):\n{build.stderr}"
    )
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

    plan = live.planner.Plan(question_request(question, budget_tokens=budget), timeout=30).plan
    assert plan.spans, "the fixture must recall something for this question"
    assert match.group(1) == plan.plan_hash
    # One row per span, in the plan's order: source, kind, location, tokens, shortest
    # round-trip weight, in the columns the header line starts.
    lines = result.stdout.splitlines()
    starts = [lines[0].index(name) for name in ("source", "kind", "location", "tokens", "weight")]
    rows = [[line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line)], strict=True)]
            for line in lines[1 : 1 + len(plan.spans)]]
    assert [(src, kind, where, int(tokens), float(weight))
            for src, kind, where, tokens, weight in rows] == [
        (s.span.source_id, s.kind, " › ".join(s.location.heading_path), s.tokens, s.weight)
        for s in plan.spans
    ]
    assert any(where for _, _, where, _, _ in rows), "the fixture's spans have heading paths"
    assert f"{len(plan.spans)} spans, used {plan.used}/{plan.budget} tokens" in result.stdout


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("-depth", "5"), "planner-plan: -depth 5 is outside 0..2\n"),
        (("-budget", "0"), "planner-plan: -budget 0 is outside 1..10000000 (negative or omitted: "
                           "the server's default)\n"),
    ],
)
def test_go_cli_refuses_an_out_of_range_flag_before_calling_as_the_python_cli(
    live: Live, go_cli: Path, flags: tuple[str, str], said: str
) -> None:
    result = _run(go_cli, "-addr", live.address, *flags, "goats")
    assert (result.returncode, result.stdout, result.stderr) == (2, "", said)
    from planner_svc.cli import main

    python_flag = {"-depth": "--expand-depth", "-budget": "--budget"}[flags[0]]
    with pytest.raises(SystemExit) as exited:  # planner-svc plan: a usage error too
        main(["plan", "goats", "--address", live.address, python_flag, flags[1]])
    assert exited.value.code == 2


def test_go_cli_exits_as_the_python_cli_when_the_server_declines(live: Live,
                                                                  go_cli: Path) -> None:
    result = _run(go_cli, "-addr", live.address, "qwpoeiru zxmcnv asdkjh")
    assert result.returncode == 4  # planner-svc plan's exit code for a decline
    assert "Plan failed: FailedPrecondition: " in result.stderr
    assert "reason: INSUFFICIENT_EVIDENCE" in result.stderr


def test_a_missing_toolchain_is_named(tmp_path: Path) -> None:
    go, problem = go_problem({"PATH": str(tmp_path)})
    assert go is None
    assert problem is not None and problem.startswith("the Go toolchain is missing: no `go`")


def test_an_unreachable_module_proxy_is_named(tmp_path: Path) -> None:
    _, problem = go_problem()
    if problem is not None:  # no usable toolchain: say so rather than skip
        pytest.fail(f"cannot check the module diagnosis: {problem}", pytrace=False)
    cold = {**os.environ, "GOPROXY": "off", "GOMODCACHE": str(tmp_path / "modcache"),
            "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    _, problem = go_problem(cold)
    assert problem is not None
    assert problem.startswith("the Go modules clients/go needs are missing")
    assert "GOPROXY=off" in problem
