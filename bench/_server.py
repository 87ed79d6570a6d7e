"""Server subprocesses for the benchmarks (``planner-svc serve``, or any command serving gRPC
health), SERVING before they are handed out."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from planner_svc.client.common import NotServing, wait_serving

ROOT = Path(__file__).resolve().parent.parent


def git_revision() -> str:
    """Short git revision of the working tree, or "unknown"."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


@contextmanager
def running_server(data: str, port: int, *, workers: int = 1, store: str | None = None,
                   timeout_s: float = 600.0) -> Iterator[str]:
    """Start a server on 127.0.0.1:``port`` over ``data`` (or over the shared ``store``, with
    ``data`` its replica directory); yields its address; SIGTERM at exit.

    Raises:
        SystemExit: no store under ``data``, the server exited, or it never became SERVING.
    """
    if store is None and not (Path(data) / "store.sqlite").exists():
        raise SystemExit(f"no store under {data}: run `make demo` first")
    with running_process(
        [sys.executable, "-m", "planner_svc.cli", "serve", "--data", data, "--port", str(port),
         "--workers", str(workers), "--log-level", "warning",
         *(["--store", store] if store else [])],
        port, timeout_s=timeout_s,
    ) as address:
        yield address


@contextmanager
def running_process(command: list[str], port: int, *, timeout_s: float = 120.0
                    ) -> Iterator[str]:
    """Run ``command`` (a gRPC server on 127.0.0.1:``port`` with the health service) from the
    repository root; yields its address once it reports SERVING; SIGTERM at exit.

    Raises:
        SystemExit: the process exited, or it never became SERVING.
    """
    address = f"127.0.0.1:{port}"
    proc = subprocess.Popen(command, cwd=ROOT)
    try:
        try:
            wait_serving(address, proc, timeout_s)
        except NotServing as exc:
            raise SystemExit(str(exc)) from None
        yield address
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            # still finishing calls its clients gave up on: the measurement is over
            proc.kill()
            proc.wait()
