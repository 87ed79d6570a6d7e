"""What one server process serves from: the store, the embedder, the index and the services
over them, opened from the settings (the composition root).

Every part is typed by what it is; the servicers receive the services they delegate to and
nothing else.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import structlog

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
from planner_svc.store.open import AnyStore, open_store, shared_store_id
from planner_svc.store.store import STORE_FILE

__all__ = ["Services", "build_catalog"]

_log = structlog.get_logger("planner_svc.server")
_PROGRESS_EVERY = 0.1
"""A start-up build logs its progress each time it passes another tenth of the rows..."""
_PROGRESS_GAP_S = 1.0
"""...and at least this many seconds after its previous line of the same rows (a small store,
built in a few seconds, logs each kind of rows once, when done)."""


def build_catalog(planner: EvidencePlanner) -> None:
    """Build the planner's recall catalog from the store now (a replica's start-up, rather
    than its first plan), logging progress (``startup.catalog_progress``: rows read, last id,
    target id; then the spans read and the node versions indexed, as counts) and the result
    (``startup.catalog``)."""
    started = time.perf_counter()
    # rows -> (tenths passed, seconds) when last logged, or when first reported
    shown: dict[str, tuple[int, float]] = {}
    steps = round(1 / _PROGRESS_EVERY)

    def progress(rows: str, at: int, target: int) -> None:
        passed = min(steps, at * steps // target) if target > 0 else steps
        now = time.perf_counter() - started
        last, when = shown.setdefault(rows, (0, now))
        if (passed > last and now - when >= _PROGRESS_GAP_S) or (passed == steps > last):
            shown[rows] = (passed, now)
            _log.info("startup.catalog_progress", rows=rows, at=at, target=target,
                      seconds=round(now, 2))

    added = planner.catalog.catch_up(progress=progress)
    position = planner.catalog.position
    _log.info("startup.catalog", node_versions=added, edges=position.edge_id,
              source_versions=position.source_version_id,
              seconds=round(time.perf_counter() - started, 2))


@dataclass(slots=True, kw_only=True)
class Services:
    """The open backends and services of one process.

    Attributes:
        settings: what they were opened with.
        store: the store (embedded SQLite, or the shared PostgreSQL store).
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
    store: AnyStore
    embedder: Embedder | None
    index: FreshIndex | None
    planner: EvidencePlanner
    ingest: IngestService
    memory: MemoryService
    evidence: PlannerEvidence
    providers: ProviderFactory
    duplicates: DuplicatePolicy

    @classmethod
    def open(cls, settings: ServerSettings, *, clock: Clock = wall_clock_us,
             read_ahead: bool = False, catalog: bool = True) -> Services:
        """Open (creating if needed) the store (the SQLite store under ``settings.data_dir``,
        or the shared store ``settings.store``), the embedder and the vector index under
        ``settings.data_dir`` (rebuilt or caught up from the store when it lags), and the
        services. ``read_ahead`` (a process that will serve plans): once the vector index is
        current, its segment files are read into the page cache in the background
        (:meth:`~planner_svc.index.VectorIndex.read_ahead`). ``catalog`` False: the recall
        catalog is not built now (a ``--workers`` parent, which only brings the vector index
        up to date and serves no plan); the first plan would build it.

        Raises:
            ConfigError: (``data_dir``) a folder holding other files but no store; (``store``)
                a store with a newer schema; a bad model registry, embedding model or index
                configuration.
            StoreUnavailable: the shared store cannot be reached.
        """
        from planner_svc.index.replica import claim_data_dir
        from planner_svc.recall.tokens import default_counter

        data = settings.data_dir
        if (settings.store is None and data.is_dir() and any(data.iterdir())
                and not (data / STORE_FILE).exists()):
            raise ConfigError(
                "data_dir",
                f"{data} holds other files but no {STORE_FILE}: not a planner-svc data "
                "directory (give an empty or new directory to start a store there)",
            )
        data.mkdir(parents=True, exist_ok=True)
        store = open_store(data, settings.store)
        try:
            store_id = shared_store_id(store)
            if store_id is not None:
                claim_data_dir(data, store_id)
            embedder: Embedder | None = None
            index: FreshIndex | None = None
            if settings.semantic:
                from planner_svc.embed import default_embedder
                from planner_svc.index import VectorIndex

                embedder = default_embedder(settings.model_dir)
                started = time.perf_counter()
                index = FreshIndex(
                    VectorIndex.open_or_build(data, store, embedder_name=embedder.name,
                                              dim=embedder.dim, read_ahead=read_ahead),
                    store,
                )
                _log.info("startup.vector_index", vectors=index.size,
                          seconds=round(time.perf_counter() - started, 2))
            planner = EvidencePlanner(
                store, index=index, embedder=embedder, config=settings.selection,
                counter=default_counter(settings.models_path), recall=settings.recall,
                span_text_bytes=settings.span_text_mib << 20,
                plan_slots=settings.plan_slots,
            )
            if catalog:
                build_catalog(planner)
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
        store: AnyStore,
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
