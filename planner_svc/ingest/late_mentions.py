"""Late mentions: the mention edges of passages that name a title first registered after them.

A passage ``mentions`` a document when it names that document's title
(:mod:`planner_svc.ingest.mentions`). When a batch registers new titles, passages written
earlier may name them: at the end of an ingest call the mentions of current passages are
brought up to date, by FTS5 phrase lookup of the new titles (by their words in fewest titles
first: :meth:`~planner_svc.ingest.mentions.TitleMatcher.word_titles`) when there are few
(:data:`FTS_RESOLVE_MAX_TITLES`, or one per :data:`SCAN_NODES_PER_TITLE` node versions the store
holds), else by one scan of all current passages. So a stream of small batches into a large
store costs per batch what its titles cost, not what the store holds. Mentions a longer new
title now hides (leftmost-longest matching) are closed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping

from planner_svc.ingest.mentions import TitleMatcher, title_forms
from planner_svc.ingest.model import PASSAGE_LABEL, RELATION_WEIGHTS, IngestReport, doc_node_id
from planner_svc.ingest.ports import IngestStore
from planner_svc.store.records import Edge, EdgeWrite, NodeVersion

__all__ = ["FTS_RESOLVE_MAX_TITLES", "resolve_late_mentions"]

FTS_RESOLVE_MAX_TITLES = 64
"""Up to this many new titles, late mentions are found by FTS phrase lookup (and above, while
the store holds :data:`SCAN_NODES_PER_TITLE` node versions per title); else by a scan."""
SCAN_NODES_PER_TITLE = 50
"""A title's phrase lookups cost about what scanning this many node versions costs (measured on
2 cores: about 2 ms a title, about 45 us a passage read and matched, 1.3 node versions a
passage)."""


def resolve_late_mentions(
    store: IngestStore,
    matcher: TitleMatcher,
    new_titles: Mapping[str, str],
    *,
    written_tx: int | None,
    now_us: int,
    report: IngestReport,
) -> None:
    """Bring up to date the mention edges of current passages that name a title first
    registered in this call: add the mentions missed because the title arrived after the
    passage, and close those a longer new title now hides (leftmost-longest matching).

    Args:
        store: the store written.
        matcher: every title known, the new ones included.
        new_titles: source id -> title, for the titles this call registered.
        written_tx: the latest transaction time the call wrote at (the pass writes at it, so a
            bulk load at one fixed time stays at that time), None when it wrote nothing.
        now_us: the current time, microseconds (the store's clock otherwise).
        report: counts ``edges``, ``late_mentions`` and ``mentions_closed`` are added here.
    """
    if not new_titles:
        return
    candidates: Iterable[NodeVersion]
    lookups = max(FTS_RESOLVE_MAX_TITLES, store.max_version_id() // SCAN_NODES_PER_TITLE)
    if len(new_titles) <= lookups:
        phrases = [" ".join(form) for title in new_titles.values() for form in title_forms(title)]
        candidates = store.current_nodes_matching_phrases(phrases, label=PASSAGE_LABEL,
                                                          commonness=matcher.word_titles)
    else:
        candidates = store.iter_current_nodes(label=PASSAGE_LABEL)
    new = set(new_titles)
    for page in _pages(candidates, 2048):
        _sync_mentions(store, matcher, page, new, written_tx=written_tx, now_us=now_us,
                       report=report)


def _sync_mentions(
    store: IngestStore,
    matcher: TitleMatcher,
    nodes: list[NodeVersion],
    new: set[str],
    *,
    written_tx: int | None,
    now_us: int,
    report: IngestReport,
) -> None:
    plans: list[tuple[NodeVersion, set[str]]] = []
    for node in nodes:
        found = matcher.find(node.text)
        if not found & new:
            continue
        owner = node.provenance[0].source_id if node.provenance else None
        found.discard(owner or "")
        plans.append((node, found))
    if not plans:
        return
    have: dict[str, dict[str, Edge]] = defaultdict(dict)
    for e in store.current_out_edges(n.node_id for n, _f in plans):
        if e.relation == "mentions":
            have[e.src][e.dst] = e
    adds: list[EdgeWrite] = []
    retires: list[tuple[str, str, str]] = []
    for node, found in plans:
        current = have.get(node.node_id, {})
        wanted = {doc_node_id(t): t for t in found}
        adds.extend(
            EdgeWrite(
                src=node.node_id,
                dst=dst,
                relation="mentions",
                weight=RELATION_WEIGHTS["mentions"],
                valid_from_us=node.valid_from_us,
            )
            for dst in sorted(set(wanted) - set(current))
        )
        retires.extend(current[dst].key for dst in sorted(set(current) - set(wanted)))
    if not adds and not retires:
        return
    # The pass derives its edges from this call's documents: it writes at the latest time
    # the call wrote (a bulk load at one fixed time stays at that time), else at the clock.
    with store.stamped(written_tx, now_us=now_us, or_clock=True) as tx:
        store.retire_edges(retires, tx_us=tx)
        created = store.put_edges(adds, tx_us=tx)
    report.edges += created
    report.late_mentions += created
    report.mentions_closed += len(retires)


def _pages(items: Iterable[NodeVersion], size: int) -> Iterator[list[NodeVersion]]:
    page: list[NodeVersion] = []
    for item in items:
        page.append(item)
        if len(page) >= size:
            yield page
            page = []
    if page:
        yield page
