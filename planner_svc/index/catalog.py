"""The recall catalog: an in-memory read model of the store, made for planning.

Everything a plan needs per candidate is here, decoded once when the store's rows arrive
rather than on every request: node versions grouped by the source document they cite, their
provenance spans with each span's kind and estimated token count, the edges that join nodes
of different documents, and two BM25 indexes (:mod:`planner_svc.index.lexical`): one over
node texts (passages) and one over whole source versions (documents). Every row keeps its
valid and transaction intervals, so every read is as of ``(valid_us, tx_us)``.

The catalog is derived data, like the vector index: :meth:`Catalog.apply` adds the rows a
:class:`CatalogBatch` carries (new versions, and intervals closed since the last batch); a
reader built on the store's ports fills batches from a watermark (see
:mod:`planner_svc.index.catalog_sync`).

Thread-safety: reads may run from any number of threads while one thread applies a batch; a
read sees each row either before or after the batch (rows are never removed, and the as-of
filter hides rows newer than the plan's transaction time).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from planner_svc.core.model import NOWHERE, CoordKey, Location
from planner_svc.index.analysis import analyze
from planner_svc.index.lexical import OPEN, LexicalIndex, LexicalRow
from planner_svc.store.feed import SourceVersionRow
from planner_svc.store.records import Edge, NodeVersion

__all__ = ["Catalog", "CatalogBatch", "CatalogVersion", "CitedSpan", "CrossLink", "SourceEntry",
           "SpanInfo"]


@dataclass(frozen=True, slots=True)
class SpanInfo:
    """What selection needs of a span before its text.

    Attributes:
        kind: its structural kind from the span ledger (``body`` when the ledger has none).
        kind_known: whether the ledger had a row.
        estimated_tokens: :func:`planner_svc.core.tokens.estimate_tokens` of its text; None
            when its text cannot be sliced (no such version, a range outside the text or inside
            a character).
        location: where it sits in its original document, from the span ledger (NOWHERE when
            the ledger has no row or records none); every planned span carries it.
    """

    kind: str
    kind_known: bool
    estimated_tokens: int | None
    location: Location = NOWHERE


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogBatch:
    """Rows to add to the catalog and intervals closed since the previous batch.

    Attributes:
        nodes: node versions, in version id order.
        closed_nodes: ``(version_id, tx_to_us)`` of versions closed since.
        edges: ``(edge_id, edge version)``, in edge id order.
        closed_edges: ``(edge_id, tx_to_us)`` of edge versions closed since.
        sources: source versions, in row id order; a version closes the previous version of
            its source at its own transaction time.
        spans: kind, estimate and location of every span the new nodes cite.
    """

    nodes: Sequence[NodeVersion] = ()
    closed_nodes: Sequence[tuple[int, int]] = ()
    edges: Sequence[tuple[int, Edge]] = ()
    closed_edges: Sequence[tuple[int, int]] = ()
    sources: Sequence[SourceVersionRow] = ()
    spans: Mapping[CoordKey, SpanInfo] = field(default_factory=dict)


CitedSpan = tuple[CoordKey, SpanInfo | None]
"""A span a node version cites and what the catalog knows of it (None: never seen)."""


@dataclass(slots=True)
class CatalogVersion:
    """A node version in the catalog (``tx_to`` closes later, and ``cited`` when a later batch
    brings different information on one of its spans; everything else is fixed).

    ``cited`` pairs each of ``spans`` with its :class:`SpanInfo` as :meth:`Catalog.span`
    returns it (equal to it: the catalog keeps the two in step), so that exploding a node into
    its spans reads no second table.
    """

    version_id: int
    node_id: str
    source: str | None
    labels: frozenset[str]
    properties: frozenset[tuple[str, str]]
    confidence: float
    spans: tuple[CoordKey, ...]
    valid_from: int
    valid_to: int
    tx_from: int
    tx_to: int
    cited: tuple[CitedSpan, ...] = ()

    def live(self, valid_us: int, tx_us: int) -> bool:
        return (self.valid_from <= valid_us < self.valid_to
                and self.tx_from <= tx_us < self.tx_to)


@dataclass(slots=True)
class _Edge:
    edge_id: int
    src: str
    dst: str
    relation: str
    weight: float
    valid_from: int
    valid_to: int
    tx_from: int
    tx_to: int

    def live(self, valid_us: int, tx_us: int) -> bool:
        return (self.valid_from <= valid_us < self.valid_to
                and self.tx_from <= tx_us < self.tx_to)


@dataclass(frozen=True, slots=True)
class CrossLink:
    """A live edge between a node of a given set and a node of another source document.

    Attributes:
        node: the node of the set.
        other: the node at the other end (live, citing another source).
        relation: the edge's relation (``mentions`` for a title mention at ingest).
        weight: the edge's weight in [0, 1].
        outgoing: True when the edge runs from ``node`` to ``other``.
    """

    node: CatalogVersion
    other: CatalogVersion
    relation: str
    weight: float
    outgoing: bool


def _bound(value: int | None, times: dict[int, int]) -> int:
    """An interval's end: OPEN for None, else the object ``times`` holds for the value."""
    return OPEN if value is None else times.setdefault(value, value)


@dataclass(frozen=True, slots=True, eq=False)
class SourceEntry:
    """One document as recall reads it as of one ``(valid_us, tx_us)``.

    Attributes:
        members: the live node versions that cite the document first, in version id order.
        ids: their version ids, in the same order.
        id_array: ``ids`` as int64 ``(len(ids),)`` (read-only), for array lookups.
        group_table: the members grouped by the spans they cite, int64 ``(len(ids) + 2 *
            groups,)`` (read-only), one array to keep an entry small: :attr:`group_members`,
            then :attr:`group_sizes`, then :attr:`group_firsts`.

    Two entries are equal when their members and their groups are.
    """

    members: tuple[CatalogVersion, ...]
    ids: tuple[int, ...]
    id_array: npt.NDArray[np.int64] = field(repr=False)
    group_table: npt.NDArray[np.int64] = field(repr=False)

    @property
    def group_members(self) -> npt.NDArray[np.int64]:
        """The groups' member indices laid end to end, int64 ``(len(ids),)``: each group's
        ascending, groups in the order of their first member (every member is in one)."""
        return self.group_table[: len(self.ids)]

    @property
    def group_sizes(self) -> npt.NDArray[np.int64]:
        """Each group's number of members, int64 ``(groups,)``."""
        n = len(self.ids)
        return self.group_table[n: n + (self.group_table.shape[0] - n) // 2]

    @property
    def group_firsts(self) -> npt.NDArray[np.int64]:
        """Each group's smallest version id, int64 ``(groups,)``."""
        n = len(self.ids)
        return self.group_table[n + (self.group_table.shape[0] - n) // 2:]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SourceEntry):
            return NotImplemented
        return (self.members == other.members and self.ids == other.ids
                and np.array_equal(self.id_array, other.id_array)
                and np.array_equal(self.group_table, other.group_table))

    __hash__ = None  # type: ignore[assignment]  # equality compares arrays: not hashable


_GROUP_TABLE = attrgetter("group_table")
_IDS = attrgetter("ids")


def group_columns(entries: Sequence[SourceEntry]
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                             npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The entries' :attr:`~SourceEntry.group_members`, :attr:`~SourceEntry.group_sizes` and
    :attr:`~SourceEntry.group_firsts`, each laid end to end (int64), and each entry's number
    of groups: one concatenation of their group tables, split by position (the same layout
    as the properties read, one call for a plan's documents instead of three per entry)."""
    tables = list(map(_GROUP_TABLE, entries))
    members = np.asarray(list(map(len, map(_IDS, entries))), dtype=np.int64)
    spans = np.asarray(list(map(len, tables)), dtype=np.int64)
    table = np.concatenate(tables) if tables else np.zeros(0, dtype=np.int64)
    groups = (spans - members) // 2
    within = np.arange(int(spans.sum()), dtype=np.int64) - (spans.cumsum() - spans).repeat(
        spans)
    member_end = members.repeat(spans)
    size_end = member_end + groups.repeat(spans)
    is_member = within < member_end
    is_size = ~is_member & (within < size_end)
    return table[is_member], table[is_size], table[within >= size_end], groups


WARM_AHEAD_US = 60_000_000
""":meth:`Catalog.warm` computes nothing when an interval bound lies more than this after now
(microseconds: one minute)."""


@dataclass(slots=True)
class _Changes:
    """What one batch changed (see :meth:`Catalog.apply`)."""

    documents: set[str] = field(default_factory=set)
    """Documents a version citing them first was added to, or a member of was closed."""
    nodes: set[str] = field(default_factory=set)
    """Nodes a version was added to or closed of."""
    edge_ends: set[str] = field(default_factory=set)
    """Nodes at either end of an edge added or closed."""


_V = TypeVar("_V")
_VALUE = itemgetter(0)
_GENERATION = itemgetter(1)


class _View(Mapping[str, _V]):
    """The cached values one latest state reads, from a dict shared by every latest state:
    source -> ``(value, generation)``, the generation of the latest state that computed the
    value; a state reads those of its generation or an earlier one.

    A batch removes the values it may change (in place, after applying its rows) and keeps the
    rest (:meth:`carried`), so carrying the caches over costs a removal per change, not a copy
    of every value. A value in the dict was computed in its generation and not changed by any
    batch since, so it holds for every latest state from its generation on; a state never
    reads a value of a later generation (a plan that read the latest state just before a batch
    and looks its value up after)."""

    __slots__ = ("_generation", "_values")

    def __init__(self, values: dict[str, tuple[_V, int]] | None = None,
                 generation: int = 0) -> None:
        self._values: dict[str, tuple[_V, int]] = {} if values is None else values
        self._generation = generation

    def find(self, key: str) -> _V | None:
        """The value of ``key`` this view reads, or None."""
        found = self._values.get(key)
        if found is not None and found[1] <= self._generation:
            return found[0]
        return None

    def find_many(self, keys: Iterable[str]) -> list[_V | None]:
        """:meth:`find` of each of ``keys``, in order (one call; the same generation test
        as :meth:`find`: when every key is held and none of a later generation, the values
        are read without a Python loop)."""
        generation = self._generation
        found = list(map(self._values.get, keys))
        if None not in found:
            held = cast("list[tuple[_V, int]]", found)
            if max(map(_GENERATION, held), default=generation) <= generation:
                return list(map(_VALUE, held))
        return [f[0] if f is not None and f[1] <= generation else None for f in found]

    def __getitem__(self, key: str) -> _V:
        found = self.find(key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        generation = self._generation
        return iter([k for k, (_v, g) in list(self._values.items()) if g <= generation])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def put(self, key: str, value: _V) -> None:
        """Keep ``value`` as computed in this view's generation (the caller holds the
        catalog's cache lock and checked that the state is still open)."""
        self._values[key] = (value, self._generation)

    def carried(self, drop: Iterable[str]) -> _View[_V]:
        """The next generation's view of the same values, without those of ``drop`` (removed
        in place: this view no longer reads them either)."""
        for key in drop:
            self._values.pop(key, None)
        return _View(self._values, self._generation + 1)


class _Latest:
    """Source entries and links as of any time past every interval bound the catalog holds.

    Liveness does not change past the largest finite bound (``since``), so an entry computed
    as of ``(since, since)`` holds for every ``(valid_us, tx_us)`` with both in
    ``[since, OPEN)``. Entries and links are filled at start-up (:meth:`Catalog.warm`) or on
    first use; when a batch is applied, the new latest state (the next ``generation``) keeps
    the ones the batch cannot have changed (:meth:`Catalog.apply`). ``open`` turns False,
    under the catalog's cache lock, before a batch changes anything: a value computed while a
    batch is half applied is never kept.
    """

    __slots__ = ("entries", "generation", "links", "open", "since")

    def __init__(self, since: int, generation: int = 0,
                 entries: _View[SourceEntry] | None = None,
                 links: _View[Mapping[str, float]] | None = None) -> None:
        self.since = since
        self.generation = generation
        self.entries: _View[SourceEntry] = (
            _View(generation=generation) if entries is None else entries)
        self.links: _View[Mapping[str, float]] = (
            _View(generation=generation) if links is None else links)
        self.open = True

    def covers(self, valid_us: int, tx_us: int) -> bool:
        return self.since <= valid_us < OPEN and self.since <= tx_us < OPEN


class Catalog:
    """The in-memory read model (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.passages = LexicalIndex()
        """BM25 over node texts (row id = node version id)."""
        self.documents = LexicalIndex()
        """BM25 over whole source versions (row id = source version row id)."""
        self._versions: dict[int, CatalogVersion] = {}
        self._open_ids: set[int] = set()
        """The versions whose valid and transaction intervals both start at a finite bound
        and never end (``OPEN``): the ones live at every as-of past every finite bound."""
        self._by_node: dict[str, list[CatalogVersion]] = defaultdict(list)
        self._by_source: dict[str, list[CatalogVersion]] = defaultdict(list)
        self._citing_elsewhere: dict[str, list[CatalogVersion]] = defaultdict(list)
        """Versions citing a span of a document other than their own (first) one, by that
        document: with ``_by_source``, every version citing a document's spans."""
        self._by_label: dict[str, list[CatalogVersion]] = defaultdict(list)
        self._by_property: dict[tuple[str, str], list[CatalogVersion]] = defaultdict(list)
        self._edges: dict[int, _Edge] = {}
        self._out: dict[str, list[_Edge]] = defaultdict(list)
        self._in: dict[str, list[_Edge]] = defaultdict(list)
        self._source_of_row: dict[int, str] = {}
        self._rows_of_source: dict[str, list[list[int]]] = defaultdict(list)  # [row, from, to]
        self._last_rows: dict[str, int] = {}
        """Each source -> the row id of its last version recorded (whose transaction interval
        never ends): the current one at every time from :attr:`_last_rows_since` on."""
        self._last_rows_since = -OPEN - 1
        """The latest transaction time a source version recorded starts at (raised before
        :attr:`_last_rows` changes)."""
        self._spans: dict[CoordKey, SpanInfo] = {}
        self._unknown: set[CoordKey] = set()
        """Spans a version cites that no batch has brought information on yet."""
        self._tokens: dict[tuple[str, CoordKey], int] = {}
        self._strings: dict[str, str] = {}
        """One object per distinct node id, source id and relation: edges, versions and the
        spans versions cite share them instead of each holding its own decoded copy (and
        comparing two equal ones is an identity test)."""
        self._sets: dict[frozenset[Any], frozenset[Any]] = {}
        """One object per distinct label set and property set (most versions share a few)."""
        self._times: dict[int, int] = {}
        """One object per distinct interval bound and cited source version time (rows written
        together share theirs)."""
        self._max_event = -OPEN - 1  # the largest finite bound of a node or edge interval
        self._latest = _Latest(self._max_event)
        self._cache_lock = threading.Lock()
        """Held to close the latest state and to keep a value in its caches, so that no value
        is kept once a batch has started."""

    # ---------------------------------------------------------------- writes

    def apply(self, batch: CatalogBatch) -> None:
        """Add a batch's rows and close its intervals (idempotent: known ids are skipped).

        The latest state's cached entries and links carry over to the new latest state
        (:meth:`_next_latest`), except those the batch may change. A batch that fails part-way
        (or whose carry-over fails) leaves a latest state with empty caches."""
        previous = self._latest
        fallback = _Latest(previous.since, previous.generation + 1)  # before anything can fail
        with self._cache_lock:
            previous.open = False
        latest: _Latest | None = None
        try:
            latest = self._next_latest(previous, self._apply(batch))
        finally:
            if latest is None:  # new, empty caches: the shared ones may be half pruned
                fallback.since = self._max_event
                latest = fallback
            self._latest = latest

    def _next_latest(self, previous: _Latest, changes: _Changes) -> _Latest:
        """The latest state after a batch applied whole, with the previous state's entries and
        links the batch cannot have changed: all but the entries of ``changes.documents`` and
        the links of :meth:`_relinked`, removed from the shared caches. An entry or a link
        computed past every interval bound only read rows whose bounds were all at or below
        the previous ``since``; the batch changes one only by adding a row it would read or
        closing one it read."""
        return _Latest(self._max_event, previous.generation + 1,
                       previous.entries.carried(changes.documents),
                       previous.links.carried(self._relinked(changes)))

    def _relinked(self, changes: _Changes) -> set[str]:
        """The documents whose links ``changes`` may have changed: the ones whose members
        changed, the ones holding a node at either end of an edge added or closed, and the
        ones holding a node that shares an edge with a node a version was added to or closed
        of (which version of that node is live decides where the edge leads)."""
        out = set(changes.documents)
        nodes = set(changes.edge_ends)
        for node_id in changes.nodes:
            nodes.add(node_id)
            for edge in self._out.get(node_id, ()):
                nodes.add(edge.dst)
            for edge in self._in.get(node_id, ()):
                nodes.add(edge.src)
        for node_id in nodes:
            for version in self._by_node.get(node_id, ()):
                if version.source is not None:
                    out.add(version.source)
        return out

    def warm(self, now_us: int) -> int:
        """Compute every document's entry and links as of the latest state now, so plans find
        them ready instead of computing them on first use (about 26 and 31 us a document on
        the demo corpus). Computes nothing when some interval bound lies more than
        :data:`WARM_AHEAD_US` after ``now_us`` (microseconds since the Unix epoch): plans as of
        now are not past every bound, so they would not read them (a bound a little ahead, a
        writer's clock running fast, is passed by the plans of the next seconds). Stops early
        when a batch is applied meanwhile. Returns the number of documents whose entry and
        links are ready."""
        latest = self._latest
        since = latest.since
        if since > now_us + WARM_AHEAD_US:
            return 0
        done = 0
        for source in list(self._by_source):
            if not latest.open:
                break
            self.links(source, self.entry(source, since, since), since, since)
            done += 1
        return done

    def _cited(self, keys: tuple[CoordKey, ...]) -> tuple[CitedSpan, ...]:
        """``keys`` each with its :class:`SpanInfo` (None when unknown, and noted so that
        the information a later batch brings reaches the version)."""
        spans = self._spans
        cited = tuple([(key, spans.get(key)) for key in keys])
        for key, info in cited:
            if info is None:
                self._unknown.add(key)
        return cited

    def _update_spans(self, spans: Mapping[CoordKey, SpanInfo]) -> None:
        """Take a batch's span information, and pair it again with the spans of the versions
        already held that cite a span whose information it changes (rare: the information of
        a span is derived from its text and ledger row, which a later batch sends again when
        a new version cites the span). Only the versions citing the changed spans' documents
        are looked at."""
        known, unknown = self._spans, self._unknown
        changed = {key for key, info in spans.items()
                   if key in unknown or ((old := known.get(key)) is not None and old != info)}
        known.update(spans)
        if not changed:
            return
        unknown.difference_update(changed)
        # only the versions citing a changed span's document: none other can cite it
        seen: set[int] = set()
        for source in {key[0] for key in changed}:
            for version in (*self._by_source.get(source, ()),
                            *self._citing_elsewhere.get(source, ())):
                if version.version_id not in seen and not changed.isdisjoint(version.spans):
                    seen.add(version.version_id)
                    version.cited = self._cited(version.spans)

    def _mark_open(self, version: CatalogVersion) -> None:
        """Keep :attr:`_open_ids` in step with ``version``'s bounds."""
        if (version.valid_to == OPEN and version.tx_to == OPEN
                and version.valid_from != OPEN and version.tx_from != OPEN):
            self._open_ids.add(version.version_id)
        else:
            self._open_ids.discard(version.version_id)

    def _event(self, *bounds: int) -> None:
        for bound in bounds:
            if bound != OPEN and bound > self._max_event:
                self._max_event = bound

    def _apply(self, batch: CatalogBatch) -> _Changes:
        """Apply ``batch``; returns what it changed."""
        changes = _Changes()
        with self._lock:
            self._update_spans(batch.spans)
            fresh = [n for n in batch.nodes if n.version_id not in self._versions]
            strings, sets, times = self._strings, self._sets, self._times
            for n in fresh:
                labels: frozenset[str] = frozenset(n.labels)
                properties: frozenset[tuple[str, str]] = frozenset(n.properties.items())
                source = n.provenance[0].source_id if n.provenance else None
                version = CatalogVersion(
                    version_id=n.version_id, node_id=strings.setdefault(n.node_id, n.node_id),
                    source=None if source is None else strings.setdefault(source, source),
                    labels=sets.setdefault(labels, labels),
                    properties=sets.setdefault(properties, properties),
                    confidence=n.confidence,
                    spans=tuple([(strings.setdefault(r.source_id, r.source_id),
                                  times.setdefault(r.source_version_tx, r.source_version_tx),
                                  r.start, r.end) for r in n.provenance]),
                    valid_from=times.setdefault(n.valid_from_us, n.valid_from_us),
                    valid_to=_bound(n.valid_to_us, times),
                    tx_from=times.setdefault(n.tx_from_us, n.tx_from_us),
                    tx_to=_bound(n.tx_to_us, times),
                )
                version.cited = self._cited(version.spans)
                self._versions[n.version_id] = version
                self._mark_open(version)
                self._event(version.valid_from, version.valid_to, version.tx_from,
                            version.tx_to)
                self._by_node[version.node_id].append(version)
                if version.source is not None:
                    self._by_source[version.source].append(version)
                    changes.documents.add(version.source)
                for other in {key[0] for key in version.spans} - {version.source}:
                    self._citing_elsewhere[other].append(version)
                changes.nodes.add(version.node_id)
                for label in version.labels:
                    self._by_label[label].append(version)
                for pair in version.properties:
                    self._by_property[pair].append(version)
            for edge_id, e in batch.edges:
                if edge_id in self._edges:
                    continue
                edge = _Edge(edge_id=edge_id, src=strings.setdefault(e.src, e.src),
                             dst=strings.setdefault(e.dst, e.dst),
                             relation=strings.setdefault(e.relation, e.relation),
                             weight=e.weight,
                             valid_from=times.setdefault(e.valid_from_us, e.valid_from_us),
                             valid_to=_bound(e.valid_to_us, times),
                             tx_from=times.setdefault(e.tx_from_us, e.tx_from_us),
                             tx_to=_bound(e.tx_to_us, times))
                self._edges[edge_id] = edge
                self._event(edge.valid_from, edge.valid_to, edge.tx_from, edge.tx_to)
                self._out[edge.src].append(edge)
                self._in[edge.dst].append(edge)
                changes.edge_ends.update((edge.src, edge.dst))
            documents: list[LexicalRow] = []
            superseded: list[tuple[int, int]] = []
            for sv in batch.sources:
                rows = self._rows_of_source[sv.source_id]
                if sv.row_id not in self._source_of_row:
                    self._source_of_row[sv.row_id] = sv.source_id
                    self._last_rows_since = max(self._last_rows_since, sv.tx_us)
                    if rows and rows[-1][2] == OPEN:
                        rows[-1][2] = sv.tx_us
                    rows.append([sv.row_id, sv.tx_us, OPEN])
                    self._last_rows[sv.source_id] = sv.row_id
                    at = len(rows) - 1
                elif sv.row_id in self.documents:
                    continue
                else:  # recorded by a batch that failed before indexing it: indexed below
                    at = next(i for i, r in enumerate(rows) if r[0] == sv.row_id)
                if at > 0 and rows[at - 1][2] == sv.tx_us:
                    superseded.append((rows[at - 1][0], sv.tx_us))
                documents.append(LexicalRow(row_id=sv.row_id, terms=analyze(sv.text),
                                            valid_from_us=-OPEN - 1, valid_to_us=None,
                                            tx_from_us=sv.tx_us, tx_to_us=None))
        # the lexical indexes have their own locks; analysing text needs no catalog lock (the
        # versions of a batch that failed before indexing them are indexed when it is sent again)
        self.passages.add(
            LexicalRow(row_id=n.version_id, terms=analyze(n.text), valid_from_us=n.valid_from_us,
                       valid_to_us=n.valid_to_us, tx_from_us=n.tx_from_us, tx_to_us=n.tx_to_us)
            for n in batch.nodes if n.version_id not in self.passages
        )
        self.documents.add(documents)
        for row_id, tx_to in superseded:
            self.documents.close(row_id, tx_to)
        with self._lock:
            for version_id, tx_to in batch.closed_nodes:
                closing = self._versions.get(version_id)
                if closing is not None:
                    moved = closing.tx_to != tx_to  # the feed sends the last ones again
                    closing.tx_to = tx_to
                    self._mark_open(closing)
                    self._event(tx_to)
                    self.passages.close(version_id, tx_to)
                    if moved:
                        changes.nodes.add(closing.node_id)
                        if closing.source is not None:
                            changes.documents.add(closing.source)
            for edge_id, tx_to in batch.closed_edges:
                ending = self._edges.get(edge_id)
                if ending is not None:
                    if ending.tx_to != tx_to:
                        changes.edge_ends.update((ending.src, ending.dst))
                    ending.tx_to = tx_to
                    self._event(tx_to)
        return changes

    def compact(self) -> None:
        """Merge the lexical indexes' segments (after a bulk build)."""
        self.passages.compact()
        self.documents.compact()

    def count_tokens(self, key: CoordKey, tokenizer: str) -> int | None:
        """A cached exact token count of a span under the named tokenizer, or None."""
        return self._tokens.get((tokenizer, key))

    def remember_tokens(self, counts: Mapping[tuple[str, CoordKey], int]) -> None:
        """Cache exact token counts by ``(tokenizer, span)`` (a span's text never changes)."""
        with self._lock:
            self._tokens.update(counts)

    # ---------------------------------------------------------------- reads

    def source_of_document(self, row_id: int) -> str | None:
        """The source id of a document row (a source version row id)."""
        return self._source_of_row.get(row_id)

    def sources_of_documents(self, row_ids: Iterable[int]) -> list[str | None]:
        """:meth:`source_of_document` of each of ``row_ids``, in order (one call)."""
        return list(map(self._source_of_row.get, row_ids))

    def document_row(self, source_id: str, tx_us: int) -> int | None:
        """The row id of the version of ``source_id`` current at ``tx_us``, or None."""
        return self.document_rows((source_id,), tx_us)[0]

    def document_rows(self, source_ids: Iterable[str], tx_us: int) -> list[int | None]:
        """:meth:`document_row` of each of ``source_ids``, in order (one call; at or after
        the latest time a source version starts, each source's last version, read without a
        Python step per source, unless a batch recorded a later version meanwhile)."""
        since = self._last_rows_since
        if since <= tx_us < OPEN:
            if not isinstance(source_ids, Collection):  # read twice after a batch started
                source_ids = list(source_ids)
            found = list(map(self._last_rows.get, source_ids))
            if self._last_rows_since == since:
                return found
        get = self._rows_of_source.get
        # the latest version first: the current one of most documents at most times
        return [last[0] if (rows := get(source_id)) and (last := rows[-1])[1] <= tx_us < last[2]
                else self._document_row(source_id, tx_us) for source_id in source_ids]

    def _document_row(self, source_id: str, tx_us: int) -> int | None:
        for row_id, tx_from, tx_to in reversed(self._rows_of_source.get(source_id, ())):
            if tx_from <= tx_us < tx_to:
                return row_id
        return None

    def document_terms(self, source_id: str, tx_us: int) -> frozenset[str]:
        """The analysed terms of the document's version current at ``tx_us``."""
        row = self.document_row(source_id, tx_us)
        return frozenset() if row is None else self.documents.row_terms(row)

    def version(self, version_id: int) -> CatalogVersion | None:
        """The catalog entry of a node version."""
        return self._versions.get(version_id)

    def live_version_ids(self, version_ids: Iterable[int], valid_us: int, tx_us: int
                         ) -> set[int]:
        """The versions among ``version_ids`` the catalog holds live at ``(valid_us, tx_us)``
        (:meth:`CatalogVersion.live` of each, in one call).

        Past every finite bound (the latest state covers the as-of) a version is live exactly
        when both its intervals start at a finite bound and never end: the answer is a set
        intersection with :attr:`_open_ids`, kept when no batch started meanwhile."""
        if not isinstance(version_ids, Collection):  # read twice after a batch started
            version_ids = list(version_ids)
        latest = self._latest
        if latest.open and latest.covers(valid_us, tx_us):
            live = self._open_ids.intersection(version_ids)
            if latest.open:
                return live
        get = self._versions.get
        # CatalogVersion.live's test, inlined: one call for the whole batch
        return {v for v in version_ids
                if (found := get(v)) is not None
                and found.valid_from <= valid_us < found.valid_to
                and found.tx_from <= tx_us < found.tx_to}

    def live_version(self, node_id: str, valid_us: int, tx_us: int) -> CatalogVersion | None:
        """The version of ``node_id`` live at ``(valid_us, tx_us)``, or None."""
        for version in reversed(self._by_node.get(node_id, ())):
            if version.live(valid_us, tx_us):
                return version
        return None

    def live_nodes_of(self, source_id: str, valid_us: int, tx_us: int) -> list[CatalogVersion]:
        """The node versions live at ``(valid_us, tx_us)`` that cite ``source_id`` first, in
        version id order."""
        return [v for v in self._by_source.get(source_id, ()) if v.live(valid_us, tx_us)]

    def matching(self, labels: Iterable[str], properties: Mapping[str, str], valid_us: int,
                 tx_us: int) -> list[CatalogVersion]:
        """The node versions live at ``(valid_us, tx_us)`` that carry every label of
        ``labels`` and every ``key = value`` of ``properties``, in version id order; ``[]``
        without any filter."""
        wanted_labels = frozenset(labels)
        wanted_pairs = frozenset(properties.items())
        lists = [self._by_label.get(label, []) for label in sorted(wanted_labels)]
        lists += [self._by_property.get(pair, []) for pair in sorted(wanted_pairs)]
        if not lists:
            return []
        return [v for v in min(lists, key=len)
                if wanted_labels <= v.labels and wanted_pairs <= v.properties
                and v.live(valid_us, tx_us)]

    def versions(self, version_ids: Iterable[int]) -> list[CatalogVersion | None]:
        """:meth:`version` of each of ``version_ids``, in order (one call)."""
        return list(map(self._versions.get, version_ids))

    def span(self, key: CoordKey) -> SpanInfo | None:
        """Kind, estimate and location of a span, or None when it was never seen."""
        return self._spans.get(key)

    def location(self, key: CoordKey) -> Location:
        """Where a span sits in its original document; NOWHERE when unknown."""
        info = self._spans.get(key)
        return NOWHERE if info is None else info.location

    def neighbours(
        self, nodes: Iterable[CatalogVersion], valid_us: int, tx_us: int
    ) -> list[tuple[CatalogVersion, CatalogVersion, float]]:
        """``(node in the set, node elsewhere, edge weight)`` for every edge live at
        ``(valid_us, tx_us)`` that joins a node of ``nodes`` to a live node of another source,
        in either direction. Each pair once, with its heaviest edge; sorted by the pair's
        version ids."""
        given = {v.node_id: v for v in nodes}
        best: dict[tuple[int, int], tuple[CatalogVersion, CatalogVersion, float]] = {}
        for node_id, version in given.items():
            for edge, other_id in (
                *((e, e.dst) for e in self._out.get(node_id, ())),
                *((e, e.src) for e in self._in.get(node_id, ())),
            ):
                if not edge.live(valid_us, tx_us):
                    continue
                other = self.live_version(other_id, valid_us, tx_us)
                if other is None or other.source is None or other.source == version.source:
                    continue
                key = (version.version_id, other.version_id)
                if key not in best or edge.weight > best[key][2]:
                    best[key] = (version, other, edge.weight)
        return [best[k] for k in sorted(best)]

    def cross_links(
        self, nodes: Iterable[CatalogVersion], valid_us: int, tx_us: int
    ) -> list[CrossLink]:
        """Every edge live at ``(valid_us, tx_us)`` between a node of ``nodes`` and a live node
        of another source, in either direction, with its relation and direction (unlike
        :meth:`neighbours`, which keeps the heaviest edge per pair). Sorted by (node version
        id, other version id, relation, outgoing first)."""
        given = {v.node_id: v for v in nodes}
        out: list[CrossLink] = []
        for node_id, version in given.items():
            for edge, other_id, outgoing in (
                *((e, e.dst, True) for e in self._out.get(node_id, ())),
                *((e, e.src, False) for e in self._in.get(node_id, ())),
            ):
                if not edge.live(valid_us, tx_us):
                    continue
                other = self.live_version(other_id, valid_us, tx_us)
                if other is None or other.source is None or other.source == version.source:
                    continue
                out.append(CrossLink(node=version, other=other, relation=edge.relation,
                                     weight=edge.weight, outgoing=outgoing))
        out.sort(key=lambda c: (c.node.version_id, c.other.version_id, c.relation,
                                not c.outgoing))
        return out

    def entry(self, source_id: str, valid_us: int, tx_us: int) -> SourceEntry:
        """The document ``source_id`` as of ``(valid_us, tx_us)`` (see :class:`SourceEntry`).

        An as-of past every interval bound (any plan "now" once writes have settled) reads an
        entry computed once per document and kept until the next batch; any other as-of
        computes it."""
        return self.entries((source_id,), valid_us, tx_us)[0]

    def entries(self, source_ids: Sequence[str], valid_us: int, tx_us: int
                ) -> list[SourceEntry]:
        """:meth:`entry` of each of ``source_ids``, in their order (one as-of check for all
        of them). A source named twice gets the same entry object both times."""
        latest = self._latest
        if not latest.covers(valid_us, tx_us):
            made: dict[str, SourceEntry] = {}
            for source_id in source_ids:
                if source_id not in made:
                    made[source_id] = self._entry(source_id, valid_us, tx_us)
            return [made[source_id] for source_id in source_ids]
        cached = latest.entries.find_many(source_ids)
        if all(cached):  # every one cached (an entry is always true, None false)
            return cast("list[SourceEntry]", cached)
        out: list[SourceEntry] = []
        computed: dict[str, SourceEntry] = {}
        for source_id, found in zip(source_ids, cached, strict=True):
            if found is None:
                found = computed.get(source_id)
                if found is None:
                    found = computed[source_id] = self._entry(source_id, latest.since,
                                                              latest.since)
                    with self._cache_lock:
                        if latest.open:
                            latest.entries.put(source_id, found)
            out.append(found)
        return out

    def links(self, source_id: str, entry: SourceEntry, valid_us: int, tx_us: int
              ) -> Mapping[str, float]:
        """Other document -> the heaviest weight (at least 0.0) of an edge live at
        ``(valid_us, tx_us)`` that joins a member of ``entry`` (the document's entry as the
        caller read it from :meth:`entry`) to the live version of a node of that document,
        either direction; in source id order. Empty when no edge leaves the document.

        Kept apart from :meth:`entry` because few documents of a plan need them (the ones
        hops and the evidence measure start from) and they cost an edge walk. Cached like an
        entry for an as-of past every interval bound, and only for the entry the cache holds,
        so links always belong to the members the caller has (a batch applied in between
        does not mix two states)."""
        latest = self._latest
        if not (latest.covers(valid_us, tx_us) and latest.entries.find(source_id) is entry):
            return self._links(entry.members, valid_us, tx_us)
        found = latest.links.find(source_id)
        if found is None:
            found = self._links(entry.members, latest.since, latest.since)
            with self._cache_lock:
                if latest.open:
                    latest.links.put(source_id, found)
        return found

    def _links(self, members: Sequence[CatalogVersion], valid_us: int, tx_us: int
               ) -> Mapping[str, float]:
        links: dict[str, float] = {}
        for _mine, other, weight in self.neighbours(members, valid_us, tx_us):
            if other.source is not None:
                links[other.source] = max(links.get(other.source, 0.0), weight)
        return {k: links[k] for k in sorted(links)}

    def _entry(self, source_id: str, valid_us: int, tx_us: int) -> SourceEntry:
        members = tuple(self.live_nodes_of(source_id, valid_us, tx_us))
        groups: dict[tuple[CoordKey, ...], list[int]] = {}
        for i, member in enumerate(members):
            groups.setdefault(member.spans, []).append(i)
        ids = tuple(m.version_id for m in members)
        grouped = list(groups.values())
        return SourceEntry(
            members=members, ids=ids, id_array=_frozen(ids),
            group_table=_frozen([*(j for g in grouped for j in g), *(len(g) for g in grouped),
                                 *(ids[g[0]] for g in grouped)]))


def _frozen(values: Sequence[int]) -> npt.NDArray[np.int64]:
    """``values`` as a read-only int64 array (shared by every plan that reads an entry)."""
    array = np.asarray(values, dtype=np.int64)
    array.setflags(write=False)
    return array
