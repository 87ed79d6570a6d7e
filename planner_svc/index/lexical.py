"""BM25 over bitemporal rows, with corpus statistics taken as of the query's time.

Rows are versions (of nodes, or of whole source documents) with a valid interval
``[valid_from, valid_to)`` and a transaction interval ``[tx_from, tx_to)`` in microseconds.
A query at ``(valid_us, tx_us)`` sees only the rows live there, and so do its statistics: the
number of rows ``N``, their mean length and each term's document frequency are those of the
live rows. A later write therefore never changes the scores of a plan as of an earlier time.

Scoring is Okapi BM25 (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25
and Beyond", 2009) with Lucene's non-negative idf::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(r, q) = sum over the distinct terms t of q, in code point order, of
                  idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(r) / mean_len))

Every operation is exactly rounded and runs in a fixed order (``ln`` is
:func:`planner_svc.core.exactmath.ln`; lengths are summed as integers), so a score is the same
bits on every machine.

Storage: immutable segments of postings (term -> positions and term frequencies, and
position -> terms, both in CSR form), merged in tiers of similar size as rows arrive, plus
per-row columns (length and intervals) that grow by doubling. A query takes one snapshot (the
segment list and the row count) and never sees a half-added batch; queries run from any number
of threads while one thread adds rows or closes intervals.
"""

from __future__ import annotations

import bisect
import functools
import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, repeat
from operator import attrgetter
from typing import cast

import numpy as np
import numpy.typing as npt

from planner_svc.core.exactmath import ln
from planner_svc.index.best_rows import best_rows
from planner_svc.index.postings import (
    held_by_groups,
    held_positions,
    map_positions,
    postings_table,
)

__all__ = ["OPEN", "LexicalIndex", "LexicalRow", "LexicalView", "cached_ln"]

OPEN = int(np.iinfo(np.int64).max)
"""The upper bound stored for an open interval."""

_ROWS = attrgetter("rows")


cached_ln = functools.lru_cache(maxsize=1 << 16)(ln)
""":func:`~planner_svc.core.exactmath.ln` remembered by argument (a pure function: the same
bits; an idf's argument recurs on every plan over the same statistics), for at most 65,536
arguments."""

Int64s = npt.NDArray[np.int64]
Float64s = npt.NDArray[np.float64]
_MERGE_FANOUT = 4
"""Segments of one size tier (size class ``floor(log4 rows)``) merged together."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LexicalRow:
    """One version to index.

    Attributes:
        row_id: a unique, stable id (a node version id, a source version number).
        terms: its analysed terms, repeats kept (:func:`planner_svc.index.analysis.analyze`).
        valid_from_us, valid_to_us: valid interval, microseconds; ``valid_to_us`` None = open.
        tx_from_us, tx_to_us: transaction interval, microseconds; None = open.
    """

    row_id: int
    terms: Sequence[str]
    valid_from_us: int
    valid_to_us: int | None
    tx_from_us: int
    tx_to_us: int | None


@dataclass(frozen=True, slots=True)
class _Segment:
    """Postings of a contiguous range of positions ``[first, first + rows)``.

    ``term_ptr[i]:term_ptr[i+1]`` slices ``term_rows``/``term_tf`` for the i-th entry of
    ``term_ids`` (ascending); ``row_ptr[p - first]:row_ptr[p - first + 1]`` slices
    ``row_terms`` (ascending term ids) and ``row_tf`` (their frequencies) for position ``p``.
    """

    first: int
    rows: int
    term_ids: Int64s
    term_ptr: Int64s
    term_rows: Int64s
    term_tf: Int64s
    row_ptr: Int64s
    row_terms: Int64s
    row_tf: Int64s
    lookup: dict[int, tuple[int, int]]

    def postings(self, tid: int) -> tuple[Int64s, Int64s] | None:
        span = self.lookup.get(tid)
        if span is None:
            return None
        return self.term_rows[span[0] : span[1]], self.term_tf[span[0] : span[1]]

    def terms_of(self, position: int) -> tuple[Int64s, Int64s]:
        """The term ids of a position (ascending) and their frequencies."""
        i = position - self.first
        lo, hi = int(self.row_ptr[i]), int(self.row_ptr[i + 1])
        return self.row_terms[lo:hi], self.row_tf[lo:hi]


def _build(first: int, term_ids: Int64s, lengths: Int64s) -> _Segment:
    """A segment of ``lengths.shape[0]`` rows at positions ``first, first + 1, ...``, from
    their term ids laid end to end (``term_ids``: int64, ``lengths[i]`` ids for row ``i``, in
    text order, repeats kept)."""
    n_rows = int(lengths.shape[0])
    offsets = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
    span = int(term_ids.max()) + 1 if term_ids.shape[0] else 1
    keys, tfs = np.unique(offsets * span + term_ids, return_counts=True)  # by row, then term
    rows, tids = np.divmod(keys, span)
    row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=row_ptr[1:])
    tids = tids.astype(np.int64)
    tfs = tfs.astype(np.int64)
    return _pack(first, n_rows, tids, rows.astype(np.int64) + first, tfs, row_ptr, tids, tfs)


def _pack(first: int, n_rows: int, tids: Int64s, rows: Int64s, tfs: Int64s,
          row_ptr: Int64s, row_terms: Int64s, row_tf: Int64s) -> _Segment:
    order = np.lexsort((rows, tids))
    tids, rows, tfs = tids[order], rows[order], tfs[order]
    if tids.shape[0]:
        first_of = np.empty(tids.shape[0], dtype=np.bool_)
        first_of[0] = True
        np.not_equal(tids[1:], tids[:-1], out=first_of[1:])
        starts = np.flatnonzero(first_of)
        unique = tids[starts]
    else:
        starts = np.zeros(0, dtype=np.int64)
        unique = tids
    ptr = np.append(starts, tids.shape[0]).astype(np.int64)
    lookup = dict(zip(unique.tolist(), zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=True),
                      strict=True))
    return _Segment(first=first, rows=n_rows, term_ids=unique.astype(np.int64), term_ptr=ptr,
                    term_rows=rows, term_tf=tfs, row_ptr=row_ptr, row_terms=row_terms,
                    row_tf=row_tf, lookup=lookup)


def _merge(segments: Sequence[_Segment]) -> _Segment:
    """One segment holding the postings of consecutive ``segments``."""
    tids = np.concatenate([np.repeat(s.term_ids, np.diff(s.term_ptr)) for s in segments])
    rows = np.concatenate([s.term_rows for s in segments])
    tfs = np.concatenate([s.term_tf for s in segments])
    row_terms = np.concatenate([s.row_terms for s in segments])
    row_tf = np.concatenate([s.row_tf for s in segments])
    ptrs = [segments[0].row_ptr]
    offset = int(segments[0].row_ptr[-1])
    for s in segments[1:]:
        ptrs.append(s.row_ptr[1:] + offset)
        offset += int(s.row_ptr[-1])
    n_rows = sum(s.rows for s in segments)
    return _pack(segments[0].first, n_rows, tids, rows, tfs, np.concatenate(ptrs), row_terms,
                 row_tf)


DENSE_POSTINGS_RATIO = 64
"""A search adds its terms' postings into one score per row of the snapshot when they number at
least ``1 / DENSE_POSTINGS_RATIO`` of its rows (clearing and scanning a dense array is cheaper
than sorting that many postings: on the demo corpus, 105 against 304 µs a search of a
development question); fewer postings are merged by sorting. Both add each row's
contributions in the same order, so the scores have the same bits."""


JOINED_POSTINGS_PER_TERM = 1024
"""A plan's terms are looked up in one search of their postings laid end to end while the lists
hold at most this many positions a term on average; longer lists are searched one at a time.
Joining copies every list. Timed with 5 terms and 166 positions (a plan's median call), joined
against one at a time: 27 against 27 µs a call at 250 positions a term, 38 against 36 at
1,000, 48 against 44 at 2,000, then 273 against 54 at 4,000 (the joined copy outgrows the
allocator's small blocks) and 729 against 135 at 16,000. Up to about 1,000 the two are within
a few percent, and joining runs fewer instructions (0.5 M a plan on the demo corpus, whose
lists hold a median of 156 positions, 1,086 at the 90th percentile); past it, one at a time is
faster, as for the common terms of a million passages. (Timed with the numpy search; the
compiled table of :func:`~planner_svc.index.postings.postings_table` keeps the rule.)"""


def _joined(postings: Sequence[Int64s]) -> bool:
    """Whether to search ``postings`` laid end to end (:data:`JOINED_POSTINGS_PER_TERM`)."""
    total: int = sum(map(len, postings))
    return total <= JOINED_POSTINGS_PER_TERM * len(postings)


def _distinct(values: Int64s) -> Int64s:
    """Sorted distinct values (a sort and a neighbour comparison)."""
    ordered = np.sort(values)
    if ordered.shape[0] < 2:
        return ordered
    keep = np.empty(ordered.shape[0], dtype=np.bool_)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


class _Column:
    """A growable int64 column (doubling). Readers keep the array they read: growth copies
    into a new array, so an old reference stays valid."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data = np.zeros(1024, dtype=np.int64)

    def put(self, at: int, values: Sequence[int] | Int64s) -> None:
        need = at + len(values)
        if need > self.data.shape[0]:
            grown = np.zeros(max(need, 2 * self.data.shape[0]), dtype=np.int64)
            grown[:at] = self.data[:at]
            self.data = grown
        self.data[at:need] = values


@dataclass(frozen=True, slots=True)
class _Snapshot:
    size: int
    generation: int  # the index's generation when the snapshot was taken
    max_event: int
    segments: tuple[_Segment, ...]
    row_ids: Int64s
    lengths: Int64s
    valid_from: Int64s
    valid_to: Int64s
    tx_from: Int64s
    tx_to: Int64s


@dataclass(frozen=True, slots=True)
class _Stats:
    """The rows live at one as-of point: a mask over positions, their number, mean length;
    and, per term id, its live postings and their BM25 contributions (filled on first use).

    The statistics past every interval bound are kept by the index until its rows change, so
    every view past that point shares the postings: a term's live rows and contributions are
    computed once per state of the index, not once per query.
    """

    live: npt.NDArray[np.bool_]
    count: int
    mean_length: float
    generation: int  # the index generation the mask was computed at
    live_or_past: npt.NDArray[np.bool_]
    """``live`` with one False after it: the mask read at a position clipped to the size."""
    terms: dict[int, _TermScores] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _TermScores:
    """One term's live postings under one :class:`_Stats`: positions (ascending), term
    frequencies, idf and each posting's BM25 contribution ``idf * tf * (k1 + 1) / (tf +
    norm)``."""

    rows: Int64s
    tfs: Int64s
    idf: float
    values: Float64s


class LexicalIndex:
    """BM25 over bitemporal rows (see the module docstring).

    Args:
        k1: term-frequency saturation, > 0 (default 1.2).
        b: length normalisation, in [0, 1] (default 0.75).
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._lock = threading.Lock()
        self._positions: dict[int, int] = {}
        self._position_of: Int64s = np.full(0, -1, dtype=np.int64)
        """Row id -> position (-1 for a row id not indexed), for row ids below its length: the
        positions of many rows in one vectorised read. Grown by copying; a read sees either
        array (a position past the reader's snapshot is outside it, as with the dict)."""
        self._columns = {name: _Column() for name in
                         ("row_ids", "lengths", "valid_from", "valid_to", "tx_from", "tx_to")}
        self._terms: dict[str, int] = {}
        self._names: list[str] = []
        self._segments: tuple[_Segment, ...] = ()
        self._size = 0
        self._max_event = -OPEN - 1  # the largest finite interval bound
        self._current: _Stats | None = None  # statistics past every event, while unchanged
        self._generation = 0  # advanced by every change of rows or intervals

    # ---------------------------------------------------------------- writes

    def __len__(self) -> int:
        """Number of rows indexed (live or not)."""
        return self._size

    def __contains__(self, row_id: object) -> bool:
        return row_id in self._positions

    def add(self, rows: Iterable[LexicalRow]) -> int:
        """Index ``rows``; a row id already indexed is skipped. Returns the number added."""
        with self._lock:
            fresh: list[LexicalRow] = []
            seen: set[int] = set()
            for row in rows:
                if row.row_id not in self._positions and row.row_id not in seen:
                    seen.add(row.row_id)
                    fresh.append(row)
            if not fresh:
                return 0
            base = self._size
            for offset, row in enumerate(fresh):
                self._positions[row.row_id] = base + offset
            terms = self._terms
            flat = [term for row in fresh for term in row.terms]
            for term in dict.fromkeys(flat):  # new terms get ids in first-occurrence order
                if term not in terms:
                    terms[term] = len(self._names)
                    self._names.append(term)
            term_ids = np.fromiter(map(terms.__getitem__, flat), dtype=np.int64,
                                   count=len(flat))
            lengths = np.fromiter((len(row.terms) for row in fresh), dtype=np.int64,
                                  count=len(fresh))
            bounds = [bound for row in fresh
                      for bound in (row.valid_from_us, row.valid_to_us, row.tx_from_us,
                                    row.tx_to_us) if bound is not None]
            if bounds:
                self._max_event = max(self._max_event, max(bounds))
            self._map_positions([r.row_id for r in fresh], base)
            cols = self._columns
            cols["row_ids"].put(base, [r.row_id for r in fresh])
            cols["lengths"].put(base, lengths)
            cols["valid_from"].put(base, [r.valid_from_us for r in fresh])
            cols["valid_to"].put(base, [OPEN if r.valid_to_us is None else r.valid_to_us
                                        for r in fresh])
            cols["tx_from"].put(base, [r.tx_from_us for r in fresh])
            cols["tx_to"].put(base, [OPEN if r.tx_to_us is None else r.tx_to_us for r in fresh])
            self._segments = self._tiered((*self._segments, _build(base, term_ids, lengths)))
            self._current = None
            self._generation += 1
            self._size = base + len(fresh)  # published last
        return len(fresh)

    def _map_positions(self, row_ids: list[int], base: int) -> None:
        """Record positions ``base, base + 1, ...`` of ``row_ids`` in the dense map (row ids
        that are negative or far past the number of rows are left to the dict: the map stays
        within a few times the rows indexed)."""
        ids = np.asarray(row_ids, dtype=np.int64)
        limit = 4 * (base + len(row_ids)) + 1024
        keep = (ids >= 0) & (ids < limit)
        if not keep.any():
            return
        ids = ids[keep]
        positions = np.arange(base, base + len(row_ids), dtype=np.int64)[keep]
        current = self._position_of
        top = int(ids.max())
        if top >= current.shape[0]:
            grown = np.full(min(limit, max(2 * current.shape[0], top + 1)), -1, dtype=np.int64)
            grown[: current.shape[0]] = current
            grown[ids] = positions
            self._position_of = grown
        else:
            current[ids] = positions

    @staticmethod
    def _tiered(segments: tuple[_Segment, ...]) -> tuple[_Segment, ...]:
        """Merge the newest run of segments while ``_MERGE_FANOUT`` of one size tier end it."""
        out = list(segments)
        while len(out) >= _MERGE_FANOUT:
            tail = out[-_MERGE_FANOUT:]
            tiers = {max(s.rows, 1).bit_length() // 2 for s in tail}
            if len(tiers) != 1:
                break
            out[-_MERGE_FANOUT:] = [_merge(tail)]
        return tuple(out)

    def compact(self) -> None:
        """Merge every segment into one (after a bulk build: fewer segments, faster queries)."""
        with self._lock:
            if len(self._segments) > 1:
                self._segments = (_merge(self._segments),)

    def close(self, row_id: int, tx_to_us: int) -> bool:
        """End a row's transaction interval at ``tx_to_us`` (a superseded or retired version).

        Returns False when the row is unknown.
        """
        with self._lock:
            position = self._positions.get(row_id)
            if position is None:
                return False
            self._columns["tx_to"].data[position] = tx_to_us
            self._max_event = max(self._max_event, tx_to_us)
            self._current = None
            self._generation += 1
            return True

    # ---------------------------------------------------------------- reads

    def view(self, *, valid_us: int, tx_us: int) -> LexicalView:
        """A read view as of ``(valid_us, tx_us)``: one snapshot of the rows, their
        statistics, and document frequencies cached for the view's life (one plan)."""
        with self._lock:
            size = self._size
            cols = {name: col.data[:size] for name, col in self._columns.items()}
            snap = _Snapshot(size=size, generation=self._generation,
                             max_event=self._max_event, segments=self._segments, **cols)
        return LexicalView(self, snap, valid_us, tx_us)

    def _stats(self, snap: _Snapshot, valid_us: int, tx_us: int) -> _Stats:
        """The live rows of ``snap`` as of ``(valid_us, tx_us)``; past every event, shared
        with every view of the same generation. A change made while the mask is computed
        advances the generation, so the mask is then used by this view only (never published
        as the shared statistics of a state it may not describe)."""
        past_events = valid_us >= snap.max_event and tx_us >= snap.max_event
        current = self._current
        if past_events and current is not None and current.generation == snap.generation:
            return current
        live = ((snap.valid_from <= valid_us) & (snap.valid_to > valid_us)
                & (snap.tx_from <= tx_us) & (snap.tx_to > tx_us))
        count = int(np.count_nonzero(live))
        total = int(snap.lengths[live].sum(dtype=np.int64))  # exact integer sum
        stats = _Stats(live=live, count=count, mean_length=total / count if count else 0.0,
                       generation=snap.generation,
                       live_or_past=np.concatenate((live, np.zeros(1, dtype=np.bool_))))
        if past_events:
            with self._lock:
                if self._generation == snap.generation:
                    self._current = stats
        return stats

    def search(self, terms: Sequence[str], *, valid_us: int, tx_us: int,
               limit: int) -> list[tuple[int, float]]:
        """:meth:`LexicalView.search` in a view of its own."""
        return self.view(valid_us=valid_us, tx_us=tx_us).search(terms, limit=limit)

    def score_rows(self, terms: Sequence[str], row_ids: Iterable[int], *, valid_us: int,
                   tx_us: int) -> dict[int, float]:
        """:meth:`LexicalView.score_rows` in a view of its own."""
        return self.view(valid_us=valid_us, tx_us=tx_us).score_rows(terms, row_ids)

    def idf(self, term: str, *, valid_us: int, tx_us: int) -> float:
        """:meth:`LexicalView.idf` in a view of its own."""
        return self.view(valid_us=valid_us, tx_us=tx_us).idf(term)

    def frequencies(self, terms: Iterable[str], *, valid_us: int, tx_us: int
                    ) -> tuple[int, dict[str, int]]:
        """:meth:`LexicalView.frequencies` in a view of its own."""
        return self.view(valid_us=valid_us, tx_us=tx_us).frequencies(terms)

    def row_terms(self, row_id: int) -> frozenset[str]:
        """The distinct analysed terms a row holds (empty for an unknown row)."""
        position = self._positions.get(row_id)
        if position is None:
            return frozenset()
        for segment in self._segments:
            if segment.first <= position < segment.first + segment.rows:
                return frozenset(self._names[int(t)] for t in segment.terms_of(position)[0])
        return frozenset()


class LexicalView:
    """Reads of a :class:`LexicalIndex` as of one ``(valid_us, tx_us)``, over one snapshot
    (rows added later are not seen). Document frequencies and idfs are computed once per term.
    Not thread-safe: one view per plan."""

    def __init__(self, index: LexicalIndex, snap: _Snapshot, valid_us: int, tx_us: int) -> None:
        self._index = index
        self._snap = snap
        self._stats = index._stats(snap, valid_us, tx_us)
        self._firsts = [s.first for s in snap.segments]
        self._tx_us = tx_us

    @property
    def live_rows(self) -> int:
        """Number of rows live in the view."""
        return self._stats.count

    def rows_at_tx(self) -> int:
        """Number of rows of the snapshot current at the view's transaction time, whatever
        their valid interval (live in the view or not). The closing times are read now: a
        closing applied after the view was taken, at or before the view's transaction time (a
        backdated one), leaves its row uncounted here though the view's liveness still sees it.
        A pass over every row, not cached: for the rare caller, not for every query."""
        snap, tx_us = self._snap, self._tx_us
        return int(np.count_nonzero((snap.tx_from <= tx_us) & (snap.tx_to > tx_us)))

    def _term_ids(self, terms: Iterable[str]) -> list[tuple[str, int]]:
        """The known distinct ``terms`` with their ids, in code point order (the order their
        contributions are added in: it depends on the terms alone, not on indexing order)."""
        known = self._index._terms
        return [(t, tid) for t in sorted(set(terms)) if (tid := known.get(t)) is not None]

    def _postings(self, tid: int) -> tuple[Int64s, Int64s]:
        """Live positions holding term ``tid`` and their term frequencies, ascending."""
        parts = [p for s in self._snap.segments if (p := s.postings(tid)) is not None]
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        rows = np.concatenate([r for r, _ in parts]) if len(parts) > 1 else parts[0][0]
        tfs = np.concatenate([t for _, t in parts]) if len(parts) > 1 else parts[0][1]
        keep = self._stats.live[rows[rows < self._snap.size]] if rows.shape[0] else rows
        if rows.shape[0] and rows[-1] >= self._snap.size:  # rows added after the snapshot
            inside = rows < self._snap.size
            rows, tfs = rows[inside], tfs[inside]
        return rows[keep], tfs[keep]

    def _scores(self, tid: int) -> _TermScores:
        """Term ``tid``'s live postings, idf and contributions (computed once per statistics:
        once per plan, or once per state of the index past every interval bound)."""
        found = self._stats.terms.get(tid)
        if found is None:
            rows, tfs = self._postings(tid)
            df = int(rows.shape[0])
            idf = cached_ln(1.0 + (self._stats.count - df + 0.5) / (df + 0.5))
            k1 = self._index.k1
            tf = tfs.astype(np.float64)
            values = idf * (tf * (k1 + 1.0) / (tf + self._norms(rows)))
            for shared in (rows, tfs, values):  # plans and threads share them: read-only
                shared.setflags(write=False)
            found = self._stats.terms[tid] = _TermScores(rows=rows, tfs=tfs, idf=idf,
                                                         values=values)
        return found

    def _live_postings(self, tid: int) -> tuple[Int64s, Int64s]:
        """Live positions holding term ``tid`` and their term frequencies, ascending."""
        scores = self._scores(tid)
        return scores.rows, scores.tfs

    def _term_idf(self, tid: int) -> float:
        return self._scores(tid).idf

    def _norms(self, positions: Int64s) -> Float64s:
        index = self._index
        lengths = self._snap.lengths[positions].astype(np.float64)
        return index.k1 * (1.0 - index.b + index.b * (lengths / self._stats.mean_length))

    def search(self, terms: Sequence[str], *, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best live rows for query ``terms`` (repeats ignored).

        The postings are added and the best rows kept in one compiled pass
        (:func:`~planner_svc.index.best_rows.best_rows`) when every contribution is finite
        and above 0.0 (BM25's are), else in numpy (the same additions in the same order).

        Returns:
            ``(row_id, score)`` pairs, score descending, ties by row id ascending; rows holding
            no query term are absent.
        """
        if self._snap.size == 0 or limit <= 0 or self._stats.count == 0:
            return []
        scored = [self._scores(tid) for _term, tid in self._term_ids(terms)]
        parts = [(term.rows, term.values) for term in scored if term.rows.shape[0]]
        if not parts:
            return []
        if len(parts) == 1:
            laid_rows, laid_values = parts[0]  # read-only: the term's shared postings
        else:
            laid_rows = np.concatenate([rows for rows, _ in parts])
            laid_values = np.concatenate([values for _, values in parts])
            laid_rows.setflags(write=False)
            laid_values.setflags(write=False)
        # every term's contributions in term order, in one compiled pass
        best = best_rows(laid_rows, laid_values, self._snap.size, self._snap.row_ids, limit)
        if best is not None:
            return list(zip(best[0].tolist(), best[1].tolist(), strict=True))
        postings = laid_rows.shape[0]
        positions: Int64s
        scores: Float64s
        if len(parts) == 1:  # one term: its postings are the positions and their scores
            positions, scores = parts[0]
        elif postings * DENSE_POSTINGS_RATIO >= self._snap.size:
            # many postings: add them into a score per position of the snapshot (no sort);
            # bincount adds its weights in input order, so term by term, in term order: the
            # same additions. A contribution is above 0.0 (idf and tf are), so a position
            # holds a term exactly when its sum is above 0.0.
            # (float64 with weights, whatever numpy's stubs say)
            dense = cast("Float64s", np.bincount(laid_rows, weights=laid_values,
                                                 minlength=self._snap.size))
            positions = (dense > 0.0).nonzero()[0]
            scores = dense[positions]
        else:
            positions = _distinct(laid_rows)
            scores = np.zeros(positions.shape[0], dtype=np.float64)
            for rows, values in parts:  # term by term, in term order: a fixed order of additions
                scores[positions.searchsorted(rows)] += values
        ids = self._snap.row_ids[positions]
        if positions.shape[0] > limit:
            cut = positions.shape[0] - limit
            keep = scores >= np.partition(scores, cut)[cut]
            ids, scores = ids[keep], scores[keep]
        order = np.lexsort((ids, -scores))[:limit]
        return list(zip(ids[order].tolist(), scores[order].tolist(), strict=True))

    def score_rows(self, terms: Sequence[str], row_ids: Iterable[int]) -> dict[int, float]:
        """BM25 of the given rows that are live and hold a query term (the same bits
        :meth:`search` gives them: the same operations, term by term in the same order):
        ``row_id -> score``, in the order of ``row_ids``."""
        if self._stats.count == 0:
            return {}
        query = self._term_ids(terms)
        if not query:
            return {}
        given = list(row_ids)
        found_at = self.positions(given)
        keep = (found_at >= 0).nonzero()[0]
        if not keep.shape[0]:
            return {}
        found = [term for _term, tid in query if (term := self._scores(tid)).rows.shape[0]]
        if not found:
            return {}
        positions = found_at[keep]
        # the postings' contributions (those search adds); a row without the term adds +0.0,
        # which leaves its sum unchanged
        postings = list(map(_ROWS, found))
        if _joined(postings):
            table, hit = self._table(found, positions)
            # term by term, in term order, as search adds them: an accumulation down the
            # terms (0.0 + the first term's contribution is that contribution)
            scores = np.add.accumulate(table, axis=0)[-1]
            held = np.logical_or.reduce(hit, axis=0)
        else:  # term by term, in term order, as search adds them: no table
            scores = np.zeros(positions.shape[0], dtype=np.float64)
            held = np.zeros(positions.shape[0], dtype=np.bool_)
            for term, rows in zip(found, postings, strict=True):
                at = np.minimum(rows.searchsorted(positions), rows.shape[0] - 1)
                holds = rows[at] == positions
                scores += np.where(holds, term.values[at], 0.0)
                held |= holds
        return dict(compress(zip(map(given.__getitem__, keep.tolist()), scores.tolist(),
                                 strict=True), held.tolist()))

    def positions(self, row_ids: Sequence[int] | Int64s) -> Int64s:
        """The view's positions of ``row_ids``, in their order: int64 ``(len(row_ids),)``, -1
        for a row unknown, outside the view's snapshot or not live in the view."""
        return self._mapped(row_ids, live_only=True)

    def _mapped(self, row_ids: Sequence[int] | Int64s, *, live_only: bool) -> Int64s:
        """:meth:`positions`, or without ``live_only`` the snapshot's positions of ``row_ids``
        whether live or not (-1 for a row unknown or outside the snapshot)."""
        ids = row_ids
        if not (type(ids) is np.ndarray and ids.dtype == np.int64 and ids.ndim == 1
                and ids.flags.c_contiguous):  # (an id array is taken as it is)
            ids = np.ascontiguousarray(np.asarray(row_ids, dtype=np.int64).reshape(-1))
        out = np.empty(ids.shape[0], dtype=np.int64)
        # the dense map, then the snapshot's size and the live mask
        live = self._stats.live_or_past
        if map_positions(ids, self._index._position_of, live, live_only, out):
            # not indexed, or a row id the dense map does not hold (a position the map holds
            # that is outside or not live reads the same position here, and stays -1)
            known, size = self._index._positions, self._snap.size
            for j in (out < 0).nonzero()[0].tolist():
                position = known.get(int(ids[j]), -1)
                out[j] = (position if 0 <= position < size and (live[position] or not live_only)
                          else -1)
        return out

    def contributions(self, terms: Iterable[str], positions: Int64s
                      ) -> list[tuple[str, Float64s]]:
        """Each query term's BM25 contribution at each of ``positions`` (from
        :meth:`positions`): ``(term, float64 (len(positions),))`` for the distinct terms a
        live row holds, in the order :meth:`search` adds them (code point order); 0.0 where
        the row does not hold the term or the position is -1.

        Adding a row's contributions in this order, starting from 0.0, gives the same bits as
        :meth:`search` and :meth:`score_rows` (adding 0.0 leaves a sum unchanged)."""
        out: list[tuple[str, Float64s]] = []
        if self._stats.count == 0 or not positions.shape[0]:
            return out
        found = [(term, scores) for term, tid in self._term_ids(terms)
                 if (scores := self._scores(tid)).rows.shape[0]]
        if not found:
            return out
        table, _hit = self._table([scores for _term, scores in found], positions)
        return [(term, table[i]) for i, (term, _scores) in enumerate(found)]

    def postings(self, terms: Iterable[str]) -> list[tuple[str, Int64s, Float64s]]:
        """Each query term's live postings and their BM25 contributions: ``(term, positions
        (ascending), contributions)`` for the distinct terms a live row holds, in code point
        order (the order :meth:`search` adds them); both arrays read-only, shared."""
        if self._stats.count == 0:
            return []
        return [(term, scores.rows, scores.values) for term, tid in self._term_ids(terms)
                if (scores := self._scores(tid)).rows.shape[0]]

    def _table(self, terms: Sequence[_TermScores], positions: Int64s
               ) -> tuple[Float64s, npt.NDArray[np.bool_]]:
        """Each of ``terms``' contribution at each of ``positions`` (from :meth:`positions`;
        0.0 where the row does not hold the term or the position is -1), and whether the row
        holds it: float64 and bool, both ``(len(terms), len(positions))``. The contributions
        are read from the terms' postings, so they are the values :meth:`search` adds (by
        :func:`~planner_svc.index.postings.postings_table`: a galloping search while
        the positions ascend, as those of sorted row ids do)."""
        if not positions.flags.c_contiguous or positions.dtype != np.int64:
            positions = np.ascontiguousarray(positions, dtype=np.int64)
        postings = list(map(_ROWS, terms))
        table = np.empty((len(terms), positions.shape[0]), dtype=np.float64)
        hit = np.empty((len(terms), positions.shape[0]), dtype=np.bool_)
        if len(terms) == 1:
            postings_table(postings[0], np.asarray((0, postings[0].shape[0]), dtype=np.int64),
                           terms[0].values, positions, table, hit)
        elif _joined(postings):  # one search of the lists laid end to end
            starts = np.fromiter(accumulate(map(len, postings), initial=0), dtype=np.int64,
                                 count=len(terms) + 1)
            postings_table(np.concatenate(postings), starts,
                           np.concatenate([term.values for term in terms]), positions,
                           table, hit)
        else:  # long lists: one at a time, not copied
            for i, term in enumerate(terms):
                postings_table(term.rows, np.asarray((0, term.rows.shape[0]), dtype=np.int64),
                               term.values, positions, table[i:i + 1], hit[i:i + 1])
        return table, hit

    def holds(self, term: str, positions: Int64s) -> npt.NDArray[np.bool_]:
        """Whether the live row at each of ``positions`` (from :meth:`positions`) holds the
        analysed ``term`` (False at -1)."""
        held: npt.NDArray[np.bool_] = self.holds_many([term], positions)[0]
        return held

    def holds_many(self, terms: Sequence[str], positions: Int64s) -> npt.NDArray[np.bool_]:
        """:meth:`holds` of each of ``terms``: bool ``(len(terms), len(positions))``, row ``i``
        for ``terms[i]`` (all False for a term no live row holds)."""
        out = np.zeros((len(terms), positions.shape[0]), dtype=np.bool_)
        if not positions.shape[0]:
            return out
        names = self._index._terms
        which: list[int] = []
        postings: list[Int64s] = []
        for i, term in enumerate(terms):
            tid = names.get(term)
            if tid is not None and (rows := self._live_postings(tid)[0]).shape[0]:
                which.append(i)
                postings.append(rows)
        if postings:  # a binary search of each position in each term's postings, compiled
            held_positions(postings, which, positions, out)
        return out

    def frequencies(self, terms: Iterable[str]) -> tuple[int, dict[str, int]]:
        """The number of live rows, and how many of them hold each analysed term (0 for a term
        none holds)."""
        out: dict[str, int] = {}
        known = self._index._terms
        for term in sorted(set(terms)):
            tid = known.get(term)
            if tid is None:
                out[term] = 0
                continue
            out[term] = int(self._scores(tid).rows.shape[0])
        return self._stats.count, out

    def idf(self, term: str) -> float:
        """The idf of an analysed ``term`` among the live rows; a term no live row holds gets
        the largest, ``ln(1 + (N + 0.5) / 0.5)``."""
        tid = self._index._terms.get(term)
        if tid is None:
            return cached_ln(1.0 + (self._stats.count + 0.5) / 0.5)
        return self._term_idf(tid)

    def held_terms(self, row_ids: Iterable[int], among: Iterable[str] | None = None
                   ) -> set[str]:
        """The distinct analysed terms the given rows hold together (rows outside the
        view's snapshot hold none); with ``among``, only those of its terms."""
        held = self._held_term_ids(row_ids)
        if among is not None:
            wanted = among if isinstance(among, Collection) else list(among)
            ids = map(self._index._terms.get, wanted, repeat(-1))
            return set(compress(wanted, map(held.__contains__, ids)))
        return set(map(self._index._names.__getitem__, held))

    def held_terms_many(self, groups: Sequence[Int64s], among: Collection[str]
                        ) -> list[set[str]]:
        """:meth:`held_terms` of each group of row ids (int64 arrays) with ``among``, in
        their order: one compiled pass over the groups' rows per segment, each row's terms
        looked up among the wanted ones."""
        if not groups:
            return []
        wanted = list(among)
        tids = list(map(self._index._terms.get, wanted, repeat(-1)))
        known = sorted(set(tids).difference((-1,)))
        if not known:
            return [set() for _group in groups]
        row_ids = np.concatenate(groups) if len(groups) > 1 else groups[0]
        positions = self._mapped(row_ids, live_only=False)
        offsets = np.fromiter(accumulate(map(len, groups), initial=0), dtype=np.int64,
                              count=len(groups) + 1)
        target = np.asarray(known, dtype=np.int64)
        out = np.zeros((len(groups), len(known)), dtype=np.bool_)
        for segment in self._snap.segments:
            held_by_groups(segment.first, segment.row_ptr, segment.row_terms, positions,
                           offsets, target, out)
        found: list[set[str]] = []
        for flags in out.tolist():
            held = set(compress(known, flags))
            found.append(set(compress(wanted, map(held.__contains__, tids))))
        return found

    def _held_term_ids(self, row_ids: Iterable[int]) -> set[int]:
        """The ids of the distinct terms ``row_ids`` hold together (rows outside the view's
        snapshot hold none)."""
        known = self._index._positions
        size = self._snap.size
        held: set[int] = set()
        for row_id in row_ids:
            position = known.get(row_id)
            if position is None or position >= size:
                continue
            segment = self._snap.segments[bisect.bisect_right(self._firsts, position) - 1]
            held.update(segment.terms_of(position)[0].tolist())
        return held
