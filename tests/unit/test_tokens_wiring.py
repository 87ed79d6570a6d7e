"""The registry reaches the server: ``serve --models``, ``ServerSettings.models_path``, the
services' planner."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from planner_svc.core.errors import ConfigError
from planner_svc.core.model import EvidencePlan
from planner_svc.ingest import DocumentIn
from planner_svc.recall.request import EvidenceQuery, StructuredLeg
from planner_svc.recall.tokens import default_counter
from planner_svc.server import cli
from planner_svc.server.services import Services
from planner_svc.settings import Environment, ServerSettings, settings_from_flags

T0 = 1_700_000_000_000_000


def _serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


def test_serve_takes_a_models_file() -> None:
    given = settings_from_flags(_serve_args("--models", "conf/models.json"), Environment())
    assert given.models_path == Path("conf/models.json")
    assert settings_from_flags(_serve_args(), Environment()).models_path is None
    assert ServerSettings(data_dir=Path("d")).models_path is None


def _plan_as(services: Services, model: str, budget: int) -> EvidencePlan:
    """The plan of a one-document store for a structured query, counted for ``model``."""
    report = services.ingest.ingest(iter([DocumentIn(
        source_id="notes/otters", title="Otters",
        text="# Otters\n\nSea otters rest in kelp forests and hold hands while they sleep.\n",
        valid_from_us=T0, version_tx_us=T0,
    )]))
    assert not report.errors, report.errors
    query = EvidenceQuery(
        structured=StructuredLeg(text="otters kelp"), semantic=None, expand_depth=0,
        at_valid_us=T0, at_tx_us=T0, budget_tokens=budget, model=model,
        allow_ungrounded=False, explain=False, max_frac_per_source=1.0, dedup_overlap=0.5,
    )
    return services.planner.plan(query).plan


def test_services_plan_with_the_configured_registry(tmp_path: Path) -> None:
    registry = tmp_path / "models.json"
    registry.write_text('{"models": {"house-llm": {"context_window": 2048}}}')
    services = Services.open(
        ServerSettings(data_dir=tmp_path / "data", semantic=False, models_path=registry)
    )
    try:
        house = _plan_as(services, "house-llm", 5000)  # window 2048: B = 1024, estimated
        assert (house.budget, house.stats.token_estimate) == (1024 * 9 // 10, True)
        unknown = _plan_as(services, "minilm-l6", 5000)  # not in this registry: no ceiling
        assert (unknown.budget, unknown.stats.token_estimate) == (4500, True)
    finally:
        services.close()


def test_services_default_to_the_packaged_registry(tmp_path: Path) -> None:
    services = Services.open(ServerSettings(data_dir=tmp_path / "data", semantic=False))
    try:
        plan = _plan_as(services, "minilm-l6", 5000)  # window 512, counted exactly
        assert (plan.budget, plan.stats.token_estimate) == (256, False)
        exact = default_counter().count("minilm-l6", plan.spans[0].text)
        assert plan.spans[0].tokens == exact
        assert default_counter().count("minilm-l6", "Hello world") == 2
    finally:
        services.close()


def test_an_invalid_registry_stops_start_up(tmp_path: Path) -> None:
    registry = tmp_path / "models.json"
    registry.write_text('{"models": {"gpt-4o": {"context_window": 0}}}')
    with pytest.raises(ConfigError) as caught:
        Services.open(
            ServerSettings(data_dir=tmp_path / "data", semantic=False, models_path=registry)
        )
    assert caught.value.field == "models.gpt-4o.context_window"


@pytest.mark.parametrize(("mib", "keeps"), [(0, False), (1, True)])
def test_serve_bounds_the_span_texts_it_keeps(tmp_path: Path, mib: int, keeps: bool) -> None:
    settings = settings_from_flags(
        _serve_args("--data", str(tmp_path / "data"), "--span-text-mib", str(mib)),
        Environment())
    services = Services.open(dataclasses.replace(settings, semantic=False))
    try:
        plan = _plan_as(services, "", 500)
        assert plan.spans and all(s.text for s in plan.spans)
        kept = services.planner._texts.kept_bytes  # the bound the flag set
        assert (kept > 0) is keeps and kept <= mib << 20
    finally:
        services.close()
