"""Instructions a plan executes, counted by valgrind's callgrind: a figure the machine's load
does not move, for comparing two revisions on a noisy machine.

Wall and CPU times of the same revision move 15-20% between runs on a shared machine; the
number of instructions a plan executes moves far less, because it does not depend on the
clock, the caches or the neighbours. This script runs the planner in process under
``valgrind --tool=callgrind`` with collection off, plans every question once (warm-up: the
catalog's entries, the caches, numba's kernels), then switches collection on
(``callgrind_control -i on``), plans every question ``--rounds`` times at a fixed "now",
switches it off and reads the count. Between the warm-up and the count it moves the heap to
the permanent generation (``gc.freeze()``, as the server does), so no full collection over the
start-up heap lands in the count. It prints one JSON object: instructions per plan
(millions) in total and by shared object (the interpreter, numpy, FAISS, the tokenizer,
the C library; ``other`` holds the rest, numba's compiled kernels among them), the plans
counted, the seconds the run took, the git revision.

Valgrind emulates a CPU without AVX-512, so FAISS runs its AVX2 kernels here and the counts
are not those of a native run: compare revisions, not machines. It is slow (about 3 minutes
on the demo corpus, most of it starting the service under emulation); FAISS and numba are
held to one thread (``OMP_NUM_THREADS=1``, ``NUMBA_NUM_THREADS=1``) and hashing is seeded
(``PYTHONHASHSEED=0``) so two runs of one revision count the same work.

Usage: python -m bench.bench_instructions [--data data/demo] [--rounds 2] [--budget 1500]
Needs ``valgrind`` (Debian: ``apt-get install valgrind``) on PATH.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench._server import ROOT, git_revision

DEFAULT_QUESTIONS = ROOT / "bench" / "eval" / "dev.jsonl"
FIXED_NOW_US = 1_800_000_000_000_000
"""The plans' as-of (2027-01-15), past every demo write: the same plans on every run."""
READY_TIMEOUT_S = 3600.0
"""Longest wait for the service to start under valgrind, seconds."""
GROUPS = (
    ("interpreter", "libpython"),
    ("numpy", "_multiarray_umath"),
    ("faiss", "faiss"),
    ("tokenizer", "tokenizers"),
    ("c library", "libc.so"),
)
"""Shared objects reported apart (by a part of their path); the rest is ``other`` (numba's
compiled kernels, which have no file, among them)."""


def _child(args: argparse.Namespace) -> int:
    """Inside valgrind: warm, say ready, wait for the go, plan the rounds, say done."""
    from planner_svc.core.errors import InsufficientEvidence
    from planner_svc.recall.request import question_query
    from planner_svc.server.services import Services
    from planner_svc.settings import ServerSettings

    with open(args.questions, encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh if line.strip()]
    services = Services.open(ServerSettings(data_dir=Path(args.data)))
    planner = services.planner
    queries = [question_query(q, config=planner.config, recall=planner.recall,
                              now_us=FIXED_NOW_US, budget_tokens=args.budget)
               for q in questions]

    def plan_all() -> None:
        for query in queries:
            with contextlib.suppress(InsufficientEvidence):  # a declined question counts too
                planner.plan(query)

    plan_all()
    # As the server does once it is warm (planner_svc.server.app): the start-up heap moves to
    # the permanent generation. Otherwise whether a full collection walks it during the
    # counted rounds depends on the allocations of the code measured (one tree counted 20.86
    # M a plan in one run and 22.83 M in another that only logged a few lines more).
    gc.collect()
    gc.freeze()
    flags = Path(args.flags)
    parent = os.getppid()
    (flags / "ready").write_text(str(os.getpid()), encoding="utf-8")
    if _wait_for_flag(flags, "go", parent):
        for _ in range(args.rounds):
            plan_all()
        (flags / "done").write_text(str(len(queries) * args.rounds), encoding="utf-8")
        _wait_for_flag(flags, "stop", parent)
    services.close()
    return 0


def _wait_for_flag(flags: Path, name: str, parent: int) -> bool:
    """Wait until the file ``name`` exists in ``flags`` (True), or the run is stopping: the
    ``stop`` file exists or the parent process is gone (False; True when waiting for
    ``stop`` itself)."""
    while not (flags / name).exists():
        if (flags / "stop").exists() or os.getppid() != parent:
            return name == "stop"
        time.sleep(0.1)
    return True


def _wait_for(path: Path, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait until ``path`` exists.

    Raises:
        RuntimeError: the process exited first.
        TimeoutError: ``timeout_s`` seconds passed.
    """
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"the planner under valgrind exited ({process.returncode})")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {path.name} after {timeout_s:.0f} s")
        time.sleep(0.5)


def self_costs(dump: Path) -> Counter[str]:
    """Instructions (``Ir``) by shared object (self cost of its functions) in a callgrind
    dump, reading its ``positions:`` and ``events:`` headers for the column that holds them.

    Raises:
        ValueError: the dump records no ``Ir`` event.
    """
    names: dict[str, str] = {}
    costs: Counter[str] = Counter()
    current = "?"
    after_call = False
    positions, event = 1, 0  # callgrind's defaults: line numbers, then Ir first
    with dump.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("positions:"):
                positions = len(line.split()[1:])
            elif line.startswith("events:"):
                events = line.split()[1:]
                if "Ir" not in events:
                    raise ValueError(f"{dump} records no Ir event (events: {' '.join(events)})")
                event = events.index("Ir")
            elif line.startswith("ob="):
                match = re.match(r"ob=\((\d+)\)(?: (.*))?", line.strip())
                if match is None:
                    current = line[3:].strip()
                else:
                    if match.group(2):
                        names[match.group(1)] = match.group(2)
                    current = names.get(match.group(1), match.group(1))
            elif line.startswith(("cob=", "cfi=", "cfn=")):
                match = re.match(r"cob=\((\d+)\) (.*)", line.strip())
                if match is not None:
                    names[match.group(1)] = match.group(2)
            elif line.startswith("calls="):
                after_call = True  # the next cost line is the call's inclusive cost
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_call:
                    after_call = False
                    continue
                fields = line.split()
                if len(fields) > positions + event:
                    costs[current] += int(fields[positions + event])
    return costs


def _grouped(costs: Counter[str]) -> dict[str, int]:
    """``costs`` summed into the :data:`GROUPS` (by a part of each object's path) and
    ``other``."""
    out = dict.fromkeys([name for name, _part in GROUPS] + ["other"], 0)
    for obj, count in costs.items():
        name = next((n for n, part in GROUPS if part in obj), "other")
        out[name] += count
    return out


def _count(flags: Path, process: subprocess.Popen[bytes], control: str
           ) -> tuple[int, Counter[str]]:
    """Switch collection on once the child is warm, let it plan its rounds, switch it off and
    read the dump: ``(plans counted, instructions by shared object)``.

    Raises:
        RuntimeError, TimeoutError: see :func:`_wait_for`; RuntimeError too when callgrind
            wrote no dump or no plan was counted.
        subprocess.CalledProcessError: ``callgrind_control`` failed.
    """
    _wait_for(flags / "ready", process, READY_TIMEOUT_S)
    subprocess.run([control, "-i", "on", str(process.pid)], check=True, capture_output=True)
    (flags / "go").touch()
    _wait_for(flags / "done", process, READY_TIMEOUT_S)
    subprocess.run([control, "-i", "off", str(process.pid)], check=True, capture_output=True)
    subprocess.run([control, "-d", str(process.pid)], check=True, capture_output=True)
    plans = int((flags / "done").read_text(encoding="utf-8"))
    dumps = sorted(flags.glob("callgrind.out.*"))
    if not dumps or plans < 1:
        raise RuntimeError(f"callgrind wrote {len(dumps)} dumps for {plans} plans")
    return plans, self_costs(dumps[-1])


def main() -> int:
    """Run the count (or, with ``--child``, the planner under valgrind); 2 when valgrind is
    missing or the questions file is empty."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "data" / "demo"))
    parser.add_argument("--questions", default=str(DEFAULT_QUESTIONS))
    parser.add_argument("--rounds", type=int, default=2, help="plans of every question counted")
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--flags", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    valgrind, control = shutil.which("valgrind"), shutil.which("callgrind_control")
    if valgrind is None or control is None:
        print("valgrind (with callgrind_control) is not on PATH; "
              "Debian: apt-get install valgrind", file=sys.stderr)
        return 2
    with open(args.questions, encoding="utf-8") as fh:
        if not any(line.strip() for line in fh):
            print(f"{args.questions} holds no question", file=sys.stderr)
            return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="planner-ir-") as tmp:
        flags = Path(tmp)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
               "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
        command = [valgrind, "--tool=callgrind", "--instr-atstart=no",
                   f"--callgrind-out-file={flags / 'callgrind.out'}", sys.executable, "-m",
                   "bench.bench_instructions", "--child", "--flags", str(flags),
                   "--data", args.data, "--questions", args.questions,
                   "--rounds", str(args.rounds), "--budget", str(args.budget)]
        with (flags / "valgrind.log").open("wb") as log:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log,
                                       stderr=subprocess.STDOUT)
            try:
                plans, costs = _count(flags, process, control)
            except (OSError, RuntimeError, TimeoutError, ValueError,
                    subprocess.CalledProcessError) as exc:
                detail = exc.stderr.decode(errors="replace").strip() if isinstance(
                    exc, subprocess.CalledProcessError) and exc.stderr else ""
                tail = (flags / "valgrind.log").read_text(errors="replace").splitlines()[-20:]
                print(f"instruction count failed: {exc} {detail}".rstrip(), *tail, sep="\n",
                      file=sys.stderr)
                return 1
            finally:
                (flags / "stop").touch()
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.terminate()
                    try:
                        process.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
    total = sum(costs.values())
    report = {
        "bench": "instructions",
        "revision": git_revision(),
        "plans": plans,
        "budget_tokens": args.budget,
        "minstr_per_plan": round(total / plans / 1e6, 3),
        "by_object_minstr_per_plan": {name: round(count / plans / 1e6, 3)
                                      for name, count in _grouped(costs).items()},
        "seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
