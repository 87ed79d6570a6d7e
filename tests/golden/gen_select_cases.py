"""Write select_cases.jsonl: selection requests and the plans they must produce.

Usage: python tests/golden/gen_select_cases.py   (rewrites the file beside this script)

Only regenerate when a change of selection semantics is intended, and say so in the commit:
tests/unit/test_conformance_golden.py fails whenever ``planner-svc select`` disagrees with the
committed expectations.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from planner_svc.client.select import plan_for_request


def span(
    src: str,
    start: int,
    end: int,
    tokens: int,
    weight: float,
    *,
    tx: int | str = "1751500000000000",
    kind: str = "paragraph",
    cache: bool = False,
) -> dict[str, Any]:
    return {
        "span": {"sourceId": src, "sourceVersionTx": tx, "start": start, "end": end},
        "kind": kind,
        "class": "SPAN_CLASS_CACHE" if cache else "SPAN_CLASS_TRUTH",
        "weight": weight,
        "tokens": tokens,
        "text": f"{src}[{start}:{end}]",
    }


def request(
    budget: int, pool: list[dict[str, Any]], frac: float | None = None, overlap: float | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"planModel": "v1", "budget": budget, "pool": pool}
    if frac is not None:
        out["maxFracPerSource"] = frac
    if overlap is not None:
        out["dedupOverlap"] = overlap
    return out


def random_pool(seed: int, n: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    pool = []
    for i in range(n):
        src = f"doc-{rnd.randrange(n // 20 + 1):03d}"
        start = rnd.randrange(0, 5000)
        pool.append(
            span(
                src,
                start,
                start + rnd.randrange(40, 1600),
                rnd.randrange(20, 400),
                round(rnd.random(), 6),
                kind=rnd.choice(["paragraph", "heading", "cell", "code", "body"]),
                cache=i % 11 == 0,
            )
        )
    return pool


def cases() -> list[tuple[str, dict[str, Any]]]:
    """(name, request) pairs."""
    return [
        ("single span packs", request(6000, [span("doc-1", 128, 512, 94, 0.842)])),
        ("empty pool", request(6000, [])),
        (
            "unpackable, budget full, and the scan continues",
            request(
                100,
                [
                    span("a", 0, 10, 150, 10.0),
                    span("b", 0, 10, 60, 6.0),
                    span("c", 0, 10, 50, 4.5),
                    span("d", 0, 10, 40, 2.0),
                    span("e", 0, 10, 1, 0.01),
                ],
                frac=1.0,
            ),
        ),
        (
            "cap refuses a fitting span: budget stranded",
            request(
                100,
                [
                    span("s1", 0, 100, 40, 4.0),
                    span("s2", 0, 100, 40, 3.6),
                    span("s1", 200, 300, 15, 1.2),
                ],
                frac=0.4,
            ),
        ),
        (
            "cap refuses, later spans fill the budget: nothing stranded",
            request(
                100,
                [
                    span("s1", 0, 100, 40, 4.0),
                    span("s2", 0, 100, 40, 3.6),
                    span("s1", 200, 300, 15, 1.2),
                    span("s3", 0, 100, 20, 0.2),
                ],
                frac=0.4,
            ),
        ),
        (
            "containment dedup at overlap 1.0 keeps the heavier inner span",
            request(
                1000,
                [span("s", 0, 100, 25, 0.5), span("s", 20, 40, 5, 0.9), span("s", 1, 101, 25, 0.4)],
                frac=1.0,
                overlap=1.0,
            ),
        ),
        (
            "partial overlap above the threshold dedups, exactly at it does not",
            request(
                1000,
                [
                    span("s", 0, 100, 10, 0.9),
                    span("s", 10, 110, 10, 0.8),
                    span("s", 200, 300, 10, 0.7),
                    span("s", 250, 350, 10, 0.6),
                ],
                frac=1.0,
                overlap=0.5,
            ),
        ),
        (
            "source versions never dedup each other; the cap spans versions",
            request(
                100,
                [
                    span("s", 0, 100, 20, 0.9, tx="1"),
                    span("s", 0, 100, 20, 0.8, tx="2"),
                    span("s", 0, 100, 20, 0.7, tx="-9223372036854775808"),
                    span("t", 0, 100, 20, 0.6, tx=1),
                ],
                frac=0.4,
                overlap=0.0,
            ),
        ),
        (
            "zero-token spans: density floor, always packed",
            request(
                5,
                [
                    span("s", 0, 10, 0, 0.3),
                    span("s", 20, 30, 1, 0.5),
                    span("s", 40, 50, 2, 0.7),
                    span("t", 0, 10, 0, 0.0),
                ],
                frac=0.5,
            ),
        ),
        (
            "density ties break by coordinates",
            request(20, [span(s, 0, 10, 10, 1.0) for s in ("c", "a", "b")], frac=1.0),
        ),
        (
            "non-ASCII source ids in canonical order, cache class",
            request(
                200,
                [
                    span("東京", 0, 9, 9, 0.9),
                    span("ä", 0, 9, 9, 0.2, cache=True, kind="body"),
                    span("B", 0, 9, 9, 0.6, kind="heading"),
                    span("a", 0, 9, 9, 0.1, cache=True),
                    span("😀", 0, 9, 9, 0.3, kind="code"),
                ],
                frac=1.0,
            ),
        ),
        ("budget zero", request(0, [span("a", 0, 10, 1, 1.0), span("b", 0, 10, 0, 0.5)])),
        (
            "server defaults for the ratios (0.4, 0.5)",
            request(
                1000,
                [span("one", i * 100, i * 100 + 80, 100, 1.0 - i / 100) for i in range(8)]
                + [span("two", 0, 500, 300, 0.9), span("two", 100, 400, 150, 0.8)],
            ),
        ),
        ("seeded pool of 200 spans", request(6000, random_pool(11, 200), frac=0.1, overlap=0.5)),
        ("seeded pool of 500 spans", request(6000, random_pool(12, 500), frac=0.3, overlap=0.7)),
    ]


def expected(req: dict[str, Any]) -> dict[str, Any]:
    plan = json_format.MessageToDict(plan_for_request(req))
    stats = plan.get("stats", {})
    return {
        "budget": int(plan.get("budget", 0)),
        "used": int(plan.get("used", 0)),
        "planHash": plan["planHash"],
        "spans": [
            [
                s["span"]["sourceId"],
                int(s["span"].get("sourceVersionTx", 0)),
                int(s["span"].get("start", 0)),
                int(s["span"]["end"]),
            ]
            for s in plan.get("spans", [])
        ],
        "stats": {
            name: int(stats.get(name, 0))
            for name in (
                "poolSpans",
                "selectedSpans",
                "deduped",
                "skippedUnpackable",
                "skippedBudgetFull",
                "capSkipped",
                "budgetStrandedByCap",
                "capTokens",
            )
        },
    }


def main() -> None:
    path = Path(__file__).with_name("select_cases.jsonl")
    lines = [
        json.dumps({"name": name, "request": req, "expected": expected(req)}, ensure_ascii=False)
        for name, req in cases()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} cases to {path.name}", file=sys.stderr)


if __name__ == "__main__":
    main()
