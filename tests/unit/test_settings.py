"""The settings tree: the serve flags derive from it, the environment is read in one place."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import ConfigError
from planner_svc.recall.settings import RecallSettings
from planner_svc.server import cli
from planner_svc.settings import (
    ENV_AUTH_TOKEN,
    ENV_MODEL_DIR,
    SERVE_FLAGS,
    Environment,
    ServerSettings,
    TransportSettings,
    read_environment,
    settings_from_flags,
)


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


def test_flag_defaults_are_the_tree_defaults() -> None:
    assert settings_from_flags(_parse(), Environment()) == ServerSettings()


def test_every_flag_reaches_its_field() -> None:
    given = settings_from_flags(
        _parse("--data", "d", "--port", "0", "--threads", "4", "--grace", "1.5",
               "--max-frac-per-source", "0.25", "--default-budget", "900", "--hop-decay", "0.5",
               "--default-k", "7", "--cassettes", "tapes", "--span-text-mib", "0"),
        Environment(),
    )
    assert given.data_dir == Path("d")
    assert given.span_text_mib == 0
    assert (given.transport.port, given.transport.max_workers, given.transport.grace_s) == (
        0, 4, 1.5)
    assert given.selection == SelectionSettings(max_frac_per_source=0.25, default_budget_tokens=900)
    assert given.recall == RecallSettings(hop_decay=0.5, default_k=7)
    assert given.research.cassette_dir == Path("tapes")
    assert len({flag.name for flag in SERVE_FLAGS}) == len(SERVE_FLAGS)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--port", "70000"), "70000 is outside 0..65535"),
        (("--threads", "1"), "1 is outside 2..256"),
        (("--max-frac-per-source", "0"), "0.0 is outside (0, 1]"),
        (("--default-budget", "10000001"), "10000001 is outside 1..10000000"),
        (("--hop-decay", "1.5"), "1.5 is outside (0, 1]"),
        (("--drain", "301"), "301.0 is outside [0, 300]"),
        (("--span-text-mib", "-1"), "-1 is outside 0..65536"),
    ],
)
def test_flags_refuse_values_outside_the_fields_bounds(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        _parse(*argv)
    assert message in capsys.readouterr().err


def test_help_states_each_range(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse("--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "per-source cap as a fraction of the budget; (0, 1] (default: 0.4)" in text
    assert ("TCP port; 0 picks a free one (the serving log line names it); 0..65535 "
            "(default: 50151)") in text


def test_the_environment_is_read_in_one_place(tmp_path: Path) -> None:
    env = read_environment({ENV_AUTH_TOKEN: "s3cret", ENV_MODEL_DIR: str(tmp_path)})
    assert env.auth_token == "s3cret"
    assert env.model_dir == tmp_path
    assert env.openai() is None
    settings = settings_from_flags(_parse(), env)
    assert settings.transport.auth_token == "s3cret"
    assert settings.model_dir == tmp_path
    assert read_environment({}) == Environment()
    with pytest.raises(ConfigError) as info:
        read_environment({"PLANNER_LLM_BASE_URL": "http://h/v1", "PLANNER_LLM_MODEL": "m",
                          "PLANNER_LLM_TIMEOUT_S": "soon"}).openai()
    assert info.value.field == "PLANNER_LLM_TIMEOUT_S"


def test_workers_need_their_own_metrics_ports() -> None:
    # port 0: the group's parent reserves one ephemeral port for all its workers
    group = ServerSettings(workers=2, transport=TransportSettings(port=0))
    assert group.worker(1).transport.port == 0
    with pytest.raises(ConfigError) as info:
        ServerSettings(workers=3, transport=TransportSettings(port=9001, metrics_port=9000))
    assert info.value.field == "metrics_port"
    shared = ServerSettings(workers=2, transport=TransportSettings(port=9100, metrics_port=9000))
    second = shared.worker(1)
    assert (second.workers, second.transport.reuse_port, second.transport.metrics_port) == (
        1, True, 9001)


def test_research_sessions_take_at_most_half_the_threads() -> None:
    assert ServerSettings(transport=TransportSettings(max_workers=4)).research_sessions == 2
    assert ServerSettings(transport=TransportSettings(max_workers=2)).research_sessions == 1


def test_the_span_text_memory_default_is_the_caches_default() -> None:
    from planner_svc.recall.span_texts import DEFAULT_SPAN_TEXT_BYTES
    from planner_svc.settings import ServerSettings

    assert ServerSettings().span_text_mib << 20 == DEFAULT_SPAN_TEXT_BYTES
