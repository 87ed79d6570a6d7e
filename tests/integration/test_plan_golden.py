"""The plan golden: the development questions' plan hashes on the demo corpus never move
silently (``scripts/plan_golden.py``; the demo store is built when missing), and the shared
PostgreSQL store gives the same hashes as the embedded one."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from planner_svc.recall.request import question_query
from planner_svc.server.services import Services
from planner_svc.settings import ServerSettings
from scripts.plan_golden import (
    AS_OF_US,
    GOLDEN,
    ROOT,
    differences,
    ensure_demo_store,
    golden_document,
)
from tests.pgserver import SchemaPerTest

pytestmark = pytest.mark.integration


def test_development_plans_match_the_golden() -> None:
    data = Path(os.environ.get("PLANNER_SVC_DEMO_DATA", ROOT / "data" / "demo"))
    ensure_demo_store(data)
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = golden_document(data)
    assert got["embedder"] == expected["embedder"]
    diff = differences(expected["plans"], got["plans"])  # type: ignore[arg-type]
    assert not diff, (
        f"{len(diff)} development plans moved; a ranking change rewrites the golden with "
        "`python scripts/plan_golden.py --write` in its own commit, with the eval before and "
        "after:\n" + "\n".join(diff[:20])
    )
    assert len(expected["plans"]) == 140


def test_the_readme_example_prints_the_demo_store_s_plan_hash() -> None:
    """README's quick start shows the plan of its first question on the demo store with its
    hash; a ranking change that moves it must move README too (users compare the two)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = re.search(r'planner-svc plan "([^"]+)" --budget (\d+)\n', readme)
    assert command is not None
    question, budget = command.group(1), int(command.group(2))
    printed = re.search(r"\nplan (b3:[0-9a-f]{64})  used", readme[command.end():])
    assert printed is not None
    data = Path(os.environ.get("PLANNER_SVC_DEMO_DATA", ROOT / "data" / "demo"))
    ensure_demo_store(data)
    services = Services.open(ServerSettings(data_dir=data))
    try:
        planner = services.planner
        query = question_query(question, config=planner.config, recall=planner.recall,
                               now_us=AS_OF_US, budget_tokens=budget)
        assert planner.plan(query).plan.plan_hash == printed.group(1)
    finally:
        services.close()


def test_development_plans_on_postgresql_match_the_golden(
    postgres_schemas: SchemaPerTest, tmp_path: Path
) -> None:
    """The demo corpus ingested into the shared store plans every development question with
    the golden hashes of the embedded store: the backends rank identically."""
    url = postgres_schemas.url()
    ensure_demo_store(tmp_path / "replica", url)
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = golden_document(tmp_path / "replica", url)
    diff = differences(expected["plans"], got["plans"])  # type: ignore[arg-type]
    assert not diff, "\n".join(diff[:20])
