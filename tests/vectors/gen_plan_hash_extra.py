"""Write plan_hash_v1_extra.jsonl: edge-case plans hashed by planner_svc.core.plan_hash.

Usage: python tests/vectors/gen_plan_hash_extra.py   (rewrites the file beside this script)

The file is committed; tests/unit/test_core_plan_hash.py reproduces every line with the
implementation and with an independent encoder. Regenerating must leave it unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

from planner_svc.core.model import PLAN_MODEL, Location, PlannedSpan, SpanClass, SpanRef
from planner_svc.core.plan_hash import plan_hash

U64_MAX = 2**64 - 1
I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
SAFE_INT = 2**53  # larger integers are written as JSON strings


def _int(value: int) -> int | str:
    return value if -SAFE_INT < value < SAFE_INT else str(value)


def _span(
    source_id: str,
    tx: int,
    start: int,
    end: int,
    kind: str,
    span_class: SpanClass,
    weight: float,
    tokens: int,
) -> PlannedSpan:
    return PlannedSpan(
        span=SpanRef(source_id, tx, start, end),
        kind=kind,
        span_class=span_class,
        weight=weight,
        tokens=tokens,
    )


def _to_json(name: str, budget: int, used: int, spans: list[PlannedSpan]) -> dict[str, Any]:
    spans = sorted(spans, key=lambda s: s.span.key)
    return {
        "name": name,
        "planModel": PLAN_MODEL,
        "budget": _int(budget),
        "used": _int(used),
        "spans": [
            {
                "span": {
                    "sourceId": s.span.source_id,
                    "sourceVersionTx": str(s.span.source_version_tx),
                    "start": _int(s.span.start),
                    "end": _int(s.span.end),
                },
                "kind": s.kind,
                "class": f"SPAN_CLASS_{s.span_class.name}",
                "weight": s.weight,
                "tokens": _int(s.tokens),
            }
            for s in spans
        ],
        "planHash": plan_hash(PLAN_MODEL, budget, used, spans),
    }


def _as_sent(name: str, budget: int, used: int, spans: list[PlannedSpan]) -> dict[str, Any]:
    """A vector in the proto3 JSON mapping exactly as the service writes a plan: fields at
    their zero value omitted, every 64-bit integer a string (only the hashed fields kept)."""
    from google.protobuf import json_format

    from planner_svc.core.model import EvidencePlan, PlanStats
    from planner_svc.server.convert import plan_to_proto

    spans = sorted(spans, key=lambda s: s.span.key)
    plan = EvidencePlan(plan_model=PLAN_MODEL, spans=tuple(spans), budget=budget, used=used,
                        stats=PlanStats(), plan_hash=plan_hash(PLAN_MODEL, budget, used, spans))
    sent = json_format.MessageToDict(plan_to_proto(plan))
    hashed = ("planModel", "budget", "used", "spans", "planHash")
    return {"name": name, **{key: sent[key] for key in hashed if key in sent}}


def vectors() -> list[dict[str, Any]]:
    """The extra vectors, deterministic (seeded)."""
    T, C = SpanClass.TRUTH, SpanClass.CACHE
    out: list[dict[str, Any]] = []

    rnd = random.Random(20240601)
    kinds = ("paragraph", "heading", "cell", "code", "body")
    many: list[PlannedSpan] = []
    for i in range(40):
        start = rnd.randrange(0, 50_000)
        many.append(
            _span(
                f"src-{i % 5}",
                1751500000000000 + (i % 3),
                start,
                start + rnd.randrange(1, 2_000),
                kinds[i % 5],
                C if i % 7 == 0 else T,
                rnd.random(),
                rnd.randrange(0, 400),
            )
        )
    out.append(_to_json("forty spans over five sources", 6000, sum(s.tokens for s in many), many))

    out.append(
        _to_json(
            "max u64 tokens, budget and used",
            U64_MAX,
            U64_MAX,
            [_span("big", 1, 0, 1, "body", T, 0.5, U64_MAX)],
        )
    )
    out.append(
        _to_json(
            "i64 min and max transaction times",
            100,
            3,
            [
                _span("t", I64_MIN, 0, 4, "paragraph", T, 0.25, 1),
                _span("t", I64_MAX, 0, 4, "paragraph", T, 0.25, 2),
            ],
        )
    )
    long_kind = ("見出し-" + "é" + "e\u0301" + "🧪" + "\u200d") * 50
    out.append(
        _to_json(
            "long unicode kind (more than 255 UTF-8 bytes)",
            500,
            9,
            [_span("doc", 7, 10, 20, long_kind, T, 0.75, 9)],
        )
    )
    out.append(
        _to_json(
            "cache spans only",
            1000,
            70,
            [
                _span("summary-a", 1751500000000000, 0, 800, "body", C, 0.45, 60),
                _span("summary-b", 1751500000000000, 0, 80, "heading", C, 0.15, 10),
            ],
        )
    )
    out.append(
        _to_json(
            "subnormal weight 5e-324",
            10,
            1,
            [_span("tiny", 0, 0, 1, "body", T, 5e-324, 1)],
        )
    )
    out.append(
        _to_json(
            "negative zero weight (bits 0x8000000000000000)",
            10,
            1,
            [_span("zero", 0, 0, 1, "body", T, -0.0, 1)],
        )
    )
    out.append(
        _to_json(
            "largest finite weight",
            10,
            1,
            [_span("huge", 0, 0, 1, "body", T, 1.7976931348623157e308, 1)],
        )
    )
    out.append(
        _to_json(
            "max u64 offsets",
            10,
            2,
            [_span("far", 1, U64_MAX - 1, U64_MAX, "code", T, 1.0, 2)],
        )
    )
    out.append(
        _to_json(
            "emoji source id and ordering by code point",
            100,
            3,
            [
                _span("😀", 1, 0, 4, "body", T, 0.5, 1),
                _span("Z", 1, 0, 4, "body", T, 0.5, 1),
                _span("a", 1, 0, 4, "body", T, 0.5, 1),
            ],
        )
    )
    out.append(
        _to_json(
            "source ids by code point: U+FF21, U+FFFD before U+10000, U+1F600 (not UTF-16 order)",
            100,
            4,
            [
                _span("\U0001F600", 1, 0, 4, "body", T, 0.5, 1),
                _span("\U00010000", 1, 0, 4, "body", T, 0.5, 1),
                _span("\uFFFD", 1, 0, 4, "body", T, 0.5, 1),
                _span("\uFF21", 1, 0, 4, "body", T, 0.5, 1),
            ],
        )
    )
    out.append(
        _as_sent(
            "as the service sends it: zero fields omitted, 64-bit integers as strings",
            1500,
            9,
            [
                _span("doc", 1800000000000000, 0, 12, "paragraph", T, 0.0, 0),
                _span("doc", 1800000000000000, 12, 40, "body", C, 0.5, 9),
            ],
        )
    )
    out.append(_as_sent("empty plan as the service sends it", 0, 0, []))
    out.append(
        _as_sent(
            "spans with locations as the service sends them (location is not hashed)",
            300,
            75,
            [
                dataclasses.replace(
                    _span("handbook.pdf", 1796000000000000, 329, 542, "paragraph", T, 0.025,
                          60),
                    location=Location(page=2, heading_path=("Swarm control",)),
                ),
                dataclasses.replace(
                    _span("varroa.html", 1796000000000001, 383, 627, "paragraph", T, 1.0, 9),
                    location=Location(heading_path=("The varroa mite", "Oxalic acid in winter")),
                ),
                dataclasses.replace(
                    _span("mite-counts.ipynb", 1796000000000002, 226, 233, "heading", T, 0.5,
                          6),
                    location=Location(heading_path=("Finding",), cell_index=3),
                ),
            ],
        )
    )
    out.append(
        _to_json(
            "budget unused (used 0) with a zero-token span",
            6000,
            0,
            [_span("z", 1751500000000000, 5, 6, "heading", T, 0.1, 0)],
        )
    )
    return out


def main() -> None:
    path = Path(__file__).with_name("plan_hash_v1_extra.jsonl")
    lines = [json.dumps(v, ensure_ascii=False, separators=(", ", ": ")) for v in vectors()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
