"""One evaluation run: the planner (through a :data:`PlanSource`) and both baselines at every
budget.

For each question the baselines rank once (the cosine baseline's top-k passages, the BM25
baseline's top documents) and pack once per budget; the planner is asked once per budget (the
command line asks a running server: :mod:`planner_svc.client.eval`). All
three are scored with :mod:`planner_svc.evaluation.metrics` under the same effective budget
(the requested budget times 0.9, the estimator's margin, since eval counts tokens with the
estimator).

The report is a JSON-ready dict::

    {"questionFiles": [str], "questionCount": int,
     "baselines": {"cosineK": int, "bm25TopDocuments": int},
     "bm25Index": {"documents": int, "seconds": float},
     "seconds": float,                       # wall time of the whole run
     "budgets": [{"budget": int, "effectiveBudget": int,
                  "planner": Aggregate, "cosineBaseline": Aggregate, "bm25Baseline": Aggregate,
                  "vsStrongerBaseline": judge(...),
                  "questions": [...]}]}      # per question, only with per_question

in ascending budget order (see :func:`planner_svc.evaluation.metrics.aggregate` and
:func:`~planner_svc.evaluation.metrics.judge` for the per-system rows).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Pins FAISS to one OpenMP thread; must run before anything imports faiss (see
# docs/architecture.md, "Processes and threads").
from planner_svc.index import VectorIndex  # isort: skip

from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.errors import PlannerError
from planner_svc.core.tokens import effective_budget
from planner_svc.embed import default_embedder
from planner_svc.evaluation.bm25_baseline import TOP_DOCUMENTS, Bm25Baseline
from planner_svc.evaluation.cosine_baseline import DEFAULT_COSINE_K, cosine_candidates
from planner_svc.evaluation.metrics import Outcome, aggregate, declined, judge, score
from planner_svc.evaluation.packing import PackedPlan, pack_skipping, pack_until_full
from planner_svc.evaluation.questions import Question
from planner_svc.index.replica import claim_data_dir
from planner_svc.store.open import open_store, shared_store_id

__all__ = [
    "BASELINES",
    "SYSTEMS",
    "EvalError",
    "EvalInputError",
    "EvalSettings",
    "PlanSource",
    "ServerPlan",
    "run_eval",
]

SYSTEMS = ("planner", "cosineBaseline", "bm25Baseline")
"""Report keys of the systems compared, in report order."""

BASELINES = SYSTEMS[1:]
"""Report keys of the baselines."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerPlan:
    """What the planner answered for one question.

    Attributes:
        source_ids, texts: one entry per selected span, parallel (empty when declined).
        used: tokens the plan spends (0 when declined).
        refused: the planner declined for insufficient evidence (a plan with no span is also
            a decline, see :mod:`planner_svc.evaluation.metrics`, but not a refusal).
    """

    source_ids: tuple[str, ...]
    texts: tuple[str, ...]
    used: int
    refused: bool


PlanSource = Callable[[str, int], ServerPlan]
"""Asks the planner under evaluation for the plan of a question at a requested budget (tokens).

Raises :class:`EvalError` (one line for the user) when it cannot answer other than by declining.
"""


class EvalError(Exception):
    """The run cannot go on; the message is one line for the user.

    Args:
        message: that line.
        exit_code: the exit code a command reporting it should end with (1 unless the cause
            says otherwise, e.g. 3 for a service to retry later).
    """

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class EvalInputError(EvalError):
    """The run's input is unusable (e.g. the data directory is not a readable store)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalSettings:
    """What one run measures.

    Attributes:
        question_files: the files the questions came from (named in the report).
        budgets: requested budgets, tokens, ascending and distinct.
        data_dir: the server's data directory (read for the baselines and titles).
        store: the server's shared store URL (``--store``); None = the SQLite store in
            ``data_dir``.
        cosine_k: passages the cosine baseline considers.
        per_question: include each question's outcome in the report.
        model_dir: the embedding model of the cosine baseline (the server's); None = the
            repository's model.
    """

    question_files: tuple[str, ...]
    budgets: tuple[int, ...]
    data_dir: Path
    store: str | None = None
    cosine_k: int = DEFAULT_COSINE_K
    per_question: bool = False
    model_dir: Path | None = None


def run_eval(
    questions: Sequence[Question],
    settings: EvalSettings,
    *,
    plans: PlanSource,
    clock: Clock = wall_clock_us,
    warn: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any]:
    """Evaluate ``questions`` at every budget of ``settings``.

    Args:
        plans: the planner under evaluation.
        clock: now, the as-of time of both baselines.
        warn: receives one-line warnings (e.g. plans citing sources the data directory lacks).

    Returns:
        The report described in the module docstring.

    Raises:
        EvalInputError: no store under the data directory, or one this build cannot read.
        EvalError: from ``plans``: a plan request failed other than by a decline.
    """
    started = time.perf_counter()
    data = settings.data_dir
    if settings.store is None and not (data / "store.sqlite").exists():
        raise EvalInputError(f"no store under {data} (use --data, or --store)")
    now_us = clock()
    budgets = settings.budgets
    effective = {b: effective_budget(b, None, True) for b in budgets}
    outcomes: dict[int, dict[str, list[Outcome]]] = {b: {s: [] for s in SYSTEMS} for b in budgets}
    rows: dict[int, list[dict[str, Any]]] = {b: [] for b in budgets}
    try:
        store = open_store(data, settings.store)
    except (PlannerError, sqlite3.DatabaseError) as exc:
        raise EvalInputError(f"cannot open the store: {exc}") from None
    with store:
        store_id = shared_store_id(store)
        if store_id is not None:
            claim_data_dir(data, store_id)
        embedder = default_embedder(settings.model_dir)
        index = VectorIndex.open_or_build(data, store, embedder_name=embedder.name,
                                          dim=embedder.dim)
        t0 = time.perf_counter()
        bm25 = Bm25Baseline.from_store(store, tx_us=now_us)
        bm25_seconds = time.perf_counter() - t0
        titles: dict[str, str | None] = {}

        def title(source_id: str) -> str:
            if source_id not in titles:
                titles[source_id] = store.source_title(source_id)
            return titles[source_id] or source_id

        def scored(q: Question, plan: PackedPlan) -> Outcome:
            return score(q, [title(s) for s in plan.source_ids], plan.texts, plan.used)

        unknown: set[str] = set()
        for q in questions:
            cosine_ranked = cosine_candidates(store, index, embedder, q.question,
                                              k=settings.cosine_k, valid_us=now_us, tx_us=now_us)
            bm25_ranked = bm25.candidates(q.question)
            for budget in budgets:
                got = plans(q.question, budget)
                planner_titles = [title(s) for s in got.source_ids]
                unknown.update(s for s in got.source_ids if titles[s] is None)
                planner = declined(q) if got.refused else score(
                    q, planner_titles, got.texts, got.used)
                results = (
                    planner,
                    scored(q, pack_until_full(cosine_ranked, effective[budget])),
                    scored(q, pack_skipping(bm25_ranked, effective[budget])),
                )
                for system, outcome in zip(SYSTEMS, results, strict=True):
                    outcomes[budget][system].append(outcome)
                if settings.per_question:
                    rows[budget].append({
                        "id": q.id, "type": q.type,
                        **{system: {"covered": list(o.covered), "answer": o.answer_in_plan,
                                    "declined": o.declined}
                           for system, o in zip(SYSTEMS, results, strict=True)},
                    })
    if unknown:
        warn(f"the server's plans cite {len(unknown)} source(s) missing from {data} "
             f"(e.g. {sorted(unknown)[0]}): is --data the server's data directory?")
    entries: list[dict[str, Any]] = []
    for budget in budgets:
        aggs = {system: aggregate(outcomes[budget][system]) for system in SYSTEMS}
        entry: dict[str, Any] = {"budget": budget, "effectiveBudget": effective[budget], **aggs}
        entry["vsStrongerBaseline"] = judge(aggs["planner"], {b: aggs[b] for b in BASELINES})
        if settings.per_question:
            entry["questions"] = rows[budget]
        entries.append(entry)
    return {
        "questionFiles": list(settings.question_files),
        "questionCount": len(questions),
        "baselines": {"cosineK": settings.cosine_k, "bm25TopDocuments": TOP_DOCUMENTS},
        "bm25Index": {"documents": bm25.size, "seconds": round(bm25_seconds, 3)},
        "seconds": round(time.perf_counter() - started, 3),
        "budgets": entries,
    }
