"""``planner-svc serve``: run the gRPC server; its flags come from the settings tree
(:data:`planner_svc.settings.SERVE_FLAGS`)."""

from __future__ import annotations

import argparse
import sys

from planner_svc.cliargs import DefaultsHelpFormatter

__all__ = ["register"]

_FMT = DefaultsHelpFormatter


def _serve(args: argparse.Namespace) -> int:
    from planner_svc.core.errors import ConfigError, StoreUnavailable
    from planner_svc.server.app import serve_workers
    from planner_svc.server.observe import configure_logging
    from planner_svc.settings import read_environment, settings_from_flags

    configure_logging(json_logs=not args.pretty_logs, level=args.log_level)
    try:
        settings = settings_from_flags(args, read_environment())
        return serve_workers(settings, log_json=not args.pretty_logs, log_level=args.log_level)
    except ConfigError as exc:  # a flag, the model registry or the data directory
        print(f"planner-svc serve: invalid setting {exc.field}: {exc.reason}", file=sys.stderr)
        return 2
    except StoreUnavailable as exc:  # the shared store's server cannot be reached
        print(f"planner-svc serve: {exc}", file=sys.stderr)
        return 1
    except RuntimeError as exc:  # the address could not be bound
        print(f"planner-svc serve: {exc}", file=sys.stderr)
        return 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` subcommand."""
    from planner_svc.settings import add_serve_flags

    serve = subparsers.add_parser("serve", help="run the gRPC server over a data directory",
                                  formatter_class=_FMT)
    add_serve_flags(serve)
    serve.add_argument("--log-level", default="info",
                       choices=["debug", "info", "warning", "error"],
                       help="log events of this level and above")
    serve.add_argument("--pretty-logs", action="store_true",
                       help="console logs instead of JSON lines")
    serve.set_defaults(func=_serve)
