"""Exit 1, saying so, when a TCP port on loopback is already in use (standard library only: it
runs before the virtual environment exists).

Usage: python3 scripts/port_free.py PORT [WHAT]
"""

from __future__ import annotations

import socket
import sys


def main(argv: list[str]) -> int:
    """``argv``: the script, PORT, and the command to name in messages. Returns 0 when
    127.0.0.1:PORT is free, 1 when it is in use, 2 when PORT is not a port number."""
    what = argv[2] if len(argv) > 2 else "port_free"
    text = argv[1] if len(argv) > 1 else ""
    if not (text.isascii() and text.isdecimal()) or not 0 < int(text) <= 65535:
        print(f"{what}: PORT must be a TCP port number, 1..65535 (got {text!r})", file=sys.stderr)
        return 2
    port = int(text)
    error = _bind_error(port)
    if error is None:
        return 0
    hint = next((p for p in [*range(port + 1, min(port + 100, 65535) + 1), *range(50151, 50251)]
                 if _bind_error(p) is None), None)
    suggestion = f"; give a free port, e.g. {what} PORT={hint}" if hint is not None else ""
    print(f"{what}: 127.0.0.1:{port} is already in use ({error}){suggestion}", file=sys.stderr)
    return 1


def _bind_error(port: int) -> str | None:
    """Why a server could not bind 127.0.0.1:``port`` now, or None when it could."""
    with socket.socket() as probe:
        # as a server binds: a port only in TIME_WAIT from an earlier run is free
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
