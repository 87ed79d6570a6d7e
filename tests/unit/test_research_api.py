"""The research package's public surface, and that loading its CLI module stays cheap."""

from __future__ import annotations

import subprocess
import sys

import planner_svc.research as research


def test_public_names_are_pinned_and_resolve() -> None:
    assert sorted(research.__all__) == sorted(
        [
            "DEFAULT_DIGEST_CHARS", "DEFAULT_MAX_DEPTH", "DEFAULT_MAX_INITIAL_LEADS",
            "DEFAULT_MAX_NEW_LEADS", "DEFAULT_REPLAN_EVERY", "DEPTH_NONE", "BudgetReport",
            "Cancelled", "CassetteMiss", "CassetteProvider", "ContradictionsReport", "DeadEnd",
            "Digest", "DigestView", "EntityLookup", "Lead", "LeadReport", "NoEntities",
            "OfflineProvider", "OpenAIProvider", "OpenAISettings", "ResearchStep",
            "EvidenceSource", "ResearchPlanner", "PlannerEvidence", "ResearchProvider",
            "ResearchCaps", "ProviderRequest", "ProviderAnswer", "ProviderError",
            "ProviderFactory", "ResearchSession", "SessionStart", "StopReason",
            "SubQuestion", "TitleEntityLookup", "TitleIndex", "Usage", "leads_across",
            "make_provider_factory", "normalize_text", "render_digest",
        ]
    )  # fmt: skip
    for name in research.__all__:
        assert getattr(research, name) is not None
    assert research.DEFAULT_DIGEST_CHARS == 4000
    assert research.DEPTH_NONE == -1


def test_cli_module_imports_neither_grpc_nor_protobuf() -> None:
    code = (
        "import sys, planner_svc.client.research; "
        "print(sorted(m for m in ('grpc', 'google.protobuf') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
