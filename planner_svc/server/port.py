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

Port 0 (an ephemeral port, tests) is never claimed. On systems without abstract sockets only
the probe runs.
"""

from __future__ import annotations

import errno
import socket
import sys
from dataclasses import dataclass

__all__ = ["PortClaim", "PortInUse", "claim_port"]


class PortInUse(RuntimeError):
    """The port is already served (the message says by what, and what to do)."""


@dataclass(slots=True)
class PortClaim:
    """A claimed port: keep it for as long as the port is served, then :meth:`release` it.

    Attributes:
        port: the port claimed (0: nothing was claimed).
    """

    port: int
    _lock: socket.socket | None = None

    def release(self) -> None:
        """Give the port up (idempotent)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None


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


def _probe(host: str, port: int) -> None:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise RuntimeError(f"cannot bind {host}:{port}: {exc.strerror}") from None
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


def claim_port(host: str, port: int) -> PortClaim:
    """Claim ``port`` for a server on ``host`` (see the module docstring).

    Raises:
        PortInUse: another planner-svc server, or any other process, serves the port.
        RuntimeError: the address cannot be bound at all (not an address of this machine).
    """
    if port == 0:
        return PortClaim(port=0)
    lock = _take_lock(port)
    try:
        _probe(host, port)
    except BaseException:
        if lock is not None:
            lock.close()
        raise
    return PortClaim(port=port, _lock=lock)
