"""scripts/port_free.py: `make demo` refuses a served port before it installs anything."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

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
            if port >= 65534:
                continue
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


def test_a_listening_port_is_refused_with_the_next_free_one_suggested() -> None:
    for _attempt in range(20):
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()
            port = server.getsockname()[1]
            if port >= 65535 or not _free(port + 1):
                continue  # the next port is taken too: another test covers that
            out = run(str(port), "make demo")
        assert out.returncode == 1
        assert f"make demo: 127.0.0.1:{port} is already in use" in out.stderr
        assert f"make demo PORT={port + 1}" in out.stderr
        return
    raise AssertionError("no port with a free successor found")


def _script() -> ModuleType:
    """The script as a module (it is not a package member)."""
    spec = importlib.util.spec_from_file_location("port_free", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free(port: int) -> bool:
    return _script()._bind_error(port) is None


def test_the_search_ends_without_a_suggestion_when_every_port_is_taken(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    module = _script()
    monkeypatch.setattr(module, "_bind_error", lambda port: "Address already in use")
    assert module.main(["port_free.py", "65535", "make demo"]) == 1
    err = capsys.readouterr().err
    assert err == "make demo: 127.0.0.1:65535 is already in use (Address already in use)\n"
    taken = {65535, *range(50151, 50160)}
    monkeypatch.setattr(module, "_bind_error",
                        lambda port: "Address already in use" if port in taken else None)
    assert module.main(["port_free.py", "65535", "make demo"]) == 1
    assert "e.g. make demo PORT=50160" in capsys.readouterr().err  # past the top, from 50151


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
