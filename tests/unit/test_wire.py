"""The lenient request deserializer: never raises, and names the field a message breaks."""

from __future__ import annotations

import pytest
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2

from planner_svc.api.planner.v1 import memory_pb2, plan_pb2, research_pb2
from planner_svc.server.wire import Undecodable, lenient_deserializer


def _decode(message_class: type, data: bytes) -> object:
    return lenient_deserializer(message_class.FromString)(data)


def test_valid_messages_decode_as_usual() -> None:
    request = plan_pb2.PlanRequest(question="Who painted the Mona Lisa?", expand_depth=1)
    assert _decode(plan_pb2.PlanRequest, request.SerializeToString()) == request
    assert _decode(plan_pb2.PlanRequest, b"") == plan_pb2.PlanRequest()


@pytest.mark.parametrize(
    ("message_class", "data", "field", "reason"),
    [
        # field 7 (model) holding the byte 0xff
        (plan_pb2.PlanRequest, bytes.fromhex("3a01ff"), "model", "not valid UTF-8 at byte 0"),
        # field 12 (question): valid first byte, then a lone continuation byte
        (plan_pb2.PlanRequest, bytes.fromhex("6203") + b"ab\x80", "question",
         "not valid UTF-8 at byte 2"),
        (plan_pb2.PlanRequest, bytes.fromhex("0a"), "",
         "the 1-byte message is not a valid planner.v1.PlanRequest (truncated, or not "
         "protobuf)"),
        (plan_pb2.PlanRequest, bytes.fromhex("ffffffffffffffffffff01"), "",
         "the 11-byte message is not a valid planner.v1.PlanRequest (truncated, or not "
         "protobuf)"),
        (health_pb2.HealthCheckRequest, bytes.fromhex("0a01ff"), "service",
         "not valid UTF-8 at byte 0"),
        (reflection_pb2.ServerReflectionRequest, bytes.fromhex("0a01ff"), "host",
         "not valid UTF-8 at byte 0"),
    ],
)
def test_undecodable_names_the_field(
    message_class: type, data: bytes, field: str, reason: str
) -> None:
    result = _decode(message_class, data)
    assert isinstance(result, Undecodable)
    assert (result.message_type, result.size, result.field, result.reason) == (
        message_class.DESCRIPTOR.full_name, len(data), field, reason
    )


def test_nested_repeated_and_map_fields_are_named_in_the_proto_spelling() -> None:
    doc = memory_pb2.SourceDocument(source_id="s1", text="hello", properties={"lang": "en"})
    raw = memory_pb2.IngestSourcesRequest(document=doc).SerializeToString()
    text = _decode(memory_pb2.IngestSourcesRequest, raw.replace(b"hello", b"hel\xffo"))
    value = _decode(memory_pb2.IngestSourcesRequest, raw.replace(b"\x02en", b"\x02e\xfe"))
    key = _decode(memory_pb2.IngestSourcesRequest, raw.replace(b"lang", b"l\xc3ng"))
    assert isinstance(text, Undecodable)
    assert isinstance(value, Undecodable)
    assert isinstance(key, Undecodable)
    assert (text.field, text.reason) == ("document.text", "not valid UTF-8 at byte 3")
    assert (value.field, value.reason) == ("document.properties.lang",
                                           "not valid UTF-8 at byte 1")
    assert (key.field, key.reason) == ("document.properties", "a key is not valid UTF-8 at byte 1")
    assert text.text("document.source_id") == "s1"  # salvaged for the ingest summary
    start = research_pb2.ResearchRequest()
    start.start.actors.extend(["web", "abc"])
    actor = _decode(research_pb2.ResearchRequest,
                    start.SerializeToString().replace(b"abc", b"a\xffc"))
    assert isinstance(actor, Undecodable)
    assert (actor.field, actor.reason) == ("start.actors[1]", "not valid UTF-8 at byte 1")


def test_errors_name_the_message_within_a_stream() -> None:
    bad = _decode(plan_pb2.PlanRequest, bytes.fromhex("3a01ff"))
    assert isinstance(bad, Undecodable)
    assert (bad.error().field, bad.error().reason) == ("model", "not valid UTF-8 at byte 0")
    whole = _decode(plan_pb2.PlanRequest, bytes.fromhex("0a"))
    assert isinstance(whole, Undecodable)
    error = whole.error(position=3)
    assert (error.field, error.reason) == (
        "request",
        "the 1-byte message is not a valid planner.v1.PlanRequest (truncated, or not protobuf) "
        "(message 3 of the stream)",
    )


def test_a_deserializer_of_no_message_class_still_never_raises() -> None:
    def strict(data: bytes) -> bytes:
        raise ValueError("no")

    result = lenient_deserializer(strict)(b"abc")
    assert isinstance(result, Undecodable)
    assert (result.message_type, result.field, result.reason) == (
        "", "", "the 3-byte request does not decode"
    )


def test_the_message_the_method_declares_is_named() -> None:
    result = lenient_deserializer(plan_pb2.PlanRequest.FromString, "other.v2.PlanRequest")(b"\x0a")
    assert isinstance(result, Undecodable)
    assert (result.message_type, result.reason) == (
        "other.v2.PlanRequest",
        "the 1-byte message is not a valid other.v2.PlanRequest (truncated, or not protobuf)",
    )
