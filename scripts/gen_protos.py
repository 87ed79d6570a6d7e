"""Generate the Python stubs and type stubs of protos/planner/v1 into planner_svc/api.

Usage: python scripts/gen_protos.py [OUT_DIR]   (default: planner_svc/api)

protoc writes imports as ``from planner.v1 import x_pb2``; they are rewritten to the package path
``planner_svc.api.planner.v1`` so the generated code imports from inside planner_svc. Only the
files under protos/planner are generated: the vendored googleapis files (protos/google) are the
ones the ``googleapis-common-protos`` package already ships as ``google.rpc``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
CONTRACT = PROTO_ROOT / "planner"
IMPORT_RE = re.compile(r"^from planner\.v1 import ", re.MULTILINE)


def generate(out_dir: Path) -> list[Path]:
    """Run protoc on every .proto under protos/planner into ``out_dir``; returns the written
    files."""
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in CONTRACT.rglob("*.proto"))
    out_dir.mkdir(parents=True, exist_ok=True)
    # protoc finds the mypy plugins on PATH; they sit beside this interpreter.
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    written: list[Path] = []
    for path in sorted((out_dir / "planner").rglob("*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        text = IMPORT_RE.sub("from planner_svc.api.planner.v1 import ", path.read_text())
        path.write_text(text)
        written.append(path)
    for pkg in (out_dir, out_dir / "planner", out_dir / "planner" / "v1"):
        init = pkg / "__init__.py"
        if not init.exists():
            init.write_text('"""Generated from protos/ by scripts/gen_protos.py; do not edit."""\n')
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "planner_svc" / "api"
    for written_path in generate(target):
        print(written_path.relative_to(target.parent) if target.is_absolute() else written_path)
