"""``planner-svc``: one command with subcommands.

Each subcommand lives beside the code it drives and registers itself through a
``register(subparsers)`` function; this module only assembles them, so importing it stays cheap
(heavy imports happen inside each subcommand's handler).
"""

from __future__ import annotations

import argparse
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
    "planner_svc.client.research",
    "planner_svc.client.eval",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="planner-svc",
        description="Evidence plans over gRPC: which source spans an answer may cite.",
    )
    from planner_svc import __version__

    parser.add_argument("--version", action="version", version=f"planner-svc {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                continue  # subcommand module not present in this build
            raise
        module.register(subparsers)
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
