"""``planner-svc serve`` (run the gRPC server) and ``planner-svc plan`` (its client)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from planner_svc.cliargs import (
    DEFAULT_ADDRESS,
    address,
    auth_metadata,
    int_range,
    non_empty,
    unavailable_hint,
)

_FMT = argparse.ArgumentDefaultsHelpFormatter


def _serve(args: argparse.Namespace) -> int:
    from planner_svc.core.config import PlannerConfig
    from planner_svc.core.errors import ConfigError
    from planner_svc.server.app import serve_workers
    from planner_svc.server.observe import configure_logging
    from planner_svc.server.settings import ServerSettings

    configure_logging(json_logs=not args.pretty_logs, level=args.log_level)
    try:
        settings = ServerSettings(
            data_dir=Path(args.data),
            host=args.host,
            port=args.port,
            max_workers=args.threads,
            grace_s=args.grace,
            drain_s=args.drain,
            metrics_port=args.metrics_port,
            auth_token=os.environ.get("PLANNER_SVC_AUTH_TOKEN") or None,
            tls_cert=Path(args.tls_cert) if args.tls_cert else None,
            tls_key=Path(args.tls_key) if args.tls_key else None,
            cassette_dir=Path(args.cassettes) if args.cassettes else None,
            models_path=Path(args.models) if args.models else None,
            planner=PlannerConfig(
                max_frac_per_source=args.max_frac_per_source,
                dedup_overlap=args.dedup_overlap,
                default_budget_tokens=args.default_budget,
            ),
        )
        return serve_workers(settings, args.workers, log_json=not args.pretty_logs,
                             log_level=args.log_level)
    except ConfigError as exc:  # a flag, the model registry or the data directory
        print(f"planner-svc serve: invalid setting {exc.field}: {exc.reason}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # the address could not be bound
        print(f"planner-svc serve: {exc}", file=sys.stderr)
        return 1


def _plan(args: argparse.Namespace) -> int:
    import grpc
    from google.protobuf import json_format

    from planner_svc.api.planner.v1 import plan_pb2_grpc
    from planner_svc.server.client import question_request, render_explanations, render_plan

    request = question_request(
        args.question,
        budget_tokens=args.budget,
        expand_depth=args.expand_depth,
        k=args.k,
        model=args.model,
        at_valid_us=args.at_valid,
        at_tx_us=args.at_tx,
        allow_ungrounded=args.allow_ungrounded,
        explain=args.explain,
    )
    metadata = auth_metadata()
    with grpc.insecure_channel(args.address) as channel:
        stub = plan_pb2_grpc.EvidencePlannerStub(channel)
        try:
            plan = stub.Plan(request, timeout=args.timeout, metadata=metadata)
        except grpc.RpcError as err:
            code = err.code()  # type: ignore[attr-defined]
            print(f"planner-svc plan: {code.name}: {err.details()}"  # type: ignore[attr-defined]
                  f"{unavailable_hint(code.name, args.address)}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(json_format.MessageToDict(plan), ensure_ascii=False, indent=2))
        return 0
    print(render_plan(plan))
    if args.explain:
        print()
        print(render_explanations(plan))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` and ``plan`` subcommands."""
    serve = subparsers.add_parser("serve", help="run the gRPC server over a data directory",
                                  formatter_class=_FMT)
    serve.add_argument("--data", default="data/demo", help="data directory (store + index)")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    serve.add_argument("--port", type=int_range(0, 65535), default=50151,
                       help="TCP port; 0 picks a free one")
    serve.add_argument("--threads", type=int_range(2, 256), default=8,
                       help="gRPC handler threads per worker")
    serve.add_argument("--workers", type=int_range(1, 64), default=1,
                       help="worker processes sharing the port (SO_REUSEPORT); 1 = this process")
    serve.add_argument("--grace", type=float, default=5.0,
                       help="shutdown: seconds in-flight calls get to finish")
    serve.add_argument("--drain", type=float, default=0.0,
                       help="shutdown: seconds health reports NOT_SERVING before new calls are "
                            "refused")
    serve.add_argument("--metrics-port", type=int_range(1, 65535), default=None,
                       help="serve Prometheus /metrics on this port")
    serve.add_argument("--tls-cert", default=None, help="PEM certificate chain (enables TLS)")
    serve.add_argument("--tls-key", default=None, help="PEM private key")
    serve.add_argument("--models", default=None,
                       help="model registry JSON (context windows, tokenizers); "
                            "default: the packaged planner_svc/data/models.json")
    serve.add_argument("--max-frac-per-source", type=float, default=0.4,
                       help="per-source cap as a fraction of the budget, (0, 1]")
    serve.add_argument("--dedup-overlap", type=float, default=0.5,
                       help="overlap ratio above which spans are duplicates, [0, 1]")
    serve.add_argument("--default-budget", type=int_range(1, 10_000_000), default=6000,
                       help="budget in tokens when a request names none")
    serve.add_argument("--cassettes", default=None,
                       help="directory for research-provider cassettes (record/replay)")
    serve.add_argument("--log-level", default="info")
    serve.add_argument("--pretty-logs", action="store_true", help="console logs instead of JSON")
    serve.set_defaults(func=_serve)

    plan = subparsers.add_parser("plan", help="ask a running server for an evidence plan",
                                 formatter_class=_FMT)
    plan.add_argument("question", type=non_empty,
                      help="the question; both recall legs use its text")
    plan.add_argument("--address", type=address, default=DEFAULT_ADDRESS,
                      help="server HOST:PORT")
    plan.add_argument("--budget", type=int_range(1, 10_000_000), default=None,
                      help="budget in tokens (default: the server's, 6000 unless configured)")
    plan.add_argument("--expand-depth", type=int_range(0, 2), default=1,
                      help="hop expansion depth")
    plan.add_argument("--k", type=int_range(0, 1000), default=0,
                      help="semantic neighbours (0 = server default)")
    plan.add_argument("--model", default="", help="model for exact token accounting")
    plan.add_argument("--at-valid", type=int_range(-(2**63), 2**63 - 1), default=None,
                      help="as-of valid time, µs since the epoch")
    plan.add_argument("--at-tx", type=int_range(-(2**63), 2**63 - 1), default=None,
                      help="as-of transaction time, µs since the epoch")
    plan.add_argument("--allow-ungrounded", action="store_true",
                      help="empty plan instead of an error when nothing is found")
    plan.add_argument("--explain", action="store_true", help="show every candidate's fate")
    plan.add_argument("--json", action="store_true", help="print the plan as proto3 JSON")
    plan.add_argument("--timeout", type=float, default=30.0, help="deadline, seconds")
    plan.set_defaults(func=_plan)
