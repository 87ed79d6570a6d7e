"""Plan quality on questions with gold evidence: the planner against two baselines.

``questions`` reads the question files; ``metrics`` scores plans and aggregates them (pure);
``cosine_baseline`` and ``bm25_baseline`` rank candidates and ``packing`` packs them under a
budget; ``runner`` runs every budget, asking the planner through a :data:`PlanSource`;
``report`` renders the tables and ``plot`` the sweep figure. The command line, which asks a
running server, is :mod:`planner_svc.client.eval`.

Importing this package is cheap: names are imported from their modules on first use.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from planner_svc.evaluation.questions import Question, load_questions
    from planner_svc.evaluation.report import report_text
    from planner_svc.evaluation.runner import (
        EvalError,
        EvalInputError,
        EvalSettings,
        PlanSource,
        ServerPlan,
        run_eval,
    )

_EXPORTS: dict[str, str] = {
    "EvalError": "planner_svc.evaluation.runner",
    "EvalInputError": "planner_svc.evaluation.runner",
    "EvalSettings": "planner_svc.evaluation.runner",
    "PlanSource": "planner_svc.evaluation.runner",
    "Question": "planner_svc.evaluation.questions",
    "ServerPlan": "planner_svc.evaluation.runner",
    "load_questions": "planner_svc.evaluation.questions",
    "report_text": "planner_svc.evaluation.report",
    "run_eval": "planner_svc.evaluation.runner",
}

__all__ = [
    "EvalError",
    "EvalInputError",
    "EvalSettings",
    "PlanSource",
    "Question",
    "ServerPlan",
    "load_questions",
    "report_text",
    "run_eval",
]


def __getattr__(name: str) -> typing.Any:
    """Import a public name from its module on first access."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
