"""Requests that do not decode: INVALID_ARGUMENT with the field and reason, never INTERNAL.

grpcio decodes each request message with its method handler's ``request_deserializer``; when
that raises (a string field holding invalid UTF-8, a truncated message, bytes that are not
protobuf), grpcio aborts the call with ``INTERNAL: Exception deserializing request!`` before any
servicer runs: no request id, no log line, and in a client stream every message already read is
lost with it. :class:`DecodeGuard`, a server interceptor, gives every method (health and
reflection included) a deserializer that never raises: a message that does not decode becomes
an :class:`Undecodable` value, which

- a unary call answers with ``INVALID_ARGUMENT`` (a ``google.rpc.BadRequest`` naming the field,
  the request id in the trailers, one log line) before the servicer runs;
- a stream of a planner service meets as an :class:`~planner_svc.core.errors.InvalidRequest`
  raised by its request iterator, mapped like any invalid request (the stream ends);
- a stream of a tolerant method (``IngestSources``) receives as an item, so its servicer reports
  that one message and goes on with the rest;
- a stream of another service (reflection) ends with ``INVALID_ARGUMENT``.

The field at fault is found by decoding the bytes again with a mirror of the message type whose
``string`` fields are ``bytes`` (same wire format, no UTF-8 check): the first string field
holding invalid UTF-8 is named in the proto's spelling (``question``, ``document.text``,
``node.provenance[0].source_id``). Bytes the mirror cannot decode either are named by the
message type and their length.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import structlog
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, FileDescriptor
from google.protobuf.message import Message

from planner_svc.core.errors import ECHO_CHARS, InvalidRequest, clip
from planner_svc.server.errors import abort_with
from planner_svc.server.observe import RPC_TOTAL, request_id

__all__ = ["DecodeGuard", "Undecodable", "lenient_deserializer"]

log = structlog.get_logger("planner_svc.server")

Deserializer = Callable[[bytes], Any]
"""grpcio's request deserializer: serialized bytes -> request message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Undecodable:
    """A request message that did not decode.

    Attributes:
        message_type: full name of the expected message (``planner.v1.PlanRequest``); ``""``
            when the deserializer belongs to no protobuf message class.
        size: length of the serialized message, bytes.
        field: path of the field at fault in the proto's spelling (``document.text``); ``""``
            when the bytes are not a message of the type at all.
        reason: what is wrong (``not valid UTF-8 at byte 3``).
        salvaged: the message decoded by the lenient mirror (string fields as bytes), None when
            the bytes are not a message of the type at all.
    """

    message_type: str
    size: int
    field: str
    reason: str
    salvaged: Message | None = None

    def error(self, *, position: int | None = None) -> InvalidRequest:
        """The InvalidRequest to answer with; ``position`` (1-based) names the message within a
        request stream."""
        where = "" if position is None else f" (message {position} of the stream)"
        if self.field:
            return InvalidRequest(self.field, f"{self.reason}{where}")
        return InvalidRequest("request", f"{self.reason}{where}")

    def text(self, path: str, *, limit: int = ECHO_CHARS) -> str:
        """The salvaged value of string field ``path`` (dotted, singular fields only) when it is
        valid UTF-8, clipped to ``limit`` characters; ``""`` otherwise."""
        node: Any = self.salvaged
        for name in path.split("."):
            if node is None or not isinstance(node, Message):
                return ""
            if name not in node.DESCRIPTOR.fields_by_name:
                return ""
            node = getattr(node, name)
        if not isinstance(node, bytes):
            return ""
        try:
            return clip(node.decode("utf-8"), limit)
        except UnicodeDecodeError:
            return ""


# --------------------------------------------------------------------------- the mirror


class _Mirrors:
    """Mirror message classes: the same messages with every ``string`` field made ``bytes`` and
    every map made a repeated entry message (map keys cannot be bytes), in a private pool."""

    def __init__(self) -> None:
        self._pool = descriptor_pool.DescriptorPool()
        self._added: set[str] = set()
        self._classes: dict[str, type[Message]] = {}
        self._strings: set[str] = set()
        self._maps: set[str] = set()
        self._lock = threading.Lock()

    def of(self, descriptor: Descriptor) -> type[Message]:
        """The mirror class of ``descriptor``'s message type."""
        with self._lock:
            cls = self._classes.get(descriptor.full_name)
            if cls is None:
                self._add(descriptor.file)
                cls = message_factory.GetMessageClass(
                    self._pool.FindMessageTypeByName(descriptor.full_name)
                )
                self._classes[descriptor.full_name] = cls
            return cls

    def was_string(self, field: FieldDescriptor) -> bool:
        """Whether the mirror field ``field`` is a ``string`` field of the real message."""
        return field.full_name in self._strings

    def was_map(self, descriptor: Descriptor) -> bool:
        """Whether the mirror message ``descriptor`` is a map entry of the real message."""
        return descriptor.full_name in self._maps

    def _add(self, file: FileDescriptor) -> None:
        if file.name in self._added:
            return
        for dependency in file.dependencies:
            self._add(dependency)
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        package = f"{proto.package}." if proto.package else ""
        for message in proto.message_type:
            self._rewrite(message, package)
        self._pool.Add(proto)
        self._added.add(file.name)

    def _rewrite(self, message: descriptor_pb2.DescriptorProto, scope: str) -> None:
        full_name = f"{scope}{message.name}"
        if message.options.map_entry:
            message.options.map_entry = False
            self._maps.add(full_name)
        for field in message.field:
            if field.type == descriptor_pb2.FieldDescriptorProto.TYPE_STRING:
                field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
                self._strings.add(f"{full_name}.{field.name}")
        for nested in message.nested_type:
            self._rewrite(nested, f"{full_name}.")


_MIRRORS = _Mirrors()


def _bad_utf8(mirror: Message, prefix: str = "") -> tuple[str, str] | None:
    """(field path, reason) of the first string field of ``mirror`` holding invalid UTF-8, in
    field-number order; None when there is none."""
    for field, value in mirror.ListFields():
        name = f"{prefix}{field.name}"
        if field.message_type is not None and _MIRRORS.was_map(field.message_type):
            for entry in value:
                found = _bad_map_entry(entry, name)
                if found is not None:
                    return found
            continue
        repeated = field.is_repeated
        items = list(value) if repeated else [value]
        for i, item in enumerate(items):
            path = f"{name}[{i}]" if repeated else name
            if isinstance(item, Message):
                found = _bad_utf8(item, f"{path}.")
                if found is not None:
                    return found
            elif isinstance(item, bytes) and _MIRRORS.was_string(field):
                reason = _utf8_reason(item)
                if reason is not None:
                    return path, reason
    return None


def _bad_map_entry(entry: Message, name: str) -> tuple[str, str] | None:
    key: Any = getattr(entry, "key", b"")
    value: Any = getattr(entry, "value", b"")
    if isinstance(key, bytes):
        reason = _utf8_reason(key)
        if reason is not None:
            return name, f"a key is {reason}"
        key_text = clip(key.decode("utf-8"), ECHO_CHARS)
    else:
        key_text = str(key)
    if isinstance(value, Message):
        return _bad_utf8(value, f"{name}.{key_text}.")
    if isinstance(value, bytes) and (reason := _utf8_reason(value)) is not None:
        return f"{name}.{key_text}", reason
    return None


def _utf8_reason(raw: bytes) -> str | None:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 at byte {exc.start}"
    return None


def _diagnose(message_class: type[Message] | None, data: bytes,
              type_name: str | None = None) -> Undecodable:
    """Why ``data`` is not a ``message_class``: the field holding invalid UTF-8, or that it is
    no such message at all (the message named ``type_name``, default the class's own)."""
    if message_class is None:
        return Undecodable(message_type="", size=len(data), field="",
                           reason=f"the {len(data)}-byte request does not decode")
    descriptor = message_class.DESCRIPTOR
    type_name = type_name or descriptor.full_name
    try:
        mirror = _MIRRORS.of(descriptor).FromString(data)  # type: ignore[arg-type]
    except Exception:  # not this message type even without the UTF-8 check
        return Undecodable(
            message_type=type_name, size=len(data), field="",
            reason=f"the {len(data)}-byte message is not a valid {type_name} (truncated, or "
                   "not protobuf)",
        )
    found = _bad_utf8(mirror)
    if found is None:
        return Undecodable(message_type=type_name, size=len(data), field="", salvaged=mirror,
                           reason=f"the {len(data)}-byte message is not a valid {type_name}")
    field, reason = found
    return Undecodable(message_type=type_name, size=len(data), field=field, reason=reason,
                       salvaged=mirror)


def lenient_deserializer(
    deserializer: Deserializer, type_name: str | None = None
) -> Callable[[bytes], Any]:
    """``deserializer`` that returns an :class:`Undecodable` instead of raising.

    The message class is read from ``deserializer`` when it is a generated message's
    ``FromString``; otherwise the undecodable value names no type. ``type_name`` names the
    message the method declares when it differs from that class's (a method served with the
    class of another package's identical message, as reflection v1 is with v1alpha's).
    """
    owner = getattr(deserializer, "__self__", None)
    message_class = (
        owner if isinstance(owner, type) and issubclass(owner, Message) else None
    )

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:
            try:
                return _diagnose(message_class, data, type_name)
            except Exception:  # the diagnosis itself must never fail the call
                return Undecodable(message_type="", size=len(data), field="",
                                   reason=f"the {len(data)}-byte request does not decode")

    return deserialize


# --------------------------------------------------------------------------- the interceptor


def _short(method: str) -> str:
    return method.rsplit("/", 1)[-1]


@functools.cache
def _declared_input(method: str) -> str | None:
    """Full name of the request message ``method`` (``/package.Service/Method``) declares in
    the default descriptor pool; None when the pool does not know the method."""
    service, _, name = method.lstrip("/").partition("/")
    try:
        declared = descriptor_pool.Default().FindMethodByName(f"{service}.{name}")
    except KeyError:
        return None
    return str(declared.input_type.full_name)


def _reject(
    context: grpc.ServicerContext, method: str, error: InvalidRequest, *, counted: bool
) -> None:
    """Answer INVALID_ARGUMENT with the request id and a log line (raises, like abort);
    ``counted`` adds the call to ``planner_rpc_total`` (the planner's own RPCs)."""
    if counted:
        RPC_TOTAL.labels(_short(method), "INVALID_ARGUMENT").inc()
    abort_with(context, error, request_id=request_id(context), method=_short(method),
               undecodable=True)


class DecodeGuard(grpc.ServerInterceptor):  # type: ignore[misc,type-arg]
    """Gives every method a deserializer that never raises, and answers undecodable messages
    (see the module docstring).

    Args:
        planner_services: full names of the services whose servicers map
            :class:`~planner_svc.core.errors.InvalidRequest` themselves (a stream of theirs
            meets an undecodable message as that error).
        tolerant: full method paths (``/planner.v1.MemoryService/IngestSources``) whose request
            streams receive :class:`Undecodable` items.
    """

    def __init__(
        self, *, planner_services: tuple[str, ...], tolerant: frozenset[str] = frozenset()
    ) -> None:
        self._planner = tuple(f"/{name}/" for name in planner_services)
        self._tolerant = tolerant
        self._guarded: dict[str, tuple[grpc.RpcMethodHandler[Any, Any],
                                       grpc.RpcMethodHandler[Any, Any]]] = {}

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        method: str = details.method
        # A method's handler is registered once: its guarded handler is built on its first
        # call and reused while the server hands out the same handler.
        guarded = self._guarded.get(method)
        if guarded is not None and guarded[0] is handler:
            return guarded[1]
        wrapped = self._guard(method, handler)
        self._guarded[method] = (handler, wrapped)
        return wrapped

    def _guard(self, method: str, handler: grpc.RpcMethodHandler[Any, Any]
               ) -> grpc.RpcMethodHandler[Any, Any]:
        """``handler`` with the lenient deserializer and the undecodable-message checks."""
        planner = method.startswith(self._planner)
        assert handler.request_deserializer is not None
        deserializer = lenient_deserializer(handler.request_deserializer,
                                            _declared_input(method))
        serializer = handler.response_serializer
        if not handler.request_streaming:
            behavior = (
                handler.unary_stream if handler.response_streaming else handler.unary_unary
            )
            assert behavior is not None

            def unary(request: Any, context: grpc.ServicerContext) -> Any:
                if isinstance(request, Undecodable):
                    _reject(context, method, request.error(), counted=planner)
                return behavior(request, context)

            make_unary = (
                grpc.unary_stream_rpc_method_handler if handler.response_streaming
                else grpc.unary_unary_rpc_method_handler
            )
            return make_unary(unary, request_deserializer=deserializer,
                              response_serializer=serializer)
        streaming_behavior = (
            handler.stream_stream if handler.response_streaming else handler.stream_unary
        )
        assert streaming_behavior is not None
        tolerant = method in self._tolerant

        def checked(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            for position, request in enumerate(requests, start=1):
                if isinstance(request, Undecodable) and not tolerant:
                    error = request.error(position=position)
                    if planner:
                        raise error
                    _reject(context, method, error, counted=False)
                yield request

        def streaming(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            return streaming_behavior(checked(requests, context), context)

        make_streaming = (
            grpc.stream_stream_rpc_method_handler if handler.response_streaming
            else grpc.stream_unary_rpc_method_handler
        )
        return make_streaming(streaming, request_deserializer=deserializer,
                              response_serializer=serializer)
