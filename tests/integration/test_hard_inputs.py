"""Hard inputs at the transport: bytes that are not the request message, and huge values.

Every RPC answers a message that does not decode with INVALID_ARGUMENT naming the field, the
request id in the trailers and a log line; an ingest stream keeps every valid document around
an undecodable one; a status never outgrows the client's metadata limit, whatever it echoes.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from planner_svc.api.planner.v1 import memory_pb2, plan_pb2, research_pb2
from planner_svc.server.errors import MAX_MESSAGE_BYTES
from planner_svc.settings import ResearchSettings, ServerSettings, TransportSettings
from tests.integration.conftest import Live, start

pytestmark = pytest.mark.integration

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
TX = 1_790_000_000_000_000  # after the fixture's version time, before now
PLAN = "/planner.v1.EvidencePlannerService/Plan"
INGEST = "/planner.v1.MemoryService/IngestSources"
PUT_NODE = "/planner.v1.MemoryService/PutNode"
PUT_EDGE = "/planner.v1.MemoryService/PutEdge"
RESEARCH = "/planner.v1.ResearchPlannerService/Research"
CHECK = "/grpc.health.v1.Health/Check"
WATCH = "/grpc.health.v1.Health/Watch"
REFLECTION = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"


@pytest.fixture(scope="module")
def server(fixture_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("hard-inputs")
    data = root / "data"
    shutil.copytree(fixture_data_dir, data)
    cassettes = root / "cassettes"
    cassettes.mkdir()
    live = start(ServerSettings(
        data_dir=data,
        transport=TransportSettings(port=0, max_workers=4),
        research=ResearchSettings(cassette_dir=cassettes),
    ))
    yield live
    live.channel.close()
    live.running.stop(0)


def _raw(channel: grpc.Channel, method: str, *, stream_in: bool = False,
         stream_out: bool = False) -> Any:
    make = {
        (False, False): channel.unary_unary,
        (False, True): channel.unary_stream,
        (True, False): channel.stream_unary,
        (True, True): channel.stream_stream,
    }[(stream_in, stream_out)]
    return make(method, request_serializer=None, response_deserializer=None)


def _bad_request(err: grpc.RpcError) -> error_details_pb2.BadRequest:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None
    [packed] = status.details
    bad = error_details_pb2.BadRequest()
    assert packed.Unpack(bad)
    return bad


def _trailer(err: grpc.RpcError, key: str) -> str | None:
    for k, v in err.trailing_metadata() or ():  # type: ignore[attr-defined]
        if k == key:
            return str(v)
    return None


@pytest.mark.parametrize(
    ("method", "data", "field", "message"),
    [
        (PLAN, bytes.fromhex("3a01ff"), "model", "invalid model: not valid UTF-8 at byte 0"),
        (PLAN, bytes.fromhex("0a"), "request",
         "invalid request: the 1-byte message is not a valid planner.v1.PlanRequest "
         "(truncated, or not protobuf)"),
        (PUT_NODE, bytes.fromhex("0a03") + b"\x0a\x01\xff", "node.node_id",
         "invalid node.node_id: not valid UTF-8 at byte 0"),
        (PUT_EDGE, bytes.fromhex("0a05") + b"abc", "request",
         "invalid request: the 5-byte message is not a valid planner.v1.PutEdgeRequest "
         "(truncated, or not protobuf)"),
        (CHECK, bytes.fromhex("0a01ff"), "service", "invalid service: not valid UTF-8 at byte 0"),
    ],
)
def test_undecodable_unary_request_is_invalid_argument_with_request_id_and_log_line(
    server: Live, capsys: pytest.CaptureFixture[str], method: str, data: bytes, field: str,
    message: str,
) -> None:
    rid = f"fuzz-{field}-{len(data)}"
    with pytest.raises(grpc.RpcError) as caught:
        _raw(server.channel, method)(data, timeout=10, metadata=(("x-request-id", rid),))
    err = caught.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert err.details() == message  # type: ignore[attr-defined]
    [violation] = _bad_request(err).field_violations
    assert violation.field == field
    assert _trailer(err, "x-request-id") == rid
    logged = [line for line in capsys.readouterr().err.splitlines() if rid in line]
    assert len(logged) == 1 and "request_rejected" in logged[0]
    assert "INVALID_ARGUMENT" in logged[0]


def test_undecodable_requests_of_server_streams_and_foreign_services(server: Live) -> None:
    with pytest.raises(grpc.RpcError) as watch:
        next(iter(_raw(server.channel, WATCH, stream_out=True)(b"\x0a\x01\xff", timeout=10)))
    assert watch.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    # Both versions are served with the (wire-identical) v1alpha messages; each status names
    # the message its method declares.
    for path, package in ((REFLECTION, "v1"), (REFLECTION.replace(".v1.", ".v1alpha."),
                                                "v1alpha")):
        reflection = _raw(server.channel, path, stream_in=True, stream_out=True)
        with pytest.raises(grpc.RpcError) as refl:
            list(reflection(iter([b"\x0a"]), timeout=10))
        assert refl.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        assert refl.value.details() == (  # type: ignore[attr-defined]
            "invalid request: the 1-byte message is not a valid "
            f"grpc.reflection.{package}.ServerReflectionRequest (truncated, or not protobuf) "
            "(message 1 of the stream)"
        )
    # The server is still serving.
    health = _raw(server.channel, CHECK)(b"", timeout=10)
    assert health == b"\x08\x01"  # SERVING


def _doc(source_id: str, text: str) -> bytes:
    return memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
        source_id=source_id, title=source_id, media_type="text/markdown", text=text,
        version_tx=TX,
    )).SerializeToString()


def test_ingest_stream_commits_valid_documents_around_undecodable_ones(server: Live) -> None:
    valid_a = _doc("notes/axolotl", "# Axolotl\n\nThe axolotl tank is kept at 17 degrees.")
    bad_text = _doc("notes/bad", "# Bad\n\nhello world").replace(b"hello", b"hel\xffo")
    valid_b = _doc("notes/okapi", "# Okapi\n\nThe okapi enclosure opened in 1999.")
    bad_title = memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
        source_id="reports/q3.docx", title="Q3 report", media_type=DOCX, content=b"PK\x03\x04",
    )).SerializeToString().replace(b"Q3 report", b"Q3 rep\xffrt")
    ingest = _raw(server.channel, INGEST, stream_in=True)
    reply = memory_pb2.IngestSourcesResponse.FromString(ingest(
        iter([valid_a, bad_text, b"\x0a", b"\xff\xfe\xfd", valid_b, bad_title]), timeout=60
    ))
    assert (reply.received, reply.ingested, reply.failed) == (6, 2, 4)
    assert [(s.source_id, s.outcome) for s in reply.sources] == [
        ("notes/axolotl", memory_pb2.INGEST_OUTCOME_CREATED),
        ("notes/okapi", memory_pb2.INGEST_OUTCOME_CREATED),
    ]
    assert [(e.source_id, e.reason) for e in reply.errors] == [
        ("notes/bad", "text: not valid UTF-8 at byte 10 (message 2 of the stream)"),
        ("", "document: the 1-byte message is not a valid planner.v1.IngestSourcesRequest "
             "(truncated, or not protobuf) (message 3 of the stream)"),
        ("", "document: the 3-byte message is not a valid planner.v1.IngestSourcesRequest "
             "(truncated, or not protobuf) (message 4 of the stream)"),
        ("reports/q3.docx", "title: not valid UTF-8 at byte 6 (message 6 of the stream)"),
    ]
    # Each counts as failed under the format it declared, or as unknown when nothing was read.
    assert {f.format: (f.read, f.skipped, f.failed, {r.reason: r.documents for r in f.reasons})
            for f in reply.formats} == {
        "Markdown": (2, 0, 1, {"text: not valid UTF-8": 1}),
        "DOCX": (0, 0, 1, {"title: not valid UTF-8": 1}),
        "unknown": (0, 0, 2, {
            "document: the 1-byte message is not a valid planner.v1.IngestSourcesRequest": 1,
            "document: the 3-byte message is not a valid planner.v1.IngestSourcesRequest": 1,
        }),
    }
    # Committed: sending them again changes nothing.
    again = memory_pb2.IngestSourcesResponse.FromString(
        ingest(iter([valid_a, valid_b]), timeout=60)
    )
    assert (again.ingested, again.unchanged) == (0, 2)


def test_undecodable_research_event_ends_the_stream_with_invalid_argument(server: Live) -> None:
    start = research_pb2.ResearchRequest()
    start.start.question = "Who painted the Mona Lisa?"
    start.start.actors.append("web")
    bad = research_pb2.ResearchRequest()
    bad.lead_result.lead_id = "xyz"
    bad.lead_result.claims = 1
    raw = bad.SerializeToString().replace(b"xyz", b"x\xffz")
    research = _raw(server.channel, RESEARCH, stream_in=True, stream_out=True)
    with pytest.raises(grpc.RpcError) as caught:
        list(research(iter([start.SerializeToString(), raw]), timeout=60))
    err = caught.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert err.details() == (  # type: ignore[attr-defined]
        "invalid lead_result.lead_id: not valid UTF-8 at byte 1 (message 2 of the stream)"
    )
    assert _trailer(err, "x-request-id")


def _research_error(server: Live, events: list[research_pb2.ResearchRequest]) -> grpc.RpcError:
    from planner_svc.api.planner.v1 import research_pb2_grpc

    stub = research_pb2_grpc.ResearchPlannerServiceStub(server.channel)
    with pytest.raises(grpc.RpcError) as caught:
        for update in stub.Research(iter(events), timeout=60):
            assert update.WhichOneof("update") != "final"
    return caught.value


def _start(provider: str = "") -> research_pb2.ResearchRequest:
    event = research_pb2.ResearchRequest()
    event.start.question = "Who painted the Mona Lisa?"
    event.start.actors.append("web")
    event.start.provider = provider
    return event


def test_a_20000_character_provider_is_echoed_as_a_prefix_and_its_length(server: Live) -> None:
    err = _research_error(server, [_start("p" * 20_000)])
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert err.details() == (  # type: ignore[attr-defined]
        "invalid start.provider: '" + "p" * 40 + "'… (20000 characters); expected '', "
        "'offline', 'openai', 'cassette:NAME' or 'record:NAME'"
    )


def test_a_10000_character_lead_id_is_echoed_as_a_prefix_and_its_length(server: Live) -> None:
    lead = research_pb2.ResearchRequest()
    lead.lead_result.lead_id = "L" * 10_000
    lead.lead_result.claims = 1
    err = _research_error(server, [_start(), lead])
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert err.details() == (  # type: ignore[attr-defined]
        "invalid lead_result.lead_id: '" + "L" * 40 + "'… (10000 characters) is not an "
        "outstanding lead of this session (unknown, or already reported)"
    )


def test_a_missing_cassette_names_no_server_path(server: Live) -> None:
    err = _research_error(server, [_start("cassette:absent")])
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    assert err.details() == (  # type: ignore[attr-defined]
        "cassette 'absent' does not exist in the server's cassette directory (nothing to replay)"
    )


HUGE = "一" * 100_000  # 300,000 UTF-8 bytes; percent-encoded in grpc-message it would be 900 KB


def _string_paths(descriptor: Any, prefix: str = "", depth: int = 0) -> list[str]:
    """Dotted paths of every singular or repeated string field (maps: their value), two
    message levels deep."""
    paths: list[str] = []
    for field in descriptor.fields:
        path = f"{prefix}{field.name}"
        if field.type == FieldDescriptor.TYPE_STRING:
            paths.append(path)
        elif field.message_type is not None and depth < 2:
            if field.message_type.GetOptions().map_entry:
                paths.append(f"{path}{{}}")
            else:
                paths.extend(_string_paths(field.message_type, f"{path}.", depth + 1))
    return paths


def _with_huge(message: Message, path: str) -> Message:
    node: Any = message
    names = path.split(".")
    for name in names[:-1]:
        field = node.DESCRIPTOR.fields_by_name[name]
        node = getattr(node, name).add() if field.is_repeated else getattr(node, name)
    last = names[-1]
    if last.endswith("{}"):
        getattr(node, last[:-2])["key"] = HUGE
        getattr(node, last[:-2])[HUGE] = "value"
    elif node.DESCRIPTOR.fields_by_name[last].is_repeated:
        getattr(node, last).append(HUGE)
    else:
        setattr(node, last, HUGE)
    return message


def _cases() -> list[tuple[str, str]]:
    cases = [(PLAN, p) for p in _string_paths(plan_pb2.PlanRequest.DESCRIPTOR)]
    cases += [(PUT_NODE, p) for p in _string_paths(memory_pb2.PutNodeRequest.DESCRIPTOR)]
    cases += [(PUT_EDGE, p) for p in _string_paths(memory_pb2.PutEdgeRequest.DESCRIPTOR)]
    cases += [(RESEARCH, p) for p in _string_paths(research_pb2.ResearchRequest.DESCRIPTOR)]
    return cases


@pytest.mark.parametrize(("method", "path"), _cases())
def test_every_string_field_holding_300_kb_gets_a_status_that_fits(
    server: Live, method: str, path: str
) -> None:
    """Whatever string field holds 100,000 three-byte characters, the call ends with a status
    whose message stays within its bound: never the client's metadata overflow
    (RESOURCE_EXHAUSTED), INTERNAL or UNKNOWN."""
    if method == RESEARCH:
        event = _with_huge(research_pb2.ResearchRequest(), path)
        events = [event] if path.startswith("start.") else [_start(), event]
        call = _raw(server.channel, RESEARCH, stream_in=True, stream_out=True)
        try:
            list(call(iter([e.SerializeToString() for e in events]), timeout=60))
            return
        except grpc.RpcError as err:
            caught = err
    else:
        request_class = {PLAN: plan_pb2.PlanRequest, PUT_NODE: memory_pb2.PutNodeRequest,
                         PUT_EDGE: memory_pb2.PutEdgeRequest}[method]
        request = _with_huge(request_class(), path)
        if method == PLAN and not path.startswith("question"):
            request.question = "Who painted the Mona Lisa?"  # type: ignore[attr-defined]
        try:
            _raw(server.channel, method)(request.SerializeToString(), timeout=60)
            return
        except grpc.RpcError as err:
            caught = err
    code = caught.code()  # type: ignore[attr-defined]
    assert code in {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION}, (
        code, caught.details()  # type: ignore[attr-defined]
    )
    assert len((caught.details() or "").encode()) <= MAX_MESSAGE_BYTES  # type: ignore[attr-defined]
