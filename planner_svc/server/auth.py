"""Optional bearer-token authentication as a server interceptor.

Health checks and reflection stay open so load balancers and grpcurl work without the token.
The comparison is constant-time.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

import grpc

_OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")


class BearerTokenInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg,misc]
    """Rejects calls without ``authorization: Bearer <token>`` with UNAUTHENTICATED."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

        def deny(request: Any, context: grpc.ServicerContext) -> None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

        self._deny_unary = grpc.unary_unary_rpc_method_handler(deny)
        self._deny_stream_in = grpc.stream_unary_rpc_method_handler(deny)
        self._deny_stream_both = grpc.stream_stream_rpc_method_handler(deny)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = handler_call_details.method
        if method.startswith(_OPEN_PREFIXES):
            return continuation(handler_call_details)
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                raw = value.encode() if isinstance(value, str) else value
                if hmac.compare_digest(raw, self._expected):
                    return continuation(handler_call_details)
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        if handler.request_streaming and handler.response_streaming:
            return self._deny_stream_both
        if handler.request_streaming:
            return self._deny_stream_in
        return self._deny_unary
