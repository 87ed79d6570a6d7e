"""The Go planner-plan CLI checks planner-svc plan's request bounds before calling: the same
numbers as planner_svc.core.limits (a change to one side must follow on the other)."""

from __future__ import annotations

import re
from pathlib import Path

from planner_svc.core.limits import BUDGET_TOKENS, EXPAND_DEPTH

MAIN_GO = Path(__file__).resolve().parents[2] / "clients/go/cmd/planner-plan/main.go"


def _constant(name: str) -> int:
    found = re.search(rf"^\s*{name}\s*=\s*([0-9_]+)", MAIN_GO.read_text(encoding="utf-8"),
                      re.MULTILINE)
    assert found is not None, f"{name} not declared in {MAIN_GO}"
    return int(found.group(1).replace("_", ""))


def test_the_go_cli_bounds_are_the_service_limits() -> None:
    assert (_constant("minBudgetTokens"), _constant("maxBudgetTokens")) == (
        BUDGET_TOKENS.low, BUDGET_TOKENS.high)
    assert (0, _constant("maxExpandDepth")) == (EXPAND_DEPTH.low, EXPAND_DEPTH.high)
