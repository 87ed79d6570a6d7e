"""Golden selection cases: committed requests and the plans ``planner-svc select`` must return.

A failure means selection semantics changed. If that is intended, regenerate with
``python tests/golden/gen_select_cases.py`` and explain the change in the commit.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import blake3

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
CASES = [
    json.loads(line)
    for line in (GOLDEN / "select_cases.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


def summary(plan: dict[str, Any]) -> dict[str, Any]:
    stats = plan["stats"]
    return {
        "budget": int(plan["budget"]),
        "used": int(plan["used"]),
        "planHash": plan["planHash"],
        "spans": [
            [
                s["span"]["sourceId"],
                int(s["span"]["sourceVersionTx"]),
                int(s["span"]["start"]),
                int(s["span"]["end"]),
            ]
            for s in plan["spans"]
        ],
        "stats": {name: int(stats[name]) for name in CASES[0]["expected"]["stats"]},
    }


def hash_from_json(plan: dict[str, Any]) -> str:
    """Plan hash v1 straight from the proto3 JSON of a plan (see tests/vectors/README.md)."""

    def text(value: str) -> bytes:
        raw = value.encode()
        return len(raw).to_bytes(4, "big") + raw

    def u64(value: str | int) -> bytes:
        return int(value).to_bytes(8, "big")

    out = text(plan["planModel"]) + u64(plan["budget"]) + u64(plan["used"])
    out += u64(len(plan["spans"]))
    for s in plan["spans"]:
        ref = s["span"]
        out += text(ref["sourceId"]) + int(ref["sourceVersionTx"]).to_bytes(8, "big", signed=True)
        out += u64(ref["start"]) + u64(ref["end"]) + text(s["kind"])
        out += bytes([{"SPAN_CLASS_TRUTH": 1, "SPAN_CLASS_CACHE": 2}[s["class"]]])
        out += struct.pack(">d", float(s["weight"])) + u64(s["tokens"])  # weight bits, BE
    return "b3:" + blake3.blake3(out).hexdigest()


def test_golden_file_has_a_dozen_distinct_cases() -> None:
    assert len(CASES) >= 12
    assert len({c["name"] for c in CASES}) == len(CASES)
    assert len({c["expected"]["planHash"] for c in CASES}) == len(CASES)


def test_golden_requests_match_their_generator() -> None:
    spec = importlib.util.spec_from_file_location("gen_cases", GOLDEN / "gen_select_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    generated = [[name, req] for name, req in module.cases()]
    assert generated == [[c["name"], c["request"]] for c in CASES]


def test_select_reproduces_every_golden_case() -> None:
    stdin = "".join(json.dumps(c["request"]) + "\n" for c in CASES)
    proc = subprocess.run(
        [sys.executable, "-m", "planner_svc.cli", "select"],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(CASES)
    for case, line in zip(CASES, lines, strict=True):
        plan = json.loads(line)
        assert summary(plan) == case["expected"], case["name"]
        assert hash_from_json(plan) == case["expected"]["planHash"], case["name"]


def test_golden_cases_cover_each_outcome() -> None:
    stats = [c["expected"]["stats"] for c in CASES]
    for counter in ("deduped", "skippedUnpackable", "skippedBudgetFull", "capSkipped"):
        assert any(s[counter] > 0 for s in stats), counter
    assert any(s["budgetStrandedByCap"] > 0 for s in stats)
    assert any(s["capSkipped"] > 0 and s["budgetStrandedByCap"] == 0 for s in stats)
