"""Research planning: decompose a question into leads and replan as evidence arrives.

See docs/architecture.md, "Research sessions". Public surface:

- :class:`Digest` (bounded, thread-safe view of a session) and :func:`render_digest`;
- :class:`ResearchPlanner` with :class:`ResearchCaps`, and :func:`leads_across`;
- providers behind :class:`ResearchProvider`: :class:`OfflineProvider` (default, no model),
  :class:`OpenAIProvider` (any OpenAI-compatible chat-completions endpoint) and
  :class:`CassetteProvider` (record / replay), resolved per session by
  :func:`make_provider_factory`;
- :class:`ResearchSession`, the stream protocol without gRPC; it plans each sub-question's
  evidence through the core-typed port :class:`EvidenceSource` (:class:`PlannerEvidence` over
  the evidence planner). The gRPC servicer is :mod:`planner_svc.server.research`;
- near-duplicate screening of proposals: :class:`DuplicatePolicy` / :class:`DuplicateScreen`
  (:mod:`planner_svc.research.duplicates`), whose outcome per round is an :class:`Admission`;
- the graph around the evidence, which the offline provider explores: :class:`EvidenceGraph`,
  :class:`CatalogGraph` over the recall catalog.

Importing this package is cheap (``planner-svc`` loads its CLI module): names are imported on
first use.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from planner_svc.research.cassette import CassetteProvider
    from planner_svc.research.digest import (
        DEFAULT_DIGEST_CHARS,
        Admission,
        DeadEnd,
        Digest,
        DigestView,
        Duplicate,
        SubQuestion,
        normalize_text,
        render_digest,
    )
    from planner_svc.research.duplicates import (
        DEFAULT_DUPLICATE_SIMILARITY,
        DuplicateMatch,
        DuplicatePolicy,
        DuplicateRule,
        DuplicateScreen,
        wording_key,
    )
    from planner_svc.research.entities import (
        EntityLookup,
        NoEntities,
        TitleEntityLookup,
        TitleIndex,
    )
    from planner_svc.research.evidence import EvidenceBudget, EvidenceSource, PlannerEvidence
    from planner_svc.research.graph import CatalogGraph, EvidenceGraph, NoGraph, RelatedEntity
    from planner_svc.research.leads import Lead, leads_across
    from planner_svc.research.offline import OfflineProvider
    from planner_svc.research.openai_provider import OpenAIProvider, OpenAISettings
    from planner_svc.research.planner import (
        DEFAULT_MAX_DEPTH,
        DEFAULT_MAX_INITIAL_LEADS,
        DEFAULT_MAX_NEW_LEADS,
        DEFAULT_REPLAN_EVERY,
        DEPTH_NONE,
        ResearchCaps,
        ResearchPlanner,
        ResearchStep,
    )
    from planner_svc.research.provider import (
        Cancelled,
        CassetteMiss,
        EvidenceContext,
        ProviderAnswer,
        ProviderError,
        ProviderRequest,
        ResearchProvider,
        Usage,
    )
    from planner_svc.research.providers import ProviderFactory, make_provider_factory
    from planner_svc.research.session import (
        BudgetReport,
        ContradictionsReport,
        LeadReport,
        ResearchSession,
        SessionStart,
        StopReason,
    )

_EXPORTS: dict[str, str] = {
    "Admission": "planner_svc.research.digest",
    "CatalogGraph": "planner_svc.research.graph",
    "DEFAULT_DUPLICATE_SIMILARITY": "planner_svc.research.duplicates",
    "Duplicate": "planner_svc.research.digest",
    "DuplicateMatch": "planner_svc.research.duplicates",
    "DuplicatePolicy": "planner_svc.research.duplicates",
    "DuplicateRule": "planner_svc.research.duplicates",
    "DuplicateScreen": "planner_svc.research.duplicates",
    "EvidenceBudget": "planner_svc.research.evidence",
    "EvidenceContext": "planner_svc.research.provider",
    "EvidenceGraph": "planner_svc.research.graph",
    "NoGraph": "planner_svc.research.graph",
    "RelatedEntity": "planner_svc.research.graph",
    "wording_key": "planner_svc.research.duplicates",
    "BudgetReport": "planner_svc.research.session",
    "Cancelled": "planner_svc.research.provider",
    "CassetteMiss": "planner_svc.research.provider",
    "CassetteProvider": "planner_svc.research.cassette",
    "ContradictionsReport": "planner_svc.research.session",
    "DEFAULT_DIGEST_CHARS": "planner_svc.research.digest",
    "DEFAULT_MAX_DEPTH": "planner_svc.research.planner",
    "DEFAULT_MAX_INITIAL_LEADS": "planner_svc.research.planner",
    "DEFAULT_MAX_NEW_LEADS": "planner_svc.research.planner",
    "DEFAULT_REPLAN_EVERY": "planner_svc.research.planner",
    "DEPTH_NONE": "planner_svc.research.planner",
    "DeadEnd": "planner_svc.research.digest",
    "Digest": "planner_svc.research.digest",
    "DigestView": "planner_svc.research.digest",
    "EntityLookup": "planner_svc.research.entities",
    "EvidenceSource": "planner_svc.research.evidence",
    "Lead": "planner_svc.research.leads",
    "LeadReport": "planner_svc.research.session",
    "NoEntities": "planner_svc.research.entities",
    "OfflineProvider": "planner_svc.research.offline",
    "OpenAIProvider": "planner_svc.research.openai_provider",
    "OpenAISettings": "planner_svc.research.openai_provider",
    "ResearchStep": "planner_svc.research.planner",
    "ResearchPlanner": "planner_svc.research.planner",
    "ResearchProvider": "planner_svc.research.provider",
    "PlannerEvidence": "planner_svc.research.evidence",
    "ResearchCaps": "planner_svc.research.planner",
    "ProviderRequest": "planner_svc.research.provider",
    "ProviderAnswer": "planner_svc.research.provider",
    "ProviderError": "planner_svc.research.provider",
    "ProviderFactory": "planner_svc.research.providers",
    "ResearchSession": "planner_svc.research.session",
    "SessionStart": "planner_svc.research.session",
    "StopReason": "planner_svc.research.session",
    "SubQuestion": "planner_svc.research.digest",
    "TitleEntityLookup": "planner_svc.research.entities",
    "TitleIndex": "planner_svc.research.entities",
    "Usage": "planner_svc.research.provider",
    "leads_across": "planner_svc.research.leads",
    "make_provider_factory": "planner_svc.research.providers",
    "normalize_text": "planner_svc.research.digest",
    "render_digest": "planner_svc.research.digest",
}

__all__ = [
    "DEFAULT_DIGEST_CHARS",
    "DEFAULT_DUPLICATE_SIMILARITY",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_INITIAL_LEADS",
    "DEFAULT_MAX_NEW_LEADS",
    "DEFAULT_REPLAN_EVERY",
    "DEPTH_NONE",
    "Admission",
    "BudgetReport",
    "Cancelled",
    "CassetteMiss",
    "CassetteProvider",
    "CatalogGraph",
    "ContradictionsReport",
    "DeadEnd",
    "Digest",
    "DigestView",
    "Duplicate",
    "DuplicateMatch",
    "DuplicatePolicy",
    "DuplicateRule",
    "DuplicateScreen",
    "EntityLookup",
    "EvidenceBudget",
    "EvidenceContext",
    "EvidenceGraph",
    "EvidenceSource",
    "Lead",
    "LeadReport",
    "NoEntities",
    "NoGraph",
    "OfflineProvider",
    "OpenAIProvider",
    "OpenAISettings",
    "PlannerEvidence",
    "ProviderAnswer",
    "ProviderError",
    "ProviderFactory",
    "ProviderRequest",
    "RelatedEntity",
    "ResearchCaps",
    "ResearchPlanner",
    "ResearchProvider",
    "ResearchSession",
    "ResearchStep",
    "SessionStart",
    "StopReason",
    "SubQuestion",
    "TitleEntityLookup",
    "TitleIndex",
    "Usage",
    "leads_across",
    "make_provider_factory",
    "normalize_text",
    "render_digest",
    "wording_key",
]


def __getattr__(name: str) -> typing.Any:
    """Import a public name from its module on first access."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
