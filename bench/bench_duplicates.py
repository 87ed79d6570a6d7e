"""Measures the near-duplicate rules of research sessions on labelled question pairs.

Usage: python -m bench.bench_duplicates [--pairs bench/eval/question-pairs.jsonl]

Reads pairs of questions labelled ``same`` (a paraphrase: the same research thread) or not
(distinct questions, mostly on the same subject: another aspect, another entity in the same
template, another modifier, or the same words in another order). For each pair it computes what
a session would decide with the service's embedder: same words
(:func:`~planner_svc.research.duplicates.wording_key`), else the similar-meaning score
(:meth:`~planner_svc.research.duplicates.DuplicateScreen.similarity`). Prints one JSON object:
the git revision, the embedder, and for each threshold from 0.50 to 1.00 in steps of 0.05 the
paraphrases caught and the distinct pairs refused (per kind), then ``chosen``: the lowest
threshold at which no distinct pair is refused by the similar-meaning rule (pairs refused for
having the same words are counted apart: word order is not read, by design), with its recall.
``planner_svc.research.duplicates.DEFAULT_DUPLICATE_SIMILARITY`` is that value.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "bench" / "eval" / "question-pairs.jsonl"
GRID = tuple(round(0.5 + 0.05 * i, 2) for i in range(11))


@dataclass(frozen=True, slots=True)
class Scored:
    """One labelled pair and what the rules make of it."""

    id: str
    kind: str
    same: bool
    same_words: bool
    similarity: float


def load(path: Path) -> list[dict[str, Any]]:
    """The pairs of a JSON Lines file (``id``, ``kind``, ``same``, ``a``, ``b``)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def score(pairs: list[dict[str, Any]]) -> tuple[str, list[Scored]]:
    """The embedder's name and every pair scored with it."""
    from planner_svc.embed import default_embedder
    from planner_svc.research.duplicates import DuplicateScreen, wording_key

    embedder = default_embedder()
    screen = DuplicateScreen(embedder=embedder)
    out = []
    for p in pairs:
        same_words = wording_key(p["a"]) == wording_key(p["b"])
        out.append(Scored(id=p["id"], kind=p["kind"], same=bool(p["same"]),
                          same_words=same_words,
                          similarity=1.0 if same_words else screen.similarity(p["a"], p["b"])))
    return embedder.name, out


def table(scored: list[Scored]) -> dict[str, Any]:
    """Per threshold: paraphrases caught, distinct pairs refused by each rule, and the choice."""
    paraphrases = [s for s in scored if s.same]
    distinct = [s for s in scored if not s.same]
    rows = []
    for t in GRID:
        caught = [s for s in paraphrases if s.same_words or s.similarity >= t]
        refused = [s for s in distinct if not s.same_words and s.similarity >= t]
        rows.append({
            "threshold": t,
            "paraphrases_caught": len(caught),
            "recall": round(len(caught) / len(paraphrases), 3),
            "caught_by_kind": dict(sorted(Counter(s.kind for s in caught).items())),
            "distinct_refused_similar": len(refused),
            "refused_by_kind": dict(sorted(Counter(s.kind for s in refused).items())),
            "refused_ids": [s.id for s in refused],
        })
    chosen = next((r for r in rows if r["distinct_refused_similar"] == 0), rows[-1])
    return {
        "paraphrases": len(paraphrases),
        "distinct": len(distinct),
        "distinct_refused_same_words": sorted(s.id for s in distinct if s.same_words),
        "paraphrases_by_kind": dict(sorted(Counter(s.kind for s in paraphrases).items())),
        "distinct_by_kind": dict(sorted(Counter(s.kind for s in distinct).items())),
        "highest_distinct_similarity": max(
            (s.similarity for s in distinct if not s.same_words), default=0.0),
        "thresholds": rows,
        "chosen": {"threshold": chosen["threshold"], "recall": chosen["recall"]},
    }


def git_revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS, help="labelled pairs (JSON Lines)")
    args = parser.parse_args(argv)
    embedder, scored = score(load(args.pairs))
    report = {"bench": "duplicates", "revision": git_revision(), "embedder": embedder,
              **table(scored)}
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
