"""The plan golden: the development questions' plan hashes on the demo corpus never move
silently (``scripts/plan_golden.py``; the demo store is built when missing), and the shared
PostgreSQL store gives the same hashes as the embedded one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scripts.plan_golden import GOLDEN, ROOT, differences, ensure_demo_store, golden_document
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
