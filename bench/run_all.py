"""Run every benchmark in turn, one JSON line each (the fuzz run, ``python -m bench.fuzz``,
takes about half an hour and runs on its own).

The Plan-latency and ghz benchmarks need the demo data directory (``make demo`` first); they are
skipped with a note on stderr when it is missing. ghz needs Go (``go install``); the instruction
count runs when ``valgrind`` is installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    modules = [
        "bench.bench_select",
        "bench.bench_index",
        "bench.bench_ingest",
        "bench.bench_readers",
        "bench.bench_ingest_formats",
        "bench.bench_duplicates",
        "bench.bench_keepalive",
    ]
    if (ROOT / "data" / "demo" / "store.sqlite").exists():
        modules.append("bench.bench_plan_grpc")
        if shutil.which("go") or (ROOT / ".cache" / "bin" / "ghz").exists():
            modules.append("bench.bench_ghz")
        if shutil.which("valgrind") and shutil.which("callgrind_control"):
            modules.append("bench.bench_instructions")
    else:
        print("bench: no data/demo store; run `make demo` for the gRPC benchmarks",
              file=sys.stderr)
    failed = 0
    for module in modules:
        result = subprocess.run([sys.executable, "-m", module], cwd=ROOT, check=False)
        failed += result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
