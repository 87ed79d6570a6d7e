"""Resolving a session's ``provider`` string to a planning provider.

Accepted names: ``""`` / ``offline`` (no model), ``openai`` (needs :class:`OpenAISettings`),
``cassette:NAME`` (replay ``cassette_dir/NAME``; a miss fails the session) and ``record:NAME``
(call the model, or the offline provider when no model is configured, and append to
``cassette_dir/NAME``). ``NAME`` is a plain file name, never a path, so a client cannot make
the server read or write outside ``cassette_dir``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from planner_svc.core.errors import InvalidRequest, echo
from planner_svc.research.cassette import CassetteProvider
from planner_svc.research.entities import EntityLookup
from planner_svc.research.graph import EvidenceGraph
from planner_svc.research.offline import OfflineProvider
from planner_svc.research.openai_provider import OpenAIProvider, OpenAISettings
from planner_svc.research.provider import ResearchProvider

ProviderFactory = Callable[[str], ResearchProvider]
"""Makes a fresh provider for one session from its ``provider`` string.

Raises InvalidRequest (field ``start.provider``) for an unknown or unavailable name, and
CassetteMiss when a replayed cassette file does not exist."""

CASSETTE_NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def make_provider_factory(
    *,
    entities: EntityLookup | None = None,
    openai: OpenAISettings | None = None,
    cassette_dir: Path | None = None,
    graph: EvidenceGraph | None = None,
) -> ProviderFactory:
    """A :data:`ProviderFactory` over the given configuration.

    Args:
        entities: knowledge-graph lookup for the offline provider; None = none.
        graph: the graph around the evidence, which the offline provider explores; None =
            no exploration.
        openai: endpoint for ``openai`` and ``record:``; None = ``openai`` is refused.
        cassette_dir: directory of cassette files; None = ``cassette:``/``record:`` refused.
    """

    def factory(spec: str) -> ResearchProvider:
        spec = spec.strip()
        if spec in ("", "offline"):
            return OfflineProvider(entities, graph)
        if spec == "openai":
            if openai is None:
                raise InvalidRequest(
                    "start.provider",
                    "'openai' is not configured on this server "
                    "(PLANNER_LLM_BASE_URL and PLANNER_LLM_MODEL)",
                )
            return OpenAIProvider(openai)
        mode, sep, name = spec.partition(":")
        if sep and mode in ("cassette", "record"):
            if cassette_dir is None:
                raise InvalidRequest("start.provider", "cassettes are not enabled on this server")
            if not CASSETTE_NAME_RE.fullmatch(name):
                raise InvalidRequest(
                    "start.provider",
                    f"cassette name {echo(name)} must match {CASSETTE_NAME_RE.pattern} (a file "
                    "name in the server's cassette directory, not a path)",
                )
            path = cassette_dir / name
            if mode == "cassette":
                return CassetteProvider(path, label=name)
            inner: ResearchProvider = (
                OpenAIProvider(openai) if openai is not None else OfflineProvider(entities, graph)
            )
            return CassetteProvider(path, inner=inner, label=name)
        raise InvalidRequest(
            "start.provider",
            f"{echo(spec)}; expected '', 'offline', 'openai', 'cassette:NAME' or 'record:NAME'",
        )

    return factory
