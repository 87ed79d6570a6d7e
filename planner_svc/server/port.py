"""One server per port: a second server on a port another already serves refuses to start.

Worker processes of one ``serve --workers N`` group share their port with ``SO_REUSEPORT``, and
the kernel lets *any* process of the same user join such a group: a second group started on
the same port, over another data directory, would silently take half the connections. So the
process that owns a port (the single server, or the parent of a worker group) claims it first:

1. a lock named after the port (a Linux abstract Unix socket, ``planner-svc:port:<port>``:
   held for the process's life, released by the kernel when the process ends, and scoped to
   the network namespace exactly like the port) refuses a second planner-svc server of any
   mode;
2. a probe bind of the address without ``SO_REUSEPORT`` refuses a port any other process
   (another program, a server of another user) listens on.

Port 0 asks for an ephemeral port, and the port actually served is claimed the same way: a
single server binds port 0 itself and then takes the lock of the port it got
(:meth:`PortClaim.hold`); the parent of a worker group reserves an ephemeral port first (a socket
bound with ``SO_REUSEPORT``, never listening, kept until the group stops: its workers join it,
no other program can bind it) and hands that port to its workers. Either way the ``serving`` log
line names the port. On systems without abstract sockets only the probe runs.
"""

from __future__ import annotations

import errno
import socket
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["PortClaim", "PortInUse", "claim_port"]


class PortInUse(RuntimeError):
    """The port is already served (the message says by what, and what to do)."""


@dataclass(slots=True)
class PortClaim:
    """A claimed port: keep it for as long as the port is served, then :meth:`release` it.

    Attributes:
        port: the port claimed (0: none yet, the server binds an ephemeral port; see
            :meth:`hold`).
    """

    port: int
    _lock: socket.socket | None = None
    _reservation: socket.socket | None = None

    def hold(self, port: int) -> None:
        """Claim ``port``, the ephemeral port a server asked for with port 0 just bound: take
        its lock, so a second server on it is refused like on any served port.

        Raises:
            PortInUse: another planner-svc server holds the port's lock.
        """
        self.port = port
        self._lock = _take_lock(port)

    def release(self) -> None:
        """Give the port up (idempotent)."""
        for held in (self._lock, self._reservation):
            if held is not None:
                held.close()
        self._lock = self._reservation = None


def _lock_name(port: int) -> str:
    return f"\0planner-svc:port:{port}"


def _take_lock(port: int) -> socket.socket | None:
    if not sys.platform.startswith("linux"):
        return None
    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        lock.bind(_lock_name(port))
    except OSError as exc:
        lock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(
                f"port {port} is already served by another planner-svc server on this machine "
                "(any mode, e.g. another --workers group over another data directory); stop it "
                "or pick another --port"
            ) from None
        return None
    return lock


def _bind_address(host: str, port: int) -> tuple[Any, ...]:
    """``(family, type, proto, sockaddr)`` to bind ``host:port`` with."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise RuntimeError(f"cannot bind {host}:{port}: {exc.strerror}") from None
    return family, kind, proto, address


def _reserve(host: str) -> socket.socket:
    """A socket bound with ``SO_REUSEPORT`` to an ephemeral port of ``host``, not listening."""
    family, kind, proto, address = _bind_address(host, 0)
    reservation = socket.socket(family, kind, proto)
    try:
        reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        reservation.bind(address)
    except OSError as exc:
        reservation.close()
        raise RuntimeError(f"cannot bind {host}:0: {exc.strerror}") from None
    return reservation


def _probe(host: str, port: int) -> None:
    family, kind, proto, address = _bind_address(host, port)
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUse(
                    f"{host}:{port} is already in use by another process; stop it or pick "
                    "another --port"
                ) from None
            raise RuntimeError(f"cannot bind {host}:{port}: {exc.strerror}") from None


def claim_port(host: str, port: int, *, group: bool = False) -> PortClaim:
    """Claim ``port`` for a server on ``host`` (see the module docstring).

    Port 0: for a worker ``group``, reserve an ephemeral port and claim it (the claim's
    :attr:`~PortClaim.port` is the one to serve); for a single server, claim nothing yet (it
    binds port 0, then calls :meth:`PortClaim.hold` with the port it got).

    Raises:
        PortInUse: another planner-svc server, or any other process, serves the port.
        RuntimeError: the address cannot be bound at all (not an address of this machine).
    """
    if port == 0:
        if not group:
            return PortClaim(port=0)
        reservation = _reserve(host)
        port = int(reservation.getsockname()[1])
        try:
            lock = _take_lock(port)
        except BaseException:
            reservation.close()
            raise
        return PortClaim(port=port, _lock=lock, _reservation=reservation)
    lock = _take_lock(port)
    try:
        _probe(host, port)
    except BaseException:
        if lock is not None:
            lock.close()
        raise
    return PortClaim(port=port, _lock=lock)
