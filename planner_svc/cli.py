"""``planner-svc``: one command with subcommands.

Each subcommand lives beside the code it drives and registers itself through a
``register(subparsers)`` function; this module only assembles them, so importing it stays cheap
(heavy imports happen inside each subcommand's handler).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Sequence

# module path -> provides register(subparsers) adding one or more subcommands
_SUBCOMMAND_MODULES = (
    "planner_svc.client.select",
    "planner_svc.ingest.cli",
    "planner_svc.demo.cli",
    "planner_svc.server.cli",
    "planner_svc.client.plan",
    "planner_svc.client.health",
    "planner_svc.client.research",
    "planner_svc.client.eval",
)


class _SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser: it rejects the arguments it does not take itself.

    Left alone, argparse hands a subparser's leftovers back to the top-level parser, which
    reports them under ``planner-svc [-h] [--version] COMMAND ...``, a usage line that says
    nothing of the subcommand typed. Failing here prints the subcommand's own usage line instead.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        options = [arg for arg in extras if arg.startswith("-") and arg != "-"]
        if options:
            self.error(f"no such option: {', '.join(options)}{self.suggestion(options[0])} "
                       f"(see '{self.prog} -h')")
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def suggestion(self, option: str) -> str:
        """``"; did you mean --budget?"`` for a long option close to ``option`` (``--budgt``),
        else ``""``."""
        name = option.split("=", 1)[0]
        if not name.startswith("--"):
            return ""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        return f"; did you mean {close[0]}?" if close else ""

    def action_for(self, option: str) -> argparse.Action | None:
        """The action of this subcommand's option named by ``option`` (``--name`` or
        ``--name=value``, or an abbreviation of exactly one long option), or None when it names
        none or abbreviates several (which argparse calls ambiguous)."""
        name = option.split("=", 1)[0]
        if name in self._option_string_actions:
            return self._option_string_actions[name]
        matches = self.completions(option)
        return self._option_string_actions[matches[0]] if len(matches) == 1 else None

    def completions(self, option: str) -> list[str]:
        """The long option strings ``option`` (``--name`` or ``--name=value``) abbreviates, in
        the order they were added, as argparse counts them; ``[]`` for a short option or when
        the parser takes no abbreviations."""
        name = option.split("=", 1)[0]
        if not self.allow_abbrev or not name.startswith("--") or len(name) < 3:
            return []
        return [known for known in self._option_string_actions if known.startswith(name)]


def _is_option(arg: str) -> bool:
    """Whether argparse reads ``arg`` as an option string rather than as an argument: ``-`` (a
    file name for standard input), ``--`` and negative numbers are arguments."""
    if not arg.startswith("-") or arg in ("-", "--"):
        return False
    try:
        float(arg)
    except ValueError:
        return True
    return False


class _CommandParser(argparse.ArgumentParser):
    """The top-level parser: an option or argument typed before the subcommand is reported by
    that subcommand's parser (its usage line), saying where the option goes if the subcommand
    takes it, rather than as an unknown command named after the option's value."""

    commands: dict[str, _SubcommandParser]

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        argv = list(sys.argv[1:] if args is None else args)
        at = next((i for i, arg in enumerate(argv) if arg in self.commands), None)
        if at:
            self._check_before(self.commands[argv[at]], argv[:at], argv[at + 1:])
        return super().parse_known_args(argv, namespace)

    def _check_before(self, command: _SubcommandParser, before: list[str],
                      after: list[str]) -> None:
        """Fail under ``command``'s usage when ``before`` (what was typed ahead of the command's
        name) holds anything but this parser's own options: an option the command does not
        take, then an argument that is no option's value, are named; otherwise the command's
        options are shown moved after it."""
        misplaced: list[str] = []
        unknown: list[str] = []
        ambiguous: list[str] = []  # abbreviations of several of the command's options
        stray: list[str] = []
        values = 0  # arguments still owed to the option before them
        for arg in before:
            if _is_option(arg):
                values = 0
                if arg in self._option_string_actions:
                    continue
                misplaced.append(arg)
                action = command.action_for(arg)
                if action is None:
                    unknown.append(arg)
                    if len(command.completions(arg)) > 1:
                        ambiguous.append(arg)
                elif "=" not in arg and action.nargs != 0:
                    values = action.nargs if isinstance(action.nargs, int) else 1
            elif values:
                values -= 1
            else:
                stray.append(arg)
        if ambiguous:
            arg = ambiguous[0]  # quoted as typed, as argparse does
            command.error(f"ambiguous option: {arg} could match "
                          f"{', '.join(command.completions(arg))}")
        if unknown:
            command.error(f"no such option: {', '.join(unknown)}"
                          f"{command.suggestion(unknown[0])} (see '{command.prog} -h')")
        if stray:
            command.error(f"unrecognized arguments before the command: {' '.join(stray)} "
                          f"(see '{command.prog} -h')")
        if misplaced:
            command.error(f"options go after the command: {command.prog} "
                          f"{' '.join(before)} {' '.join(after)}".rstrip())


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand; a subcommand given an option it does
    not take, or an option before the subcommand's name, fails with that subcommand's usage."""
    parser = _CommandParser(
        prog="planner-svc",
        description="Evidence plans over gRPC: which source spans an answer may cite.",
    )
    from planner_svc import __version__

    parser.add_argument("--version", action="version", version=f"planner-svc {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_SubcommandParser
    )
    for module_name in _SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                continue  # subcommand module not present in this build
            raise
        module.register(subparsers)
    parser.commands = dict(subparsers.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, like other Unix tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
