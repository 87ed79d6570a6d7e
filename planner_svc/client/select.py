"""``planner-svc select``: Phase B selection over caller-supplied pools, for conformance runs.

Reads one JSON request, or JSON Lines (one request per line), from stdin and writes one
``EvidencePlan`` per request, one per line, in the proto3 JSON mapping. A request is a
``planner.v1.SelectRequest`` in proto3 JSON::

    {"planModel": "v1", "budget": 6000, "maxFracPerSource": 0.4, "dedupOverlap": 0.5,
     "pool": [{"span": {"sourceId": "s1", "sourceVersionTx": "1751500000000000",
               "start": 0, "end": 120}, "kind": "paragraph", "class": "SPAN_CLASS_TRUTH",
               "weight": 0.8, "tokens": 31, "text": "..."}]}

``budget`` is the effective budget B (no budget rule is applied); int64/uint64 fields accept
strings or numbers; absent ratios take the server defaults. On the first invalid request the
command writes one stderr line naming the request (line) and the field, and exits 2; plans of
earlier requests have already been written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from google.protobuf import json_format

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import PLAN_MODEL
from planner_svc.core.plan import build_plan
from planner_svc.server.convert import plan_to_proto, planned_span_from_proto

_TOO_DEEP = "nests arrays or objects too deeply to be a request"
"""The reason given for JSON nested past the decoder's recursion limit."""
_DEFAULTS = SelectionSettings()
_JSON_NAMES = {"max_frac_per_source": "maxFracPerSource", "dedup_overlap": "dedupOverlap"}
"""Core setting names -> their proto3 JSON spelling, for error field paths."""


def plan_for_request(obj: Any, *, explain: bool = False) -> plan_pb2.EvidencePlan:
    """Run selection for one decoded JSON request.

    Raises:
        InvalidRequest: the request does not parse as a SelectRequest or fails validation; the
            field path uses the proto3 JSON names.
    """
    if not isinstance(obj, dict):
        raise InvalidRequest("request", f"must be a JSON object, got {type(obj).__name__}")
    request = plan_pb2.SelectRequest()
    try:
        json_format.ParseDict(obj, request)
    except json_format.ParseError as exc:
        raise InvalidRequest("request", str(exc)) from None
    except RecursionError:
        raise InvalidRequest("request", _TOO_DEEP) from None
    if request.plan_model not in ("", PLAN_MODEL):
        raise InvalidRequest("planModel", f'must be "{PLAN_MODEL}", got {request.plan_model!r}')
    pool = [planned_span_from_proto(c, field=f"pool[{i}]") for i, c in enumerate(request.pool)]
    try:
        plan = build_plan(
            pool,
            requested_budget=request.budget,
            context_window=None,
            estimate_mode=False,
            max_frac_per_source=(
                request.max_frac_per_source
                if request.HasField("max_frac_per_source")
                else _DEFAULTS.max_frac_per_source
            ),
            dedup_overlap=(
                request.dedup_overlap
                if request.HasField("dedup_overlap")
                else _DEFAULTS.dedup_overlap
            ),
            explain=explain,
        )
    except InvalidRequest as exc:
        raise InvalidRequest(_JSON_NAMES.get(exc.field, exc.field), exc.reason) from None
    return plan_to_proto(plan)


def _requests(stream: TextIO) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded JSON) for one JSON document or JSON Lines.

    Raises:
        InvalidRequest: a line (or the document) is not valid JSON, or nests arrays and objects
            deeper than the decoder's recursion allows (a thousand ``[``).
    """
    data = stream.read()
    stripped = data.strip()
    if not stripped:
        return
    try:
        yield 1, json.loads(stripped)
        return
    except (json.JSONDecodeError, RecursionError) as exc:
        if "\n" not in stripped:
            reason = _TOO_DEEP if isinstance(exc, RecursionError) else "is not valid JSON"
            raise InvalidRequest("line 1", reason) from None
    for lineno, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"line {lineno}", f"is not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise InvalidRequest(f"line {lineno}", _TOO_DEEP) from None


def run(stdin: TextIO, stdout: TextIO, stderr: TextIO, *, explain: bool = False) -> int:
    """Process every request on ``stdin``; returns the exit code (0, or 2 on invalid input)."""
    try:
        for lineno, obj in _requests(stdin):
            try:
                plan = plan_for_request(obj, explain=explain)
            except InvalidRequest as exc:
                raise InvalidRequest(f"line {lineno}: {exc.field}", exc.reason) from None
            as_dict = json_format.MessageToDict(plan, always_print_fields_with_no_presence=True)
            stdout.write(json.dumps(as_dict, ensure_ascii=False, separators=(",", ":")) + "\n")
    except InvalidRequest as exc:
        stdout.flush()
        reason = " ".join(exc.reason.split())  # parser messages can span lines
        stderr.write(f"planner-svc select: invalid request: {exc.field}: {reason}\n")
        return 2
    return 0


def _handle(args: argparse.Namespace) -> int:
    return run(sys.stdin, sys.stdout, sys.stderr, explain=args.explain)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``select`` subcommand."""
    parser = subparsers.add_parser(
        "select",
        help="select spans from JSON pools on stdin (conformance entry point)",
        description=(
            "Phase B selection over caller-supplied pools: one JSON request or JSON Lines on "
            "stdin, one EvidencePlan per line (proto3 JSON) on stdout."
        ),
    )
    parser.add_argument(
        "--explain", action="store_true", help="attach every candidate's fate to each plan"
    )
    parser.set_defaults(func=_handle)
