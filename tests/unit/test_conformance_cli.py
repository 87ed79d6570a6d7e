"""``planner-svc select`` as other-language clients run it: a subprocess fed JSON on stdin."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.client.select import plan_for_request
from planner_svc.core.plan_hash import plan_hash
from planner_svc.server.convert import plan_from_proto

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "planner_svc.cli", "select"]


def run_select(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def span(
    src: str, start: int, end: int, tokens: int | str, weight: float | str, tx: int | str = 1
) -> dict[str, Any]:
    return {
        "span": {"sourceId": src, "sourceVersionTx": tx, "start": start, "end": end},
        "kind": "paragraph",
        "class": "SPAN_CLASS_TRUTH",
        "weight": weight,
        "tokens": tokens,
        "text": "t",
    }


def random_request(rnd: random.Random) -> dict[str, Any]:
    pool = []
    for _ in range(rnd.randrange(0, 25)):
        start = rnd.randrange(0, 400)
        tx = rnd.choice([1751500000000000, -3, 0])
        pool.append(
            {
                "span": {
                    "sourceId": rnd.choice(["a", "b", "c", "東"]),
                    "sourceVersionTx": str(tx) if rnd.random() < 0.5 else tx,
                    "start": start,
                    "end": start + rnd.randrange(1, 120),
                },
                "kind": rnd.choice(["paragraph", "heading", "code"]),
                "class": rnd.choice(["SPAN_CLASS_TRUTH", "SPAN_CLASS_CACHE"]),
                "weight": rnd.choice([0.0, 0.5, round(rnd.random(), 4), rnd.random()]),
                "tokens": rnd.randrange(0, 200),
                "text": "x" * rnd.randrange(0, 5),
            }
        )
    req: dict[str, Any] = {"planModel": "v1", "budget": rnd.randrange(0, 800), "pool": pool}
    if rnd.random() < 0.7:
        req["maxFracPerSource"] = rnd.choice([0.4, 1.0, round(rnd.uniform(0.05, 1.0), 3)])
    if rnd.random() < 0.7:
        req["dedupOverlap"] = rnd.choice([0.0, 0.5, 1.0, round(rnd.random(), 3)])
    return req


def parse_plan(line: str) -> plan_pb2.EvidencePlan:
    msg = plan_pb2.EvidencePlan()
    json_format.Parse(line, msg)
    return msg


def recomputed_hash(msg: plan_pb2.EvidencePlan) -> str:
    plan = plan_from_proto(msg)
    return plan_hash(plan.plan_model, plan.budget, plan.used, plan.spans)


def test_one_pretty_printed_request() -> None:
    request = {
        "planModel": "v1",
        "budget": 6000,
        "pool": [
            span("doc-1", 128, 512, 94, 0.842, tx="1751500000000000"),
            span("doc-1", 130, 500, 90, 0.5, tx="1751500000000000"),
        ],
    }
    proc = run_select(json.dumps(request, indent=2))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    plan = parse_plan(lines[0])
    assert plan.plan_model == "v1"
    assert (plan.budget, plan.used) == (6000, 94)
    assert [(s.span.source_id, s.span.start, s.span.end) for s in plan.spans] == [
        ("doc-1", 128, 512)
    ]
    assert plan.stats.deduped == 1
    assert plan.stats.cap_tokens == 2400  # server default max_frac_per_source 0.4
    assert plan.spans[0].text == "t"
    # Same plan as the published vector "one truth span" (text is not hashed).
    assert plan.plan_hash == "b3:3e25a5328b6a71716ef10739d73c8b6719fa04e6735bbd9b3f7c667179353733"
    assert recomputed_hash(plan) == plan.plan_hash


def test_thousand_json_lines_in_one_process() -> None:
    rnd = random.Random(1000)
    requests = [random_request(rnd) for _ in range(1000)]
    proc = run_select("".join(json.dumps(r) + "\n" for r in requests))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1000
    for request, line in zip(requests, lines, strict=True):
        plan = parse_plan(line)
        assert plan.budget == request["budget"]
        assert plan.used <= plan.budget
        assert plan.stats.pool_spans == len(request["pool"])
        keys = [
            (s.span.source_id, s.span.source_version_tx, s.span.start, s.span.end)
            for s in plan.spans
        ]
        assert keys == sorted(keys)
        assert plan.plan_hash == recomputed_hash(plan)
        # Byte-identical to the in-process answer.
        expected = json_format.MessageToDict(
            plan_for_request(request), always_print_fields_with_no_presence=True
        )
        assert json.loads(line) == expected
    assert len({json.loads(line)["planHash"] for line in lines}) > 900


def test_64_bit_fields_as_strings_or_numbers() -> None:
    as_numbers = {
        "planModel": "v1",
        "budget": 300,
        "pool": [
            span("a", 0, 100, 40, 0.9, tx=1751500000000000),
            span("b", 5, 50, 30, 0.7, tx=-42),
        ],
    }
    as_strings = {
        "planModel": "v1",
        "budget": "300",
        "pool": [
            span("a", "0", "100", "40", 0.9, tx="1751500000000000"),  # type: ignore[arg-type]
            span("b", "5", "50", "30", "0.7", tx="-42"),  # type: ignore[arg-type]
        ],
    }
    proc = run_select(json.dumps(as_numbers) + "\n" + json.dumps(as_strings) + "\n")
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first == second
    plan = json.loads(first)
    assert plan["used"] == "70"  # proto3 JSON writes 64-bit integers as strings
    assert plan["spans"][1]["span"]["sourceVersionTx"] == "-42"


def test_extreme_64_bit_values_round_trip() -> None:
    request = {
        "budget": "18446744073709551615",
        "maxFracPerSource": 1.0,
        "pool": [span("a", 0, 1, "18446744073709551615", 1.0, tx="-9223372036854775808")],
    }
    proc = run_select(json.dumps(request))
    assert proc.returncode == 0, proc.stderr
    plan = parse_plan(proc.stdout)
    assert plan.used == 2**64 - 1
    assert plan.stats.cap_tokens == 2**64 - 1
    assert plan.spans[0].span.source_version_tx == -(2**63)
    assert plan.plan_hash == recomputed_hash(plan)


def test_explain_flag_reports_every_fate() -> None:
    request = {
        "budget": 50,
        "maxFracPerSource": 0.4,
        "pool": [
            span("a", 0, 100, 10, 0.9),
            span("a", 10, 100, 9, 0.5),
            span("b", 0, 100, 500, 5.0),
            span("a", 200, 300, 25, 1.0),
            span("c", 0, 100, 15, 0.6),
            span("d", 0, 100, 30, 0.3),
        ],
    }
    proc = run_select(json.dumps(request), "--explain")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    fates = [(e["candidate"]["span"]["sourceId"], e["fate"]) for e in plan["explanations"]]
    assert fates == [
        ("a", "CANDIDATE_FATE_PACKED"),
        ("a", "CANDIDATE_FATE_DEDUPED"),
        ("a", "CANDIDATE_FATE_CAP_BLOCKED"),
        ("b", "CANDIDATE_FATE_UNPACKABLE"),
        ("c", "CANDIDATE_FATE_PACKED"),
        ("d", "CANDIDATE_FATE_BUDGET_FULL"),
    ]
    assert plan["explanations"][1]["dedupedBy"] == {
        "sourceId": "a",
        "sourceVersionTx": "1",
        "start": "0",
        "end": "100",
    }
    # Without the flag the list is empty.
    plain = json.loads(run_select(json.dumps(request)).stdout)
    assert plain["explanations"] == []
    assert plain["planHash"] == plan["planHash"]


def test_empty_input_writes_nothing() -> None:
    proc = run_select("\n  \n")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def pool_request(*pool: dict[str, Any]) -> str:
    return json.dumps({"budget": 10, "pool": list(pool)})


def good_line() -> str:
    return json.dumps({"budget": 10, "pool": [span("a", 0, 5, 1, 0.5)]})


@pytest.mark.parametrize(
    ("request_text", "needle"),
    [
        (pool_request(span("a", 0, 5, 1, "NaN")), "pool[0].weight"),
        (pool_request(span("a", 0, 5, 1, -0.5)), "pool[0].weight"),
        (pool_request(span("a", 0, 5, 1, 0.5), span("a", 7, 7, 1, 0.5)), "pool[1].span.end"),
        (
            '{"budget": 10, "pool": [{"span": {"sourceId": "a", "start": 0, "end": 5}, '
            '"kind": "body", "weight": 0.5, "tokens": 1}]}',
            "pool[0].class",
        ),
        (
            '{"budget": 10, "pool": [{"span": {"sourceId": "a", "start": 0, "end": 5}, '
            '"class": "SPAN_CLASS_TRUTH", "weight": 0.5, "tokens": 1}]}',
            "pool[0].kind",
        ),
        ('{"budget": 10, "pool": [{"weight": 0.5}]}', "pool[0].span"),
        (
            '{"budget": 10, "pool": [{"span": {"start": 0, "end": 5}, '
            '"class": "SPAN_CLASS_TRUTH", "weight": 0.5}]}',
            "pool[0].span.sourceId",
        ),
        ('{"budget": 10, "maxFracPerSource": 1.5}', "maxFracPerSource"),
        ('{"budget": 10, "maxFracPerSource": 0}', "maxFracPerSource"),
        ('{"budget": 10, "dedupOverlap": -0.25}', "dedupOverlap"),
        ('{"budget": -1}', "budget"),
        ('{"budget": "ten"}', "budget"),
        ('{"budget": 10, "planModel": "v2"}', "planModel"),
        ('{"budget": 10, "bogus": 1}', "bogus"),
        ('{"budget": 10, "pool": [{"span": {"sourceVersionTx": "9223372036854775808"}}]}',
         "sourceVersionTx"),
        ("[1, 2]", "request"),
        ("{not json", "line 1"),
    ],
)
def test_invalid_request_one_stderr_line_naming_the_field(request_text: str, needle: str) -> None:
    proc = run_select(request_text + "\n")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.stderr.endswith("\n")
    assert lines[0].startswith("planner-svc select: invalid request: line 1")
    assert needle in lines[0]


def test_invalid_line_after_valid_ones_names_its_line() -> None:
    bad = json.dumps({"budget": 10, "pool": [span("a", 0, 5, 1, "-Infinity")]})
    proc = run_select("\n".join([good_line(), good_line(), bad, good_line()]) + "\n")
    assert proc.returncode == 2
    assert len(proc.stdout.splitlines()) == 2  # plans of the earlier lines were written
    assert proc.stderr.splitlines() == [
        "planner-svc select: invalid request: line 3: pool[0].weight: "
        "must be finite and >= 0, got -inf"
    ]
    garbled = run_select(good_line() + "\n{oops\n")
    assert garbled.returncode == 2
    assert len(garbled.stdout.splitlines()) == 1
    assert len(garbled.stderr.splitlines()) == 1
    assert "line 2" in garbled.stderr
    assert "Traceback" not in garbled.stderr


@pytest.mark.parametrize(
    ("request_text", "line"),
    [
        ("[" * 1000, 1),  # unterminated, as a fuzzer sends it
        ("[" * 1000 + "]" * 1000, 1),
        ('{"budget": 10, "pool": ' + "[" * 990 + "]" * 990 + "}", 1),
        (good_line() + "\n" + "[" * 5000, 2),
    ],
)
def test_deeply_nested_json_one_line_exit_2(request_text: str, line: int) -> None:
    proc = run_select(request_text + "\n")
    assert proc.returncode == 2
    assert proc.stderr == (
        f"planner-svc select: invalid request: line {line}: nests arrays or objects too "
        "deeply to be a request\n"
    )
    assert len(proc.stdout.splitlines()) == line - 1


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "planner-svc"
    assert script.exists(), "reinstall the package: pip install -e '.[dev]'"
    proc = subprocess.run(
        [str(script), "select"], input=good_line(), capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["used"] == "1"
