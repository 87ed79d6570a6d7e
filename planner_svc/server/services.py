"""What one server process serves from: the store, the embedder, the index and the services
over them, opened from the settings (the composition root).

Every part is typed by what it is; the servicers receive the services they delegate to and
nothing else.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.errors import ConfigError
from planner_svc.embed.base import Embedder
from planner_svc.index.fresh import FreshIndex
from planner_svc.ingest.service import IngestService
from planner_svc.memory.service import MemoryService
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.research.duplicates import DuplicatePolicy
from planner_svc.research.entities import TitleEntityLookup
from planner_svc.research.evidence import PlannerEvidence
from planner_svc.research.graph import CatalogGraph
from planner_svc.research.providers import ProviderFactory, make_provider_factory
from planner_svc.settings import ServerSettings
from planner_svc.store.store import STORE_FILE, Store

__all__ = ["Services"]


@dataclass(slots=True, kw_only=True)
class Services:
    """The open backends and services of one process.

    Attributes:
        settings: what they were opened with.
        store: the embedded store.
        embedder: embeds query and document text; None on a store-only server.
        index: the vector index, caught up before each search; None on a store-only server.
        planner: the evidence planner (Plan RPC).
        ingest: document streams (IngestSources).
        memory: single node and edge writes (PutNode, PutEdge).
        evidence: research sub-question evidence, through the same planner.
        providers: each research session's planning provider, by name (the offline provider
            explores the planner's catalog).
        duplicates: how research sessions screen proposals (the settings' threshold, the
            embedder).
    """

    settings: ServerSettings
    store: Store
    embedder: Embedder | None
    index: FreshIndex | None
    planner: EvidencePlanner
    ingest: IngestService
    memory: MemoryService
    evidence: PlannerEvidence
    providers: ProviderFactory
    duplicates: DuplicatePolicy

    @classmethod
    def open(cls, settings: ServerSettings, *, clock: Clock = wall_clock_us) -> Services:
        """Open (creating if needed) the store under ``settings.data_dir``, the embedder and
        the vector index (rebuilt or caught up from the store when it lags), and the services.

        Raises:
            ConfigError: (``data_dir``) a folder holding other files but no store; a bad model
                registry, embedding model or index configuration.
        """
        from planner_svc.recall.tokens import default_counter

        data = settings.data_dir
        if data.is_dir() and any(data.iterdir()) and not (data / STORE_FILE).exists():
            raise ConfigError(
                "data_dir",
                f"{data} holds other files but no {STORE_FILE}: not a planner-svc data "
                "directory (give an empty or new directory to start a store there)",
            )
        data.mkdir(parents=True, exist_ok=True)
        store = Store.open(data)
        try:
            embedder: Embedder | None = None
            index: FreshIndex | None = None
            if settings.semantic:
                from planner_svc.embed import default_embedder
                from planner_svc.index import VectorIndex

                embedder = default_embedder(settings.model_dir)
                index = FreshIndex(
                    VectorIndex.open_or_build(data, store, embedder_name=embedder.name,
                                              dim=embedder.dim),
                    store,
                )
            planner = EvidencePlanner(
                store, index=index, embedder=embedder, config=settings.selection,
                counter=default_counter(settings.models_path), recall=settings.recall,
            )
        except BaseException:
            store.close()
            raise
        return cls.assemble(settings, store=store, embedder=embedder, index=index,
                            planner=planner, clock=clock)

    @classmethod
    def assemble(
        cls,
        settings: ServerSettings,
        *,
        store: Store,
        embedder: Embedder | None,
        index: FreshIndex | None,
        planner: EvidencePlanner,
        clock: Clock = wall_clock_us,
    ) -> Services:
        """The services over already open backends (tests pass their own)."""
        write_lock = threading.Lock()
        return cls(
            settings=settings,
            store=store,
            embedder=embedder,
            index=index,
            planner=planner,
            ingest=IngestService(store, embedder=embedder, index=index, write_lock=write_lock,
                                 clock=clock),
            memory=MemoryService(store, embedder=embedder, index=index, write_lock=write_lock,
                                 clock=clock),
            evidence=PlannerEvidence(planner, semantic=index is not None, clock=clock),
            providers=make_provider_factory(
                entities=TitleEntityLookup(store),
                openai=settings.research.openai,
                cassette_dir=settings.research.cassette_dir,
                graph=CatalogGraph(planner.catalog, store, clock=clock),
            ),
            duplicates=DuplicatePolicy(threshold=settings.research.duplicate_similarity,
                                       embedder=embedder),
        )

    def describe(self) -> dict[str, object]:
        """Facts for the start-up log line."""
        return {
            "sources": self.store.count_sources(),
            "embedder": None if self.embedder is None else self.embedder.name,
            "vectors": self.index.size if self.index is not None else 0,
        }

    def close(self) -> None:
        """Close the store (the index is read-only memory)."""
        self.store.close()
