"""The knowledge graph around a session's evidence: what the offline provider explores.

A research session's evidence plans cite spans; nodes of the knowledge graph cite those spans
(a document's passages, the document itself); edges join those nodes to nodes of other
documents (at ingest, a passage ``mentions`` every document whose title it names; clients add
their own relations with ``PutEdge``). The documents at the other end are the entities the
evidence leads to. :class:`EvidenceGraph` is the port the offline provider reads them through
(it runs inside the service; a model provider never sees the graph); :class:`CatalogGraph`
answers it from the recall catalog (:class:`~planner_svc.index.catalog.Catalog`: node versions
by source, cross-source edges) and the store's document titles.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.model import CoordKey, PlannedSpan
from planner_svc.research.duplicates import words

if TYPE_CHECKING:
    from planner_svc.index.catalog import CatalogVersion
    from planner_svc.index.catalog_sync import FreshCatalog

__all__ = ["CatalogGraph", "EvidenceGraph", "GraphStore", "NoGraph", "RelatedEntity"]

_QUALIFIER = re.compile(r"\(([^()]*)\)\s*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class RelatedEntity:
    """A document the evidence is linked to.

    Attributes:
        title: the document's title (the entity's name).
        source_id: its source id.
        relation: the relation of most of its links (ties: the first by name).
        outgoing: True when most of its links run from the evidence to it (the evidence names
            it), False when they run from it to the evidence (it names the evidence).
        score: how strongly the evidence leads there: over the distinct evidence nodes linked
            to it, the sum of each node's weight (the highest plan weight of the given spans
            it cites), added in link order.
        support: distinct evidence nodes linked to it.
        weight: its heaviest link's weight, in [0, 1].
        via: the title of the evidence document with the most links to it.
    """

    title: str
    source_id: str
    relation: str
    outgoing: bool
    score: float
    support: int
    weight: float
    via: str


class EvidenceGraph(Protocol):
    """Finds the entities around evidence spans."""

    def related(
        self,
        spans: Sequence[PlannedSpan],
        *,
        at_valid_us: int | None,
        at_tx_us: int | None,
        limit: int,
    ) -> list[RelatedEntity]:
        """The documents joined by an edge live at the as-of times (microseconds; None = now)
        to a node citing one of ``spans`` (evidence plan spans, with their weights), other than
        the documents the spans belong to; at most ``limit``, strongest first: score, support,
        then weight descending, then source id."""
        ...


@dataclass(frozen=True, slots=True)
class _Link:
    node: int
    source: str | None
    relation: str
    weight: float
    outgoing: bool


class NoGraph:
    """An :class:`EvidenceGraph` without a graph: nothing is related."""

    def related(
        self,
        spans: Sequence[PlannedSpan],
        *,
        at_valid_us: int | None,
        at_tx_us: int | None,
        limit: int,
    ) -> list[RelatedEntity]:
        """Always ``[]``."""
        return []


class GraphStore(Protocol):
    """What :class:`CatalogGraph` reads from the store besides the catalog."""

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads all see one committed state (re-entrant)."""
        ...

    def source_title(self, source_id: str) -> str | None:
        """The title of a source's latest version, or None."""
        ...


class CatalogGraph:
    """:class:`EvidenceGraph` over the recall catalog and the store's titles.

    A document whose title ends in a parenthetical qualifier (``Western (genre)``) is related
    only when the evidence's text uses a word of the qualifier: ingest links a passage to such
    a document on its bare name ("Western"), which is ambiguous on its own.

    Args:
        catalog: the catalog the evidence planner plans over (caught up on each read).
        store: snapshots and titles.
        clock: now, for absent as-of times.
    """

    def __init__(self, catalog: FreshCatalog, store: GraphStore, *,
                 clock: Clock = wall_clock_us) -> None:
        self._catalog = catalog
        self._store = store
        self._clock = clock

    def related(
        self,
        spans: Sequence[PlannedSpan],
        *,
        at_valid_us: int | None,
        at_tx_us: int | None,
        limit: int,
    ) -> list[RelatedEntity]:
        """See :meth:`EvidenceGraph.related`. Reads one store snapshot."""
        if not spans or limit < 1:
            return []
        now = self._clock()
        valid_us = now if at_valid_us is None else at_valid_us
        tx_us = now if at_tx_us is None else at_tx_us
        weights: dict[CoordKey, float] = {}
        for planned in spans:
            key = planned.span.key
            weights[key] = max(weights.get(key, 0.0), planned.weight)
        keys_by_source: dict[str, set[CoordKey]] = defaultdict(set)
        for key in weights:
            keys_by_source[key[0]].add(key)
        with self._store.snapshot():
            catalog = self._catalog.current()
            node_weight: dict[int, float] = {}
            nodes: list[CatalogVersion] = []
            for source_id, keys in sorted(keys_by_source.items()):
                for version in catalog.live_nodes_of(source_id, valid_us, tx_us):
                    cited = keys.intersection(version.spans)
                    if cited:
                        nodes.append(version)
                        node_weight[version.version_id] = max(weights[k] for k in cited)
            groups: dict[str, list[_Link]] = defaultdict(list)
            for link in catalog.cross_links(nodes, valid_us, tx_us):
                target = link.other.source
                if target is None or target in keys_by_source:
                    continue
                groups[target].append(_Link(node=link.node.version_id, source=link.node.source,
                                            relation=link.relation, weight=link.weight,
                                            outgoing=link.outgoing))
            scored = []
            for target, group in groups.items():
                score = 0.0
                for node in dict.fromkeys(link.node for link in group):
                    score += node_weight[node]
                scored.append((target, group, score))
            scored.sort(key=lambda t: (-t[2], -len({lk.node for lk in t[1]}),
                                       -max(lk.weight for lk in t[1]), t[0]))
            out: list[RelatedEntity] = []
            titles: dict[str, str | None] = {}
            text_words: set[str] | None = None
            for target, group, score in scored:
                if len(out) == limit:
                    break
                title = self._title(target, titles)
                if not title:
                    continue
                qualifier = _QUALIFIER.search(title)
                if qualifier is not None:
                    if text_words is None:
                        text_words = {w for p in spans for w in words(p.text)}
                    if not text_words.intersection(words(qualifier.group(1))):
                        continue
                relations = Counter(lk.relation for lk in group)
                vias = Counter(lk.source for lk in group if lk.source is not None)
                via = min(vias, key=lambda s: (-vias[s], s)) if vias else None
                out.append(RelatedEntity(
                    title=title,
                    source_id=target,
                    relation=min(relations, key=lambda r: (-relations[r], r)),
                    outgoing=sum(1 for lk in group if lk.outgoing) * 2 >= len(group),
                    score=score,
                    support=len({lk.node for lk in group}),
                    weight=max(lk.weight for lk in group),
                    via=(self._title(via, titles) or "") if via is not None else "",
                ))
        return out

    def _title(self, source_id: str, cache: dict[str, str | None]) -> str | None:
        if source_id not in cache:
            cache[source_id] = self._store.source_title(source_id)
        return cache[source_id]
