"""Server reflection (v1 and v1alpha) and health List on a real server, with no proto files.

The clients are grpcio-reflection's own: its v1alpha stub, and the same messages sent to the
v1 service (v1 is v1alpha under another package, identical on the wire). Every method of every
service must resolve by its full name, with the files its input and output types need.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from planner_svc.server.app import SERVICE_NAMES
from tests.integration.conftest import Live

pytestmark = pytest.mark.integration

VERSIONS = ("grpc.reflection.v1", "grpc.reflection.v1alpha")
SERVICES = {
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
    "planner.v1.EvidencePlannerService",
    "planner.v1.MemoryService",
    "planner.v1.ResearchPlannerService",
}
METHODS = {
    "planner.v1.EvidencePlannerService.Plan": ("planner.v1.PlanRequest",
                                               "planner.v1.PlanResponse"),
    "planner.v1.MemoryService.IngestSources": ("planner.v1.IngestSourcesRequest",
                                               "planner.v1.IngestSourcesResponse"),
    "planner.v1.MemoryService.PutNode": ("planner.v1.PutNodeRequest",
                                         "planner.v1.PutNodeResponse"),
    "planner.v1.MemoryService.PutEdge": ("planner.v1.PutEdgeRequest",
                                         "planner.v1.PutEdgeResponse"),
    "planner.v1.ResearchPlannerService.Research": ("planner.v1.ResearchRequest",
                                                   "planner.v1.ResearchResponse"),
    "grpc.health.v1.Health.Check": ("grpc.health.v1.HealthCheckRequest",
                                    "grpc.health.v1.HealthCheckResponse"),
    "grpc.health.v1.Health.Watch": ("grpc.health.v1.HealthCheckRequest",
                                    "grpc.health.v1.HealthCheckResponse"),
    "grpc.health.v1.Health.List": ("grpc.health.v1.HealthListRequest",
                                   "grpc.health.v1.HealthListResponse"),
}


class _Stub:
    """A ServerReflection stub for either version (the messages are the same on the wire)."""

    def __init__(self, channel: grpc.Channel, version: str) -> None:
        self.ServerReflectionInfo = channel.stream_stream(
            f"/{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )


class _Database(ProtoReflectionDescriptorDatabase):  # type: ignore[misc]
    """grpcio-reflection's client database, talking to the given reflection version."""

    def __init__(self, channel: grpc.Channel, version: str) -> None:
        super().__init__(channel)
        self._stub = _Stub(channel, version)


def _ask(
    live: Live, version: str, request: reflection_pb2.ServerReflectionRequest
) -> reflection_pb2.ServerReflectionResponse:
    replies: Iterator[reflection_pb2.ServerReflectionResponse] = _Stub(
        live.channel, version).ServerReflectionInfo(iter([request]), timeout=10)
    [reply] = list(replies)
    return reply


def _files(
    reply: reflection_pb2.ServerReflectionResponse,
) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    files = {}
    for raw in reply.file_descriptor_response.file_descriptor_proto:
        proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
        files[proto.name] = proto
    return files


def _message_types(message: object, seen: set[str]) -> None:
    """Every message and enum type reachable from ``message`` (a Descriptor), by full name."""
    full_name = message.full_name  # type: ignore[attr-defined]
    if full_name in seen:
        return
    seen.add(full_name)
    for field in message.fields:  # type: ignore[attr-defined]
        if field.message_type is not None:
            _message_types(field.message_type, seen)
        if field.enum_type is not None:
            seen.add(field.enum_type.full_name)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_service_is_listed(live: Live, version: str) -> None:
    database = _Database(live.channel, version)
    assert set(database.get_services()) == SERVICES
    assert set(SERVICE_NAMES) < SERVICES


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_resolves_with_its_dependencies(live: Live, version: str,
                                                     method: str) -> None:
    reply = _ask(live, version, reflection_pb2.ServerReflectionRequest(
        file_containing_symbol=method))
    assert reply.WhichOneof("message_response") == "file_descriptor_response", reply
    files = _files(reply)
    # The answer is closed under imports: a fresh pool builds from it alone.
    for proto in files.values():
        assert set(proto.dependency) <= set(files), (proto.name, proto.dependency)
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str) -> None:
        if name not in added:
            for dependency in files[name].dependency:
                add(dependency)
            pool.Add(files[name])
            added.add(name)

    for name in files:
        add(name)
    descriptor = pool.FindMethodByName(method)
    assert (descriptor.input_type.full_name, descriptor.output_type.full_name) == METHODS[method]
    # Through grpcio-reflection's client database too, type by type.
    through_client = descriptor_pool.DescriptorPool(
        descriptor_db=_Database(live.channel, version))
    resolved = through_client.FindMethodByName(method)
    types: set[str] = set()
    _message_types(resolved.input_type, types)
    _message_types(resolved.output_type, types)
    assert METHODS[method][0] in types and METHODS[method][1] in types


def test_the_plan_method_brings_the_whole_plan_contract(live: Live) -> None:
    types: set[str] = set()
    pool = descriptor_pool.DescriptorPool(descriptor_db=_Database(live.channel, VERSIONS[0]))
    method = pool.FindMethodByName("planner.v1.EvidencePlannerService.Plan")
    _message_types(method.input_type, types)
    _message_types(method.output_type, types)
    assert {
        "planner.v1.StructuredRecall", "planner.v1.SemanticRecall", "planner.v1.VectorQuery",
        "planner.v1.EvidencePlan", "planner.v1.PlannedSpan", "planner.v1.SpanRef",
        "planner.v1.SpanClass", "planner.v1.PlanStats", "planner.v1.CandidateExplanation",
        "planner.v1.CandidateFate", "planner.v1.LegScores",
    } <= types
    research = pool.FindMethodByName("planner.v1.ResearchPlannerService.Research")
    assert research.containing_service.file.dependencies[0].name == "planner/v1/plan.proto"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("symbol", "dependency"),
    [
        ("google.rpc.BadRequest", "google/protobuf/duration.proto"),
        ("google.rpc.ErrorInfo", "google/protobuf/duration.proto"),
        ("google.rpc.Status", "google/protobuf/any.proto"),
    ],
)
def test_error_details_resolve_with_the_well_known_types(live: Live, version: str,
                                                         symbol: str, dependency: str) -> None:
    files = _files(_ask(live, version, reflection_pb2.ServerReflectionRequest(
        file_containing_symbol=symbol)))
    assert dependency in files
    owner = "google/rpc/status.proto" if symbol == "google.rpc.Status" else \
        "google/rpc/error_details.proto"
    assert symbol.rsplit(".", 1)[1] in [m.name for m in files[owner].message_type]


@pytest.mark.parametrize("version", VERSIONS)
def test_files_by_name_and_the_reflection_services_themselves(live: Live, version: str) -> None:
    files = _files(_ask(live, version, reflection_pb2.ServerReflectionRequest(
        file_by_filename="planner/v1/research.proto")))
    assert set(files) == {"planner/v1/research.proto", "planner/v1/plan.proto"}
    v1 = _files(_ask(live, version, reflection_pb2.ServerReflectionRequest(
        file_containing_symbol="grpc.reflection.v1.ServerReflection.ServerReflectionInfo")))
    [proto] = v1.values()
    assert (proto.name, proto.package) == ("grpc/reflection/v1/reflection.proto",
                                           "grpc.reflection.v1")
    method = proto.service[0].method[0]
    assert (method.input_type, method.output_type) == (
        ".grpc.reflection.v1.ServerReflectionRequest",
        ".grpc.reflection.v1.ServerReflectionResponse")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("symbol", ["planner.v1.EvidencePlannerService.Nope",
                                    "planner.v1.Nope"])
def test_an_unknown_symbol_is_not_found(live: Live, version: str, symbol: str) -> None:
    reply = _ask(live, version, reflection_pb2.ServerReflectionRequest(
        file_containing_symbol=symbol))
    assert reply.WhichOneof("message_response") == "error_response"
    assert reply.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
    assert reply.original_request.file_containing_symbol == symbol


def test_health_list_reports_every_service(live: Live) -> None:
    reply = health_pb2_grpc.HealthStub(live.channel).List(health_pb2.HealthListRequest(),
                                                          timeout=10)
    assert {name: s.status for name, s in reply.statuses.items()} == {
        name: health_pb2.HealthCheckResponse.SERVING for name in ("", *SERVICE_NAMES)
    }
