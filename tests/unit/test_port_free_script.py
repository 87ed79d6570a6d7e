"""scripts/port_free.py: `make demo` refuses a served port before it installs anything."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "port_free.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          check=False, timeout=30)


def test_the_suggested_port_is_free_too() -> None:
    # two consecutive ports listening: the suggestion skips both
    for _attempt in range(20):
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            first.listen()
            second.listen()
            out = run(str(port), "make demo")
            assert out.returncode == 1
            assert f"make demo PORT={port + 1}" not in out.stderr
            suggested = int(out.stderr.rsplit("PORT=", 1)[1].split()[0])
            assert suggested > port + 1
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(("127.0.0.1", suggested))
            return
    raise AssertionError("no two consecutive free ports found")


def test_a_listening_port_is_refused_with_the_next_one_suggested() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        out = run(str(port), "make demo")
    assert out.returncode == 1
    assert f"make demo: 127.0.0.1:{port} is already in use" in out.stderr
    assert f"make demo PORT={port + 1}" in out.stderr


def test_a_free_port_passes() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = run(str(port), "make demo")
    assert (out.returncode, out.stderr) == (0, "")


def test_a_port_that_is_not_a_number_is_a_usage_error() -> None:
    for bad in ("abc", "-1", "0", "70000", "", "\u00b2", "\uff11\uff12"):
        out = run(bad, "make demo")
        assert out.returncode == 2, bad
        assert "PORT must be a TCP port number" in out.stderr
