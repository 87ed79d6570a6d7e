"""Where a client finds the server, how it authenticates and how its channel is opened.

The address, the token and the TLS flags need no gRPC (a command's module loads cheaply:
``planner-svc`` imports every subcommand module to build its help); :func:`open_channel`
imports it when called.

Every client channel accepts responses of any size (``grpc.max_receive_message_length`` -1):
the server bounds what it sends by its own limit (``serve`` 16 MiB by default, up to 1 GiB),
and gRPC's client default of 4 MiB would refuse a large plan the server may send.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner_svc.cliargs import FromEnvironment
from planner_svc.core.limits import Bounds
from planner_svc.settings import ENV_ADDRESS, ENV_AUTH_TOKEN, default_address, read_environment

if TYPE_CHECKING:
    import grpc
    from google.rpc import status_pb2

__all__ = [
    "ADDRESS_HELP",
    "CLIENT_CHANNEL_OPTIONS",
    "DEFAULT_ADDRESS",
    "ClientTLS",
    "add_tls_flags",
    "auth_metadata",
    "channel_for",
    "client_address",
    "open_channel",
    "rich_status",
    "sent_by_server",
    "unavailable_hint",
]

DEFAULT_ADDRESS = default_address()
"""The default bind address and port of ``serve``."""


DEADLINE_S = Bounds(0.0, 3600.0, low_open=True)
"""Allowed ``--timeout`` of the client commands, seconds (a deadline of 0 fails every call)."""

ADDRESS_HELP = f"server HOST:PORT (default: ${ENV_ADDRESS}, else {DEFAULT_ADDRESS})"
"""The help text of every client command's ``--address``."""


def client_address() -> str:
    """Where a client command looks for the server when given no ``--address``:
    ``$PLANNER_SVC_ADDRESS`` (:data:`~planner_svc.settings.ENV_ADDRESS`) when set and not
    empty, else :data:`DEFAULT_ADDRESS`. Read when a command's options are built."""
    given = os.environ.get(ENV_ADDRESS, "").strip()
    return FromEnvironment(given, ENV_ADDRESS) if given else DEFAULT_ADDRESS

CLIENT_CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", -1),
)
"""Channel options of every client: receive whatever the server may send."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientTLS:
    """How a client speaks TLS to the server.

    Attributes:
        ca: PEM certificate authorities the server's certificate must chain to; None = the
            system's roots.
        cert, key: PEM client certificate chain and private key, both or neither (for a
            server that requires client certificates: ``serve --tls-client-ca``).
    """

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ClientTLS | None:
        """The TLS of the parsed :func:`add_tls_flags` flags; None when none is given
        (plaintext).

        Raises:
            ValueError: only one of ``--tls-cert`` and ``--tls-key``.
        """
        ca, cert, key = args.tls_ca, args.tls_cert, args.tls_key
        if (cert is None) != (key is None):
            raise ValueError("--tls-cert and --tls-key must be given together")
        if ca is None and cert is None:
            return None
        return cls(ca=ca, cert=cert, key=key)


def add_tls_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--tls-ca``, ``--tls-cert`` and ``--tls-key`` (any of them switches TLS on)."""
    parser.add_argument("--tls-ca", type=Path, default=None,
                        help="PEM certificate authorities to verify the server with "
                             "(enables TLS; default roots when only --tls-cert is given)")
    parser.add_argument("--tls-cert", type=Path, default=None,
                        help="PEM client certificate chain (for servers that require one)")
    parser.add_argument("--tls-key", type=Path, default=None, help="PEM client private key")


def _read(path: Path | None, flag: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {flag} {path}: {exc.strerror}") from None


def open_channel(address: str, tls: ClientTLS | None = None) -> grpc.Channel:
    """A channel to ``address`` with :data:`CLIENT_CHANNEL_OPTIONS`: plaintext, or TLS (with a
    client certificate when ``tls`` has one).

    Raises:
        ValueError: a TLS file cannot be read (one line naming the flag and the file).
    """
    import grpc

    if tls is None:
        return grpc.insecure_channel(address, options=CLIENT_CHANNEL_OPTIONS)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(tls.ca, "--tls-ca"),
        private_key=_read(tls.key, "--tls-key"),
        certificate_chain=_read(tls.cert, "--tls-cert"),
    )
    return grpc.secure_channel(address, credentials, options=CLIENT_CHANNEL_OPTIONS)


def channel_for(args: argparse.Namespace) -> grpc.Channel:
    """The channel of a command's parsed ``--address`` and :func:`add_tls_flags` flags.

    Raises:
        ValueError: inconsistent TLS flags or an unreadable file (one line to print).
    """
    return open_channel(args.address, ClientTLS.from_args(args))


EXIT_USAGE = 2
"""Exit code of a client command given bad arguments (refused before any call)."""


def command_channel(args: argparse.Namespace, command: str) -> grpc.Channel | None:
    """:func:`channel_for` of a command's arguments; None, after one line on stderr
    (``planner-svc <command>: <reason>``), when its TLS flags are inconsistent or a file is
    unreadable (the command then exits :data:`EXIT_USAGE`)."""
    try:
        return channel_for(args)
    except ValueError as exc:
        print(f"planner-svc {command}: {exc}", file=sys.stderr)
        return None


def auth_metadata() -> tuple[tuple[str, str | bytes], ...]:
    """``authorization: Bearer <token>`` from the environment's token, or no metadata."""
    token = read_environment().auth_token
    return (("authorization", f"Bearer {token}"),) if token else ()


EXIT_REFUSED = 1
"""Exit code of a client command whose request the server refused (a status not in
:data:`RETRY_LATER`)."""
EXIT_UNAVAILABLE = 3
"""Exit code of a client command that got no answer to retry later or elsewhere (a status in
:data:`RETRY_LATER`), as ``planner-svc health`` exits when it reads no status."""
RETRY_LATER = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED"})
"""gRPC status names that mean the service is unavailable rather than the request wrong:
unreachable, shutting down, its shared store unreachable, a failed TLS handshake
(``UNAVAILABLE``), or no answer within the deadline (``DEADLINE_EXCEEDED``)."""


def failure_exit(code_name: str) -> int:
    """The exit code of a client command whose call ended with gRPC status ``code_name``:
    :data:`EXIT_UNAVAILABLE` for one in :data:`RETRY_LATER`, else :data:`EXIT_REFUSED`."""
    return EXIT_UNAVAILABLE if code_name in RETRY_LATER else EXIT_REFUSED


def rich_status(err: object) -> status_pb2.Status | None:
    """The ``google.rpc.Status`` a failed call carries in ``grpc-status-details-bin``; None
    when it has none, the details are malformed or disagree with the call's code and message,
    or ``err`` is not a call."""
    from google.protobuf.message import DecodeError
    from grpc_status import rpc_status

    try:
        return rpc_status.from_call(err)  # type: ignore[arg-type]
    except (AttributeError, ValueError, DecodeError):
        return None


def sent_by_server(err: object) -> bool:
    """Whether a failed call's status came from a planner-svc server (which sends every error
    as a rich status, :func:`rich_status`) rather than from the client's transport (no
    connection, TLS handshake refused, name not resolved)."""
    return rich_status(err) is not None


def unavailable_hint(code_name: str, target: str, err: object | None = None) -> str:
    """Extra advice for a status a user can fix from the command line. ``err``: the failed
    call, when known; an UNAVAILABLE the server itself sent (its store or planning model
    unreachable, or it is stopping) gets no advice to start a server."""
    if code_name == "UNAVAILABLE":
        if err is not None and sent_by_server(err):
            return f" (sent by the server at {target}: retry later, or on another replica)"
        return (f" (is `planner-svc serve` running at {target}? pass --address HOST:PORT; "
                "a TLS server needs --tls-ca, and client certificates --tls-cert/--tls-key)")
    if code_name == "UNAUTHENTICATED":
        return f" (set {ENV_AUTH_TOKEN} to the server's token)"
    if code_name == "DEADLINE_EXCEEDED":
        return " (raise --timeout, or check the server's load)"
    return ""
