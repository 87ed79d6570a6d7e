"""The Go command-line tools the benchmarks and the integration tests run, pinned.

Each is installed with ``go install MODULE/cmd/NAME@VERSION`` (modules from the Go module proxy)
into ``.cache/bin`` on first use, and again when the binary there was built from another
version. ``python -m bench.gotools`` installs all of them (``make go-tools``).

- ghz v0.120.0: load tests (older releases cannot parse proto3 ``optional`` fields);
- grpcurl v1.9.3: ``describe`` and calls through server reflection.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".cache" / "bin"
"""Where the tools are installed (git-ignored)."""

GO_TOOLS: dict[str, str] = {
    "ghz": "github.com/bojand/ghz/cmd/ghz@v0.120.0",
    "grpcurl": "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3",
}
"""Tool name -> the ``go install`` argument that pins it."""


class GoToolError(RuntimeError):
    """``go`` is missing or ``go install`` failed; the message says which, with go's output."""


def installed_version(binary: Path) -> str | None:
    """The main module version ``binary`` was built from (``go version -m``), or None."""
    try:
        out = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True,
                             text=True, timeout=60, check=False).stdout
    except OSError:
        return None
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0] == "mod":
            return fields[2]
    return None


def go_tool(name: str) -> Path:
    """The pinned ``name`` (a key of :data:`GO_TOOLS`), installed first when missing or built
    from another version.

    Raises:
        KeyError: ``name`` is not a pinned tool.
        GoToolError: no ``go`` on PATH, or ``go install`` failed (no module proxy reachable
            and the modules not cached, for instance).
    """
    spec = GO_TOOLS[name]
    version = spec.rsplit("@", 1)[1]
    binary = BIN / name
    if binary.exists() and installed_version(binary) == version:
        return binary
    env = {**os.environ, "GOBIN": str(BIN)}
    try:
        result = subprocess.run(["go", "install", spec], capture_output=True, text=True,
                                env=env, timeout=900, check=False)
    except FileNotFoundError:
        raise GoToolError(f"cannot install {name}: no `go` on PATH") from None
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-6:])
        raise GoToolError(f"`go install {spec}` failed (is the Go module proxy reachable?):\n"
                          f"{tail}")
    return binary


if __name__ == "__main__":
    for tool in GO_TOOLS:
        print(go_tool(tool))
    sys.exit(0)
