"""The registry reaches the server: ``serve --models``, ``ServerSettings.models_path``, backends."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from planner_svc.core.errors import ConfigError
from planner_svc.server import cli
from planner_svc.server.backends import Backends
from planner_svc.settings import Environment, ServerSettings, settings_from_flags


def _serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


def test_serve_takes_a_models_file() -> None:
    given = settings_from_flags(_serve_args("--models", "conf/models.json"), Environment())
    assert given.models_path == Path("conf/models.json")
    assert settings_from_flags(_serve_args(), Environment()).models_path is None
    assert ServerSettings(data_dir=Path("d")).models_path is None


def test_backends_plan_with_the_configured_registry(tmp_path: Path) -> None:
    registry = tmp_path / "models.json"
    registry.write_text('{"models": {"house-llm": {"context_window": 2048}}}')
    backends = Backends.open(
        ServerSettings(data_dir=tmp_path / "data", semantic=False, models_path=registry)
    )
    try:
        counter = backends.planner._counter
        assert counter is not None
        assert counter.context_window("house-llm") == 2048
        assert counter.context_window("minilm-l6") is None
    finally:
        backends.close()


def test_backends_default_to_the_packaged_registry(tmp_path: Path) -> None:
    backends = Backends.open(ServerSettings(data_dir=tmp_path / "data", semantic=False))
    try:
        counter = backends.planner._counter
        assert counter is not None
        assert counter.context_window("minilm-l6") == 512
        assert counter.count("minilm-l6", "Hello world") == 2
    finally:
        backends.close()


def test_an_invalid_registry_stops_start_up(tmp_path: Path) -> None:
    registry = tmp_path / "models.json"
    registry.write_text('{"models": {"gpt-4o": {"context_window": 0}}}')
    with pytest.raises(ConfigError) as caught:
        Backends.open(
            ServerSettings(data_dir=tmp_path / "data", semantic=False, models_path=registry)
        )
    assert caught.value.field == "models.gpt-4o.context_window"
