"""Server reflection, v1 and v1alpha, resolving every symbol a client asks for.

grpcio-reflection serves only ``grpc.reflection.v1alpha.ServerReflection``, and its lookup goes
through ``DescriptorPool.FindFileContainingSymbol``, which knows messages, enums, enum values,
fields and services but not methods: ``grpcurl describe planner.v1.EvidencePlannerService.Plan``
and ghz's ``--call`` without proto files then fail with "Symbol not found". Here:

- a method's full name resolves to the file of its service (every other symbol as before);
- ``grpc.reflection.v1.ServerReflection`` is served too. v1 is v1alpha under another package:
  the same messages with the same field numbers, so one servicer answers both on the wire. The
  v1 file descriptor (``grpc/reflection/v1/reflection.proto``, derived from v1alpha's by
  renaming the package) is added to the descriptor pool, so a client can describe the
  reflection service it talks to.

Every answer carries the file and its transitive dependencies (the google.protobuf well-known
types included), as the base servicer sends them. Error details the service sends
(``google.rpc.BadRequest``, ``google.rpc.ErrorInfo``) resolve as well: the error table imports
their modules, which registers them in the same pool.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

__all__ = [
    "V1ALPHA_SERVICE_NAME",
    "V1_SERVICE_NAME",
    "ReflectionServicer",
    "add_reflection",
    "register_v1_descriptor",
]

V1ALPHA_SERVICE_NAME: str = reflection.SERVICE_NAME
"""``grpc.reflection.v1alpha.ServerReflection``."""

_V1_PACKAGE = "grpc.reflection.v1"
_V1_FILE = "grpc/reflection/v1/reflection.proto"
V1_SERVICE_NAME = f"{_V1_PACKAGE}.ServerReflection"
"""``grpc.reflection.v1.ServerReflection``."""

_METHOD = "ServerReflectionInfo"


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """The v1 reflection file: v1alpha's descriptor under the v1 package and file name, with
    the options the published v1 file carries."""
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    old = f".{proto.package}."
    new = f".{_V1_PACKAGE}."
    proto.name = _V1_FILE
    proto.package = _V1_PACKAGE
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(old):
                field.type_name = new + field.type_name[len(old):]
    for service in proto.service:
        for method in service.method:
            method.input_type = new + method.input_type[len(old):]
            method.output_type = new + method.output_type[len(old):]
    proto.options.Clear()
    proto.options.go_package = "google.golang.org/grpc/reflection/grpc_reflection_v1"
    proto.options.java_multiple_files = True
    proto.options.java_package = "io.grpc.reflection.v1"
    proto.options.java_outer_classname = "ServerReflectionProto"
    return proto


def register_v1_descriptor(pool: Any) -> None:
    """Add the v1 reflection file to ``pool`` unless a file of that name is there already."""
    try:
        pool.FindFileByName(_V1_FILE)
    except KeyError:
        pool.AddSerializedFile(_v1_file().SerializeToString())


class ReflectionServicer(reflection.ReflectionServicer):  # type: ignore[misc]
    """grpcio-reflection's servicer, resolving method names through their service.

    Args:
        service_names: the fully qualified services ``list_services`` reports.
        pool: the descriptor pool answers come from (the default pool when None).
    """

    def __init__(self, service_names: Iterable[str], pool: Any = None) -> None:
        super().__init__(service_names, pool=pool)
        self._symbols = pool if pool is not None else descriptor_pool.Default()

    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        try:
            self._symbols.FindFileContainingSymbol(fully_qualified_name)
        except KeyError:
            try:
                method = self._symbols.FindMethodByName(fully_qualified_name)
            except KeyError:
                pass  # the base answers NOT_FOUND
            else:
                fully_qualified_name = method.containing_service.full_name
        return super()._file_containing_symbol(request, fully_qualified_name)


def add_reflection(server: grpc.Server, service_names: Iterable[str]) -> tuple[str, ...]:
    """Serve reflection v1 and v1alpha on ``server`` (before ``server.start()``).

    Args:
        server: the gRPC server.
        service_names: the application's services (with health); both reflection services are
            added to what ``list_services`` reports.

    Returns:
        The two reflection service names.
    """
    register_v1_descriptor(descriptor_pool.Default())
    names = (*service_names, V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME)
    servicer = ReflectionServicer(names)
    handlers = {
        _METHOD: grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
        )
    }
    server.add_generic_rpc_handlers(
        tuple(grpc.method_handlers_generic_handler(name, handlers)
              for name in (V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME))
    )
    return V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME
