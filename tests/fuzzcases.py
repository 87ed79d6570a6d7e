"""Malformed and randomized calls to every RPC of a running server, as hypothesis strategies.

Shared by the fuzz test (``tests/integration/test_fuzz_rpcs.py``, bounded for CI) and
``bench/fuzz.py`` (at least 10,000 calls per RPC, printing the status counts).

Every request is sent as bytes, so a call can carry what no stub would send:

- random bytes;
- a random message of the right type (every field type, nested messages, repeated fields, maps,
  unknown enum values, NaN and infinities, empty and long strings), or a plausible request;
- that message truncated, with one byte replaced, or with invalid UTF-8 where a string field's
  text was (the marker :data:`MARK` in a generated string is replaced by invalid bytes).

Streams mix such messages: an ``IngestSources`` stream carries documents known to be valid
(source ids ``fuzz/<n>``) among the rest, and :func:`perform` reports whether every one of
them was committed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2
from hypothesis import strategies as st

from planner_svc.api.planner.v1 import memory_pb2, plan_pb2, research_pb2

MARK = "ZQXJ"
"""Text a generated string may hold; in a mutated message its bytes become invalid UTF-8."""
BAD_UTF8 = b"\xff\xc3(\x80"
"""Four bytes that are not UTF-8 (same length as :data:`MARK`, so lengths stay valid)."""
FAILURES = frozenset({"INTERNAL", "UNKNOWN", "UNAVAILABLE", "DATA_LOSS"})
"""Statuses no call may end with: a crash, an unmapped error, or a server gone."""
SESSION_ID = "fz"
"""Session id of the plausible research starts: their leads are ``fz-L<n>``, which the
plausible lead results name."""
WORDS = ("painted", "Mona", "Lisa", "port", "cargo", "busiest", "Cash", "Johnny", "river",
         "war", "Cold", "capital", "France", "who", "what", "when", "1969", "écrit", "日本")


@dataclass(frozen=True, slots=True)
class Rpc:
    """One RPC: its path, its shape, and its request message."""

    name: str
    path: str
    request: type[Message]
    stream_in: bool = False
    stream_out: bool = False


RPCS: tuple[Rpc, ...] = (
    Rpc("Plan", "/planner.v1.EvidencePlannerService/Plan", plan_pb2.PlanRequest),
    Rpc("IngestSources", "/planner.v1.MemoryService/IngestSources",
        memory_pb2.IngestSourcesRequest, stream_in=True),
    Rpc("PutNode", "/planner.v1.MemoryService/PutNode", memory_pb2.PutNodeRequest),
    Rpc("PutEdge", "/planner.v1.MemoryService/PutEdge", memory_pb2.PutEdgeRequest),
    Rpc("Research", "/planner.v1.ResearchPlannerService/Research",
        research_pb2.ResearchRequest, stream_in=True, stream_out=True),
    Rpc("Health.Check", "/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest),
    Rpc("Health.List", "/grpc.health.v1.Health/List", health_pb2.HealthListRequest),
    Rpc("Health.Watch", "/grpc.health.v1.Health/Watch", health_pb2.HealthCheckRequest,
        stream_out=True),
    Rpc("Reflection", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        reflection_pb2.ServerReflectionRequest, stream_in=True, stream_out=True),
    Rpc("Reflection.v1alpha", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        reflection_pb2.ServerReflectionRequest, stream_in=True, stream_out=True),
)
"""Every RPC the server serves (the planner's, health's three and reflection's two versions;
v1 reflection requests are v1alpha's messages under another package, the same wire format)."""

# --------------------------------------------------------------------------- values

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=24),
        st.just(MARK),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
        st.text(alphabet="ab 一😀", min_size=200, max_size=3000),
    )


def _integer(low: int, high: int) -> st.SearchStrategy[int]:
    small = st.integers(max(low, -3), min(high, 3000))
    edges = st.sampled_from(sorted({low, high, max(low, 0), min(high, 1_800_000_000_000_000)}))
    return st.one_of(small, edges, st.integers(low, high))


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind in _INT_RANGES:
        return _integer(*_INT_RANGES[kind])
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        width = 32 if kind == FieldDescriptor.TYPE_FLOAT else 64
        return st.one_of(st.floats(0, 1, width=width), st.floats(width=width))
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.TYPE_STRING:
        return _text()
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if kind == FieldDescriptor.TYPE_ENUM:
        top = max(v.number for v in field.enum_type.values)
        return st.integers(-1, top + 2)
    raise ValueError(f"no strategy for field type {kind}")


def _field_value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        key = _scalar(message.fields_by_name["key"])
        value_field = message.fields_by_name["value"]
        value = (_message_dict(value_field.message_type, depth + 1)
                 if value_field.message_type is not None else _scalar(value_field))
        return st.dictionaries(key, value, max_size=4)
    single = _message_dict(message, depth + 1) if message is not None else _scalar(field)
    return st.lists(single, max_size=4) if field.is_repeated else single


def _message_dict(descriptor: Descriptor, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    if depth > 3:
        return st.just({})
    optional = {f.name: _field_value(f, depth) for f in descriptor.fields}
    return st.fixed_dictionaries({}, optional=optional)


def _fill(message: Message, values: dict[str, Any]) -> None:
    for name, value in values.items():
        field = message.DESCRIPTOR.fields_by_name[name]
        target = getattr(message, name)
        try:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                value_field = field.message_type.fields_by_name["value"]
                for k, v in value.items():
                    if value_field.message_type is not None:
                        _fill(target[k], v)
                    else:
                        target[k] = v
            elif field.is_repeated:
                if field.message_type is not None:
                    for item in value:
                        _fill(target.add(), item)
                else:
                    target.extend(value)
            elif field.message_type is not None:
                target.SetInParent()
                _fill(target, value)
            else:
                setattr(message, name, value)
        except (ValueError, TypeError):  # a value this field refuses (e.g. a closed enum)
            continue


def messages(message_class: type[Message]) -> st.SearchStrategy[Message]:
    """Random messages of ``message_class`` (every field type, up to four levels deep)."""

    def build(values: dict[str, Any]) -> Message:
        message = message_class()
        _fill(message, values)
        return message

    return _message_dict(message_class.DESCRIPTOR, 0).map(build)


# --------------------------------------------------------------------------- plausible requests

_SOURCE_IDS = itertools.count(1)


def _question() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


def _plausible_plan() -> st.SearchStrategy[Message]:
    return st.builds(
        lambda q, budget, depth, explain, k: plan_pb2.PlanRequest(
            question=q, budget_tokens=budget, expand_depth=depth, explain=explain,
            semantic=plan_pb2.SemanticRecall(k=k) if k else None,
        ),
        _question(), st.integers(1, 20_000), st.integers(0, 3), st.booleans(),
        st.integers(0, 1001),
    )


def _plausible_start() -> st.SearchStrategy[Message]:
    def build(q: str, actors: list[str], budget: int, depth: int) -> Message:
        event = research_pb2.ResearchRequest()
        event.start.question = q
        event.start.actors.extend(actors)
        event.start.budget_tokens = budget
        event.start.caps.max_depth = depth
        event.start.session_id = SESSION_ID
        return event

    actors = st.one_of(st.just(["web"]), st.just(["web", "academic"]),
                       st.lists(st.sampled_from(["web", "academic", "Web", "x" * 40]),
                                min_size=0, max_size=3))
    return st.builds(build, _question(), actors, st.integers(1, 5000), st.integers(-1, 3))


def _plausible_event() -> st.SearchStrategy[Message]:
    def build(lead: int, claims: int, cause: str) -> Message:
        event = research_pb2.ResearchRequest()
        event.lead_result.lead_id = f"{SESSION_ID}-L{lead}"
        if cause:
            event.lead_result.dead_end.cause = cause
        else:
            event.lead_result.claims = claims
        return event

    return st.builds(build, st.integers(0, 8), st.integers(0, 3),
                     st.sampled_from(["", "", "no_evidence", " "]))


def _plausible_node() -> st.SearchStrategy[Message]:
    def build(node_id: str, text: str, sid: str, start: int, end: int) -> Message:
        node = memory_pb2.NodeWrite(node_id=node_id, text=text)
        node.provenance.add(source_id=sid, source_version_tx=1_800_000_000_000_000,
                            start=start, end=end)
        return memory_pb2.PutNodeRequest(node=node)

    return st.builds(build, st.sampled_from(["n1", "fuzz-node", ""]), _question(),
                     st.sampled_from(["Johnny Cash", "fuzz/1", ""]), st.integers(0, 50),
                     st.integers(0, 60))


PLAUSIBLE: dict[str, Callable[[], st.SearchStrategy[Message]]] = {
    "Plan": _plausible_plan,
    "PutNode": _plausible_node,
    "Research": _plausible_start,
}
"""Requests near the valid ones, per RPC (the rest get random messages only)."""


def valid_document() -> tuple[str, bytes]:
    """A document every ingest accepts: ``(source_id, serialized request)``."""
    sid = f"fuzz/{next(_SOURCE_IDS)}"
    text = f"# Fuzz {sid}\n\nThe fuzzed corpus holds {sid}, written while fuzzing."
    request = memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
        source_id=sid, title=sid, media_type="text/markdown", text=text))
    return sid, request.SerializeToString()


# --------------------------------------------------------------------------- wire bytes


def _mutate(data: bytes, how: str, at: int, byte: int) -> bytes:
    if how == "utf8" and MARK.encode() in data:
        return data.replace(MARK.encode(), BAD_UTF8, 1)
    if not data:
        return bytes([byte])
    i = at % len(data)
    if how == "truncate":
        return data[:i]
    return data[:i] + bytes([byte]) + data[i + 1:]


def wire(rpc: Rpc) -> st.SearchStrategy[bytes]:
    """Bytes for one request message of ``rpc`` (see the module docstring)."""
    candidates = [messages(rpc.request)]
    if rpc.name in PLAUSIBLE:
        candidates.append(PLAUSIBLE[rpc.name]())
    if rpc.name == "Research":
        candidates.append(_plausible_event())
    serialized = st.one_of(*candidates).map(lambda m: m.SerializeToString())
    mutated = st.builds(_mutate, serialized, st.sampled_from(["utf8", "truncate", "replace"]),
                        st.integers(0, 10_000), st.integers(0, 255))
    return st.one_of(serialized, mutated, st.binary(max_size=128))


@dataclass(frozen=True, slots=True)
class Payload:
    """What one call sends: its request messages as bytes, and the source ids of the valid
    documents among them (``IngestSources``)."""

    requests: tuple[bytes, ...]
    valid_sources: tuple[str, ...] = ()


def payloads(rpc: Rpc) -> st.SearchStrategy[Payload]:
    """One call's payload for ``rpc``."""
    if not rpc.stream_in:
        return wire(rpc).map(lambda b: Payload((b,)))
    if rpc.name == "IngestSources":
        item = st.one_of(wire(rpc).map(lambda b: ("", b)),
                         st.builds(valid_document))
        return st.lists(item, min_size=1, max_size=6).map(
            lambda items: Payload(tuple(b for _, b in items),
                                  tuple(sid for sid, _ in items if sid))
        )
    if rpc.name == "Research":
        first = st.one_of(_plausible_start().map(lambda m: m.SerializeToString()), wire(rpc))
        event = st.one_of(_plausible_event().map(lambda m: m.SerializeToString()), wire(rpc))
        return st.builds(lambda head, tail: Payload((head, *tail)), first,
                         st.lists(event, max_size=6))
    return st.lists(wire(rpc), min_size=1, max_size=3).map(lambda items: Payload(tuple(items)))


# --------------------------------------------------------------------------- calling


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one call ended: the status name, and for an ingest stream whether every valid
    document it carried was committed (None for other RPCs)."""

    code: str
    details: str
    committed: bool | None = None


def perform(channel: grpc.Channel, rpc: Rpc, payload: Payload, *,
            timeout_s: float = 30.0) -> Outcome:
    """Send ``payload`` to ``rpc`` over ``channel``; the outcome (never raises for a status)."""
    kind = {(False, False): channel.unary_unary, (False, True): channel.unary_stream,
            (True, False): channel.stream_unary, (True, True): channel.stream_stream}
    call = kind[(rpc.stream_in, rpc.stream_out)](
        rpc.path, request_serializer=None, response_deserializer=None)
    try:
        if rpc.name == "Health.Watch":
            responses = call(payload.requests[0], timeout=timeout_s)
            try:
                next(responses)  # the first status; the stream then waits for changes
            finally:
                responses.cancel()
            return Outcome("OK", "")
        if rpc.stream_in and rpc.stream_out:
            for _ in call(_iterate(payload.requests), timeout=timeout_s):
                pass
            return Outcome("OK", "")
        if rpc.stream_in:
            reply = memory_pb2.IngestSourcesResponse.FromString(
                call(_iterate(payload.requests), timeout=timeout_s))
            committed = {s.source_id for s in reply.sources}
            return Outcome("OK", "", committed=set(payload.valid_sources) <= committed
                           and reply.received == len(payload.requests))
        call(payload.requests[0], timeout=timeout_s)
        return Outcome("OK", "")
    except grpc.RpcError as err:
        code = err.code()  # type: ignore[attr-defined]
        return Outcome(code.name, err.details() or "",  # type: ignore[attr-defined]
                       committed=False if rpc.name == "IngestSources" else None)


def _iterate(requests: tuple[bytes, ...]) -> Iterator[bytes]:
    yield from requests
