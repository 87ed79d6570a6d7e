"""The plan golden: every development question's plan hash on the demo corpus.

Usage: python scripts/plan_golden.py [--data DIR] [--store URL] [--write]

Plans each question of ``bench/eval/dev.jsonl`` at budgets 500 and 1500 tokens over the demo
data directory, in process, as of a fixed time after the corpus (so the hashes are equal on
every machine), and compares the hashes with ``tests/golden/plan_dev.json`` (``--write``
replaces the file instead). A question recall declines is recorded as ``declined``. The demo
store is built first when the directory has none (``fetch-corpus`` and ``ingest``, as ``make
demo`` does). With ``--store postgresql://...`` the plans come from that shared store (the
corpus is ingested into it when it holds no source) and ``--data`` is the replica's directory
for its derived indexes: the hashes must equal the golden, as on the embedded store.

A change meant to move ranking updates the golden in its own commit, with the development eval
before and after (README, "Plan quality"); any other change must leave it as it is.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "plan_dev.json"
QUESTIONS = ROOT / "bench" / "eval" / "dev.jsonl"
BUDGETS = (500, 1500)
AS_OF_US = 1_800_000_000_000_000
"""The plans' as-of valid and transaction time (2027-01-15T08:00:00Z), after the corpus."""


def ensure_demo_store(data: Path, store: str | None = None) -> None:
    """Build the demo store (in ``data``, or in the shared ``store``) when it holds none
    (downloads the corpus once)."""
    if store is None and (data / "store.sqlite").exists():
        return
    if store is not None:
        from planner_svc.store.open import open_store

        with open_store(data, store) as opened:
            if opened.count_sources():
                return
    cli = [sys.executable, "-m", "planner_svc.cli"]
    subprocess.run([*cli, "fetch-corpus"], check=True, cwd=ROOT)
    corpus = ROOT / ".cache" / "corpus" / "wiki_en.jsonl"
    where = ["--data", str(data)] if store is None else ["--store", store]
    subprocess.run([*cli, "ingest", str(corpus), *where], check=True, cwd=ROOT)


def plan_hashes(data: Path, store: str | None = None) -> dict[str, str]:
    """``"<question id>@<budget>"`` -> plan hash (or ``declined``), for every development
    question and budget, planned in process over ``data`` (or the shared ``store``)."""
    from planner_svc.core.errors import InsufficientEvidence
    from planner_svc.recall.request import question_query
    from planner_svc.server.services import Services
    from planner_svc.settings import ServerSettings

    services = Services.open(ServerSettings(data_dir=data, store=store))
    try:
        planner = services.planner
        out: dict[str, str] = {}
        for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            question = json.loads(line)
            for budget in BUDGETS:
                query = question_query(question["question"], config=planner.config,
                                       recall=planner.recall, now_us=AS_OF_US,
                                       budget_tokens=budget)
                try:
                    out[f"{question['id']}@{budget}"] = planner.plan(query).plan.plan_hash
                except InsufficientEvidence:
                    out[f"{question['id']}@{budget}"] = "declined"
        return out
    finally:
        services.close()


def golden_document(data: Path, store: str | None = None) -> dict[str, object]:
    """The golden file's content for the store in ``data`` (or the shared ``store``, with its
    derived indexes in ``data``)."""
    from planner_svc.embed import default_embedder

    return {
        "questions": QUESTIONS.relative_to(ROOT).as_posix(),
        "budgets": list(BUDGETS),
        "asOfUs": str(AS_OF_US),
        "embedder": default_embedder().name,
        "plans": plan_hashes(data, store),
    }


def differences(expected: dict[str, str], got: dict[str, str]) -> list[str]:
    """One line per plan whose hash differs, is missing or is new."""
    def order(key: str) -> tuple[str, int]:
        qid, budget = key.split("@")
        return qid, int(budget)

    lines = []
    for key in sorted(set(expected) | set(got), key=order):
        if expected.get(key) != got.get(key):
            lines.append(f"{key}: golden {expected.get(key, '-')}, now {got.get(key, '-')}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="data/demo", help="the demo data directory")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="plan over this shared store (postgresql://...) instead")
    parser.add_argument("--write", action="store_true", help="replace the golden file")
    args = parser.parse_args()
    data = Path(args.data) if Path(args.data).is_absolute() else ROOT / args.data
    ensure_demo_store(data, args.store)
    document = golden_document(data, args.store)
    if args.write:
        GOLDEN.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        plans = document["plans"]
        assert isinstance(plans, dict)
        print(f"wrote {len(plans)} plan hashes to {GOLDEN.relative_to(ROOT)}")
        return 0
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    diff = differences(expected["plans"], document["plans"])  # type: ignore[arg-type]
    for line in diff:
        print(line)
    print(f"{len(diff)} of {len(expected['plans'])} plans differ from the golden")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
