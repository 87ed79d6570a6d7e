"""``planner-svc`` argument errors: a subcommand's bad or misplaced option is reported under that
subcommand's usage line, exit code 2, before anything runs."""

from __future__ import annotations

import pytest

from planner_svc.cli import build_parser, main

# each subcommand with the positional arguments it needs, so only the option is wrong
VALID = {
    "select": [],
    "ingest": ["corpus.jsonl"],
    "fetch-corpus": [],
    "serve": [],
    "plan": ["Who painted the Mona Lisa?"],
    "health": [],
    "research": ["Who painted the Mona Lisa?"],
    "eval": ["questions.jsonl", "--budget", "500"],
}


def _fail(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err.splitlines()


def test_every_subcommand_is_covered() -> None:
    assert sorted(build_parser().commands) == sorted(VALID)


@pytest.mark.parametrize("command", sorted(VALID))
def test_an_option_a_subcommand_does_not_take_shows_its_usage(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _fail([command, *VALID[command], "--no-such-option", "1"], capsys)
    assert lines[0].startswith(f"usage: planner-svc {command} [-h]")
    assert lines[-1] == (f"planner-svc {command}: error: no such option: --no-such-option "
                         f"(see 'planner-svc {command} -h')")


def test_a_server_option_given_to_plan_names_plan(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _fail(["plan", "--data", "data/demo", "Who painted the Mona Lisa?"], capsys)
    assert lines[0].startswith("usage: planner-svc plan [-h] [--address ADDRESS]")
    assert lines[-1] == ("planner-svc plan: error: no such option: --data "
                         "(see 'planner-svc plan -h')")


def test_a_stray_positional_argument_shows_the_subcommands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = _fail(["plan", "Who painted the Mona Lisa?", "extra"], capsys)
    assert lines[0].startswith("usage: planner-svc plan [-h]")
    assert lines[-1] == "planner-svc plan: error: unrecognized arguments: extra"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget", "500", "plan", "q"],
         "planner-svc plan: error: options go after the command: planner-svc plan --budget 500 q"),
        (["--budget=500", "--explain", "plan", "q"],
         "planner-svc plan: error: options go after the command: "
         "planner-svc plan --budget=500 --explain q"),
        (["--data", "d", "serve"],
         "planner-svc serve: error: options go after the command: planner-svc serve --data d"),
        (["--data", "d", "plan", "q"],
         "planner-svc plan: error: no such option: --data (see 'planner-svc plan -h')"),
        (["-", "plan", "q"],
         "planner-svc plan: error: unrecognized arguments before the command: - "
         "(see 'planner-svc plan -h')"),
        (["--", "plan", "q"],
         "planner-svc plan: error: unrecognized arguments before the command: -- "
         "(see 'planner-svc plan -h')"),
        (["-5", "serve"],
         "planner-svc serve: error: unrecognized arguments before the command: -5 "
         "(see 'planner-svc serve -h')"),
        (["--explain", "extra", "plan", "q"],
         "planner-svc plan: error: unrecognized arguments before the command: extra "
         "(see 'planner-svc plan -h')"),
        (["--budget", "500", "-", "plan", "q"],
         "planner-svc plan: error: unrecognized arguments before the command: - "
         "(see 'planner-svc plan -h')"),
        (["--bud", "500", "plan", "q"],
         "planner-svc plan: error: options go after the command: planner-svc plan --bud 500 q"),
        (["--ex", "plan", "q"],
         "planner-svc plan: error: ambiguous option: --ex could match --expand-depth, "
         "--explain, --explain-spans"),
        (["--at=5", "plan", "q"],
         "planner-svc plan: error: ambiguous option: --at=5 could match --at-valid, --at-tx"),
    ],
)
def test_an_option_before_the_subcommand_shows_the_subcommands_usage(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _fail(argv, capsys)
    command = next(arg for arg in argv if arg in VALID)
    assert lines[0].startswith(f"usage: planner-svc {command} [-h]")
    assert lines[-1] == message


def test_top_level_options_still_work(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("planner-svc ")
    lines = _fail(["no-such-command"], capsys)
    assert lines[0] == "usage: planner-svc [-h] [--version] COMMAND ..."
    assert "invalid choice: 'no-such-command'" in lines[-1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "q", "--budgt", "400"],
         "planner-svc plan: error: no such option: --budgt; did you mean --budget? "
         "(see 'planner-svc plan -h')"),
        (["--budgt", "400", "plan", "q"],
         "planner-svc plan: error: no such option: --budgt; did you mean --budget? "
         "(see 'planner-svc plan -h')"),
        (["plan", "q", "--explian"],
         "planner-svc plan: error: no such option: --explian; did you mean --explain? "
         "(see 'planner-svc plan -h')"),
        (["plan", "q", "--zzz"],
         "planner-svc plan: error: no such option: --zzz (see 'planner-svc plan -h')"),
        (["plan", "q", "--timeout", "0"],
         "planner-svc plan: error: argument --timeout: 0.0 is outside (0, 3600]"),
        (["research", "q", "--timeout", "-5"],
         "planner-svc research: error: argument --timeout: -5.0 is outside (0, 3600]"),
    ],
)
def test_a_mistyped_option_gets_a_suggestion_and_a_zero_deadline_is_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _fail(argv, capsys)[-1] == message


@pytest.mark.parametrize(("status", "code"), [
    ("UNAVAILABLE", 3), ("DEADLINE_EXCEEDED", 3), ("INVALID_ARGUMENT", 1),
    ("RESOURCE_EXHAUSTED", 1), ("FAILED_PRECONDITION", 1), ("UNAUTHENTICATED", 1),
])
def test_a_failed_call_exits_3_only_when_the_service_is_unavailable(
    status: str, code: int
) -> None:
    from planner_svc.client.connection import failure_exit

    assert failure_exit(status) == code


def test_serve_help_states_each_default_once_and_the_log_levels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: None)" not in text  # an option that is off unless given
    assert "default: the SQLite store in --data (default" not in text  # said once
    assert "bind address; default: 127.0.0.1 (loopback only)" in text
    assert "--log-level {debug,info,warning,error}" in text
    assert "log events of this level and above (default: info)" in text


def test_an_unknown_log_level_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--log-level", "verbose"])
    assert exited.value.code == 2
    assert "invalid choice: 'verbose'" in capsys.readouterr().err


def test_plan_help_shows_real_defaults_and_no_switch_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["plan", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: False)" not in text  # --explain, --json, --allow-ungrounded: switches
    assert "semantic neighbours (0 = server default) (default: 0)" in text  # no "default:"
    assert "(default: the server's" in text and "(default: 30.0)" in text
