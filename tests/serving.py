"""``planner-svc serve`` as a subprocess on a port it picks itself (``--port 0``).

The server binds an ephemeral port and reports it in its ``serving`` log line (logged once the
health service says SERVING), which is read here: no port is chosen by the test and handed to
the server, so no other process can take it in between. Its stderr is read on a thread for the
process's whole life (a full pipe would block the server's logging) and kept for assertions.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from planner_svc.client.common import NotServing


class ServeProcess:
    """One ``planner-svc serve --port 0`` process (logging at info level, for its ``serving``
    line); ``extra`` are more ``serve`` flags, ``env`` variables added to the environment."""

    def __init__(self, data: Path, *extra: str, env: Mapping[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "planner_svc.cli", "serve", "--data", str(data),
             "--port", "0", "--log-level", "info", *extra],
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        self._lines: list[str] = []
        self._address: str | None = None
        self._settled = threading.Event()  # the serving line was read, or stderr ended
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.append(line)
            if self._address is None:
                address = serving_address(line)
                if address is not None:
                    self._address = address
                    self._settled.set()
        self._settled.set()

    def wait_serving(self, timeout_s: float) -> str:
        """The ``HOST:PORT`` the server serves on, once it is SERVING.

        Raises:
            NotServing: the process exited first (the message has its stderr), or
                ``timeout_s`` seconds passed (the process is then killed).
        """
        if not self._settled.wait(timeout_s):
            self.proc.kill()  # nobody else would stop it
            self.proc.wait()
            raise NotServing(f"server not serving after {timeout_s:.0f} s:\n{self.stderr}")
        if self._address is None:
            code = self.proc.wait()
            self._reader.join()
            raise NotServing(f"server exited with code {code} before serving:\n{self.stderr}")
        return self._address

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM the server and wait for it; returns its exit code (stderr is then complete)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout_s)
        return code

    @property
    def stderr(self) -> str:
        """Everything the process wrote to stderr so far."""
        return "".join(self._lines)


def serving_address(line: str) -> str | None:
    """The ``address`` of a JSON ``serving`` log line, or None for any other line."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if isinstance(event, dict) and event.get("event") == "serving":
        return str(event["address"])
    return None


@contextlib.contextmanager
def refused_address() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a socket bound but never listening, while the block runs:
    connections to it are refused at once (no other process can take the port meanwhile)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{closed.getsockname()[1]}"
