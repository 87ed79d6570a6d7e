"""Write tests/fixtures/wiki_fixture.jsonl: a small, deterministic slice of the demo corpus.

Usage: python scripts/make_fixture.py [--corpus PATH] [--questions PATH] [--out PATH]

The slice holds, in this order of priority:

1. every gold article of the development questions (``gold`` titles of ``dev.jsonl``);
2. a seeded random sample of other articles (unrelated distractors);
3. the articles the first two groups mention by title (related distractors and hop targets),
   most-mentioned first (ties by title), while the slice stays within ``--max-articles``
   articles and ``--max-bytes`` bytes.

Records use the corpus format (``planner_svc.ingest.corpus``) and are written sorted by source
id, so the same inputs always give the same file. The text is Wikipedia's, CC BY-SA.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner_svc.demo.corpus import (  # noqa: E402
    CORPUS_FILE,
    DEFAULT_CACHE,
    fetch_corpus,
    write_jsonl,
)
from planner_svc.ingest.mentions import TitleMatcher  # noqa: E402

DEFAULT_QUESTIONS = ROOT / "bench" / "eval" / "dev.jsonl"
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "wiki_fixture.jsonl"


def _line_bytes(record: dict[str, Any]) -> int:
    return len(json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8")) + 1


def select(
    records: dict[str, dict[str, Any]],
    gold: list[str],
    *,
    seed: int,
    sample: int,
    max_articles: int,
    max_bytes: int,
) -> list[str]:
    """Titles of the slice (see the module docstring), in the order they were chosen.

    Raises:
        KeyError: a gold title is not in the corpus.
    """
    chosen: list[str] = []
    size = 0

    def take(title: str) -> bool:
        nonlocal size
        cost = _line_bytes(records[title])
        if title in chosen or len(chosen) >= max_articles or size + cost > max_bytes:
            return False
        chosen.append(title)
        size += cost
        return True

    for title in gold:
        if title not in records:
            raise KeyError(f"gold title {title!r} is not in the corpus")
        take(title)
    others = sorted(set(records) - set(chosen))
    for title in random.Random(seed).sample(others, min(sample, len(others))):
        take(title)
    matcher = TitleMatcher()
    for title in records:
        matcher.add(title, title)
    counts: Counter[str] = Counter()
    for title in chosen:
        counts.update(matcher.find(records[title]["text"]) - {title})
    for title, _n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        if title not in chosen:
            take(title)
    return chosen


def main(argv: list[str] | None = None) -> int:
    """Build the fixture; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        type=Path,
        default=ROOT / DEFAULT_CACHE / CORPUS_FILE,
        help="corpus JSONL (fetched with pip when missing at the default path)",
    )
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=20260801)
    parser.add_argument("--sample", type=int, default=60, help="random distractor articles")
    parser.add_argument("--max-articles", type=int, default=400)
    parser.add_argument("--max-bytes", type=int, default=300_000)
    args = parser.parse_args(argv)

    if not args.corpus.is_file():
        args.corpus, _created = fetch_corpus(ROOT / DEFAULT_CACHE)
    records: dict[str, dict[str, Any]] = {}
    with args.corpus.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            records[record["title"]] = record
    gold: list[str] = []
    with args.questions.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                for title in json.loads(line)["gold"]:
                    if title not in gold:
                        gold.append(title)
    chosen = select(
        records,
        gold,
        seed=args.seed,
        sample=args.sample,
        max_articles=args.max_articles,
        max_bytes=args.max_bytes,
    )
    missing = [t for t in gold if t not in chosen]
    if missing:
        print(f"gold articles do not fit: {missing}", file=sys.stderr)
        return 1
    ordered = sorted((records[t] for t in chosen), key=lambda r: r["sourceId"])
    count = write_jsonl(ordered, args.out)
    size = args.out.stat().st_size
    print(f"{args.out}: {count} articles ({len(gold)} gold), {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
