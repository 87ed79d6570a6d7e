"""Compiled lookups in a lexical index's postings and position maps.

A plan asks the passage index, a few times each, where a few hundred positions sit in the
postings of ten or so terms (the terms' BM25 contributions there), which positions the row ids
of its documents have, and which of the question's terms the rows of a document hold. In numpy
each is a chain of ten or more calls on small arrays (a search of the postings laid end to end,
shifted apart, then a gather, a comparison and a selection); each function here is the same
lookup as one compiled loop. The lookups move and compare integers and copy float64 values:
no arithmetic on a score, so a result has the bits of the numpy chain it replaces.
:func:`postings_sums` also adds a row's contributions, in the terms' order, one correctly
rounded addition at a time (numba compiles without fast-math: no addition is reordered), the
additions a running numpy sum over the terms makes. Where the positions asked ascend (the
rows of sorted ids, a document's passages), :func:`postings_table` and
:func:`postings_sums_many` look each term up from its previous answer (a galloping search),
which reads a few postings instead of a binary search's dozen. Tests compare every function
with its numpy formulation.

numba is imported, and a loop compiled or loaded from its cache beside this module, on first
use (:class:`~planner_svc.jit.Kernel`).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["held_by_groups", "held_positions", "map_positions", "postings_sums",
           "postings_sums_many", "postings_table"]

Int64s = npt.NDArray[np.int64]
Float64s = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


def _search_left(keys: Int64s, first: int, end: int, key: int) -> int:
    """The first index of ``keys[first:end]`` (ascending) whose key is at or above ``key``
    (``end`` when none is): ``np.searchsorted(..., side="left")`` on the run."""
    lo, hi = first, end
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _search_onward(keys: Int64s, lo: int, end: int, key: int) -> int:
    """:func:`_search_left` of ``keys[..:end]`` for ``key``, given that the answer is at or
    after ``lo`` (the answer for a smaller key): steps of 1, 2, 4, ... from ``lo`` while the
    key stepped on is below ``key`` (galloping: a few steps when the keys asked are close),
    then a binary search within the last step."""
    hi = lo
    if lo < end and keys[lo] < key:
        step = 1
        while lo + step < end and keys[lo + step] < key:
            lo += step  # keys[lo] < key
            step <<= 1
        hi = lo + step if lo + step < end else end
        lo += 1
    return _search_left(keys, lo, hi, key)


def _check_runs(keys: Int64s, starts: Int64s, values: Float64s) -> None:
    """Refuse ``starts`` that do not cut ``keys`` (and the aligned ``values``) into runs:
    ``ValueError`` unless they ascend from 0 or more to at most ``len(keys)``."""
    if starts.shape[0] == 0 or starts[0] < 0 or starts[starts.shape[0] - 1] > keys.shape[0] \
            or values.shape[0] < keys.shape[0]:
        raise ValueError("starts do not cut keys and values into runs")
    for t in range(starts.shape[0] - 1):
        if starts[t] > starts[t + 1]:
            raise ValueError("starts do not ascend")


def _int64s(types: Any, readonly: bool) -> Any:
    return types.Array(types.int64, 1, "C", readonly=readonly)


def _table_signatures(types: Any) -> list[Any]:
    # the postings read-only (shared by plans) or writable (laid end to end by the caller);
    # the positions writable, or read-only
    return [types.void(_int64s(types, postings), types.int64[::1],
                       types.Array(types.float64, 1, "C", readonly=postings),
                       _int64s(types, positions), types.float64[:, ::1],
                       types.boolean[:, ::1])
            for postings, positions in ((False, False), (True, False), (True, True))]


def _table_into(keys: Int64s, starts: Int64s, values: Float64s, positions: Int64s,
                table: Float64s, hit: Bools) -> None:
    n = positions.shape[0]
    _check_runs(keys, starts, values)
    if table.shape[0] < starts.shape[0] - 1 or table.shape[1] < n or hit.shape[0] < table.shape[0] \
            or hit.shape[1] < n:
        raise ValueError("table and hit must be (terms, positions)")
    for t in range(starts.shape[0] - 1):
        first, end = starts[t], starts[t + 1]
        at = first  # the previous position's answer
        previous = -1  # the previous position (-1: none yet)
        for i in range(n):
            p = positions[i]
            at = (_search_onward(keys, at, end, p) if previous >= 0 and p >= previous
                  else _search_left(keys, first, end, p))
            previous = p
            if at < end and keys[at] == p:
                table[t, i] = values[at]
                hit[t, i] = True
            else:
                table[t, i] = 0.0
                hit[t, i] = False


_TABLE: Kernel[Callable[[Int64s, Int64s, Float64s, Int64s, Float64s, Bools], None]] = Kernel(
    _table_into, _table_signatures, name="postings_table",
    calls=(_check_runs, _search_onward, _search_left))


def postings_table(keys: Int64s, starts: Int64s, values: Float64s, positions: Int64s,
                   table: Float64s, hit: Bools) -> None:
    """Each term's value at each position, and whether its postings hold the position, into
    ``table`` and ``hit``. A position at or after the previous one is looked up from where
    the previous search ended (galloping: a few steps when the positions ascend and are
    close, the rows of sorted row ids say), any other by a binary search of the whole list.

    Args:
        keys: int64, C-contiguous: the terms' postings laid end to end, term ``t``'s at
            ``keys[starts[t]:starts[t + 1]]``, each term's ascending (distinct).
        starts: int64 ``(terms + 1,)``, C-contiguous: 0 first, ascending, ``len(keys)`` last.
        values: float64 aligned with ``keys``, C-contiguous.
        positions: int64 ``(n,)``, C-contiguous, in any order (-1 is held by no term).
        table: float64 ``(terms, n)``, C-contiguous: row ``t`` receives ``values[j]`` where
            ``keys[j]`` is position ``i`` in term ``t``'s postings, else +0.0.
        hit: bool ``(terms, n)``, C-contiguous: whether it is there.

    Raises:
        ValueError: ``starts`` do not ascend within ``keys`` and ``values``, or ``table`` or
            ``hit`` is smaller than ``(terms, n)``.
    """
    _TABLE.compiled()(keys, starts, values, positions, table, hit)


def _map_signatures(types: Any) -> list[Any]:
    # the ids writable or read-only (an entry's); the map and the mask as an index holds
    # them (writable), or read-only
    return [types.int64(_int64s(types, ids), _int64s(types, rest),
                        types.Array(types.boolean, 1, "C", readonly=rest), types.boolean,
                        types.int64[::1])
            for ids, rest in ((False, False), (True, False), (True, True))]


def _map_into(ids: Int64s, dense: Int64s, live_or_past: Bools, live_only: bool,
              out: Int64s) -> int:
    size = live_or_past.shape[0] - 1
    if size < 0 or out.shape[0] < ids.shape[0]:
        raise ValueError("live_or_past must end with False, out hold one position per id")
    unknown = 0
    for i in range(ids.shape[0]):
        row = ids[i]
        position = dense[row] if 0 <= row < dense.shape[0] else -1
        if position < 0:
            unknown += 1
            out[i] = -1
        elif position < size and (live_or_past[position] or not live_only):
            out[i] = position
        else:
            out[i] = -1
    return unknown


_MAP: Kernel[Callable[[Int64s, Int64s, Bools, bool, Int64s], int]] = Kernel(
    _map_into, _map_signatures, name="position_map")


def map_positions(ids: Int64s, dense: Int64s, live_or_past: Bools, live_only: bool,
                  out: Int64s) -> int:
    """Each row id's position in a snapshot (with ``live_only``, its live position), from a
    dense map, into ``out``; the number of ids the map does not hold (their ``out`` is -1:
    the caller looks them up elsewhere).

    Args:
        ids: int64 ``(n,)``, C-contiguous row ids (any value).
        dense: int64, C-contiguous, writable: row id -> position, -1 for an id not indexed
            (an id outside ``[0, len(dense))`` is not held).
        live_or_past: bool ``(size + 1,)``, C-contiguous: whether each position of the
            snapshot is live, then False.
        live_only: whether a position must be live (else any below ``size`` is kept).
        out: int64 ``(n,)``, C-contiguous: the position where it is below ``size`` (and
            live, with ``live_only``), else -1.

    Raises:
        ValueError: ``live_or_past`` is empty or ``out`` shorter than ``ids``.
    """
    found: int = _MAP.compiled()(ids, dense, live_or_past, live_only, out)
    return found


def _held_signatures(types: Any) -> list[Any]:
    # the segment's arrays as an index holds them (writable), or read-only
    return [types.void(types.int64, _int64s(types, readonly), _int64s(types, readonly),
                       _int64s(types, readonly), types.int64[::1], types.int64[::1],
                       types.boolean[:, ::1])
            for readonly in (False, True)]


def _held_into(first: int, row_ptr: Int64s, row_terms: Int64s, positions: Int64s,
               offsets: Int64s, wanted: Int64s, out: Bools) -> None:
    rows = row_ptr.shape[0] - 1
    count = wanted.shape[0]
    groups = offsets.shape[0] - 1
    if groups < 0 or offsets[0] < 0 or offsets[groups] > positions.shape[0] \
            or out.shape[0] < groups or out.shape[1] < count:
        raise ValueError("offsets do not cut positions into groups, or out is not "
                         "(groups, wanted)")
    for g in range(groups):  # every run checked before any is read
        if offsets[g] > offsets[g + 1]:
            raise ValueError("offsets do not ascend")
    for g in range(groups):
        for k in range(offsets[g], offsets[g + 1]):
            i = positions[k] - first
            if i < 0 or i >= rows:
                continue
            lo, hi = row_ptr[i], row_ptr[i + 1]
            if lo < 0 or hi > row_terms.shape[0]:
                raise ValueError("row_ptr does not cut row_terms into rows")
            for j in range(lo, hi):
                term = row_terms[j]
                at = _search_left(wanted, 0, count, term)
                if at < count and wanted[at] == term:
                    out[g, at] = True


_HELD: Kernel[Callable[[int, Int64s, Int64s, Int64s, Int64s, Int64s, Bools], None]] = Kernel(
    _held_into, _held_signatures, name="held_terms", calls=(_search_left,))


def held_by_groups(first: int, row_ptr: Int64s, row_terms: Int64s, positions: Int64s,
                   offsets: Int64s, wanted: Int64s, out: Bools) -> None:
    """Mark in ``out`` the wanted terms each group of positions holds in one segment.

    Args:
        first: the segment's first position; its rows are ``len(row_ptr) - 1``.
        row_ptr, row_terms: the segment's terms by row (CSR: position ``p``'s term ids are
            ``row_terms[row_ptr[p - first]:row_ptr[p - first + 1]]``).
        positions: int64, C-contiguous; a position outside the segment (-1 among them) is
            skipped.
        offsets: int64 ``(groups + 1,)``, C-contiguous: group ``g``'s positions are
            ``positions[offsets[g]:offsets[g + 1]]`` (0 first, ascending, ``len(positions)``
            last).
        wanted: int64, C-contiguous, ascending distinct term ids.
        out: bool ``(groups, len(wanted))``, C-contiguous: ``out[g, w]`` set True when a
            position of group ``g`` holds ``wanted[w]`` (never cleared: the segments of a
            snapshot accumulate).

    Raises:
        ValueError: ``offsets`` do not ascend within ``positions``, a row read reaches
            outside ``row_terms``, or ``out`` is smaller than ``(groups, len(wanted))``.
    """
    _HELD.compiled()(first, row_ptr, row_terms, positions, offsets, wanted, out)


def _sums_signatures(types: Any) -> list[Any]:
    # the postings read-only (one term's, shared by plans) or writable (laid end to end)
    return [types.void(_int64s(types, postings), types.int64[::1],
                       types.Array(types.float64, 1, "C", readonly=postings),
                       types.int64[::1], types.int64[::1], types.int64[::1], types.boolean,
                       types.float64[::1])
            for postings in (False, True)]


def _sums_into(keys: Int64s, starts: Int64s, values: Float64s, terms: Int64s,
               positions: Int64s, rows: Int64s, fresh: bool, out: Float64s) -> None:
    count = terms.shape[0]
    _check_runs(keys, starts, values)
    if out.shape[0] < rows.shape[0]:
        raise ValueError("out must hold one sum per row")
    for t in range(count):
        if terms[t] < 0 or terms[t] + 1 >= starts.shape[0]:
            raise IndexError("term out of range")
    for i in range(rows.shape[0]):
        r = rows[i]
        if r < 0 or r >= positions.shape[0]:
            raise IndexError("row out of range")
        p = positions[r]
        total = 0.0 if fresh else out[i]
        for k in range(count):
            end = starts[terms[k] + 1]
            at = _search_left(keys, starts[terms[k]], end, p)
            value = values[at] if at < end and keys[at] == p else 0.0
            if k == 0 and fresh:
                total = value  # the sum starts from the first term's value
            else:
                total += value
        out[i] = total


_SUMS: Kernel[Callable[[Int64s, Int64s, Float64s, Int64s, Int64s, Int64s, bool, Float64s],
                       None]] = Kernel(
    _sums_into, _sums_signatures, name="postings_sums",
    calls=(_check_runs, _search_left))


def postings_sums(keys: Int64s, starts: Int64s, values: Float64s, terms: Int64s,
                  positions: Int64s, rows: Int64s, fresh: bool, out: Float64s) -> None:
    """The terms' values at each row's position added in the terms' order, into ``out``:
    ``out[i] = v[0] + v[1] + ...`` (``fresh``: the sum starts from ``v[0]``) or ``out[i] +
    v[0] + v[1] + ...`` (not ``fresh``: the runs of terms of several calls add up in call
    order), one correctly rounded addition at a time, where ``v[k]`` is the value of term
    ``terms[k]`` at position ``positions[rows[i]]`` (+0.0 where its postings lack it). With no
    term, ``fresh`` leaves 0.0.

    Args:
        keys, starts, values: the terms' postings laid end to end, as :func:`postings_table`
            takes them.
        terms: int64, C-contiguous: indices into ``starts`` (its runs), in the order their
            values are added.
        positions: int64, C-contiguous: each table row's position (-1: held by no term).
        rows: int64, C-contiguous: rows of ``positions``.
        fresh: whether the sums start from the first term (else from ``out``).
        out: float64 ``(len(rows),)``, C-contiguous.

    Raises:
        IndexError: a term outside ``starts`` or a row outside ``positions``.
        ValueError: ``starts`` do not ascend within ``keys`` and ``values``, or ``out`` is
            shorter than ``rows``.
    """
    _SUMS.compiled()(keys, starts, values, terms, positions, rows, fresh, out)


def _many_signatures(types: Any) -> list[Any]:
    return [types.void(types.int64[::1], types.int64[::1], types.float64[::1],
                       types.int64[::1], types.int64[::1], types.int64[::1], types.int64[::1],
                       types.int64[::1], types.int64[::1], types.float64[::1])]


def _many_into(keys: Int64s, starts: Int64s, values: Float64s, terms: Int64s,
               term_offsets: Int64s, positions: Int64s, rows: Int64s, row_offsets: Int64s,
               hints: Int64s, out: Float64s) -> None:
    asks = term_offsets.shape[0] - 1
    if asks < 0 or row_offsets.shape[0] != asks + 1 or row_offsets[asks] > rows.shape[0]:
        raise ValueError("one run of rows per run of terms")
    _check_runs(keys, starts, values)
    if out.shape[0] < rows.shape[0] or term_offsets[asks] > terms.shape[0] \
            or hints.shape[0] < terms.shape[0]:
        raise ValueError("out must hold one sum per row, term_offsets end within terms")
    for a in range(asks):
        if term_offsets[a] > term_offsets[a + 1] or row_offsets[a] > row_offsets[a + 1] \
                or term_offsets[a] < 0 or row_offsets[a] < 0:
            raise ValueError("offsets do not ascend from 0")
    for t in range(terms.shape[0]):
        if terms[t] < 0 or terms[t] + 1 >= starts.shape[0]:
            raise IndexError("term out of range")
    for a in range(asks):
        t0, t1 = term_offsets[a], term_offsets[a + 1]
        previous = -1  # the position of the ask's previous row (-1: none yet)
        for i in range(row_offsets[a], row_offsets[a + 1]):
            r = rows[i]
            if r < 0 or r >= positions.shape[0]:
                raise IndexError("row out of range")
            p = positions[r]
            onward = previous >= 0 and p >= previous  # each term's last answer bounds this one
            previous = p
            total = 0.0
            for k in range(t0, t1):
                end = starts[terms[k] + 1]
                at = (_search_onward(keys, hints[k], end, p) if onward
                      else _search_left(keys, starts[terms[k]], end, p))
                hints[k] = at
                value = values[at] if at < end and keys[at] == p else 0.0
                if k == t0:
                    total = value  # the sum starts from the first term's value
                else:
                    total += value
            out[i] = total


_MANY: Kernel[Callable[..., None]] = Kernel(
    _many_into, _many_signatures, name="postings_sums_many",
    calls=(_check_runs, _search_onward, _search_left))


def postings_sums_many(keys: Int64s, starts: Int64s, values: Float64s, terms: Int64s,
                       term_offsets: Int64s, positions: Int64s, rows: Int64s,
                       row_offsets: Int64s, out: Float64s) -> None:
    """:func:`postings_sums` (``fresh``) of several asks in one call: ask ``a`` adds the
    terms ``terms[term_offsets[a]:term_offsets[a + 1]]`` at the rows
    ``rows[row_offsets[a]:row_offsets[a + 1]]``, into the same places of ``out`` (0.0 for
    an ask without a term); the bits :func:`postings_sums` gives each ask alone. A row at or
    after the ask's previous row's position looks each term up from where the previous row's
    search ended (galloping: a few steps when the rows ascend and are close, a document's
    passages in version id order say), any other row by a binary search of the whole list.

    Args:
        keys, starts, values: the terms' postings laid end to end (writable, C-contiguous).
        terms: int64, C-contiguous: indices into ``starts``, each ask's run in the order
            its values are added.
        term_offsets, row_offsets: int64 ``(asks + 1,)``, C-contiguous, ascending from 0.
        positions: int64, C-contiguous: each table row's position (-1: held by no term).
        rows: int64, C-contiguous: rows of ``positions``.
        out: float64 ``(len(rows),)``, C-contiguous.

    Raises:
        IndexError: a term outside ``starts`` or a row outside ``positions``.
        ValueError: the offsets do not describe the same number of asks or do not ascend,
            ``starts`` do not ascend within ``keys`` and ``values``, or ``out`` is shorter
            than ``rows``.
    """
    hints = np.empty(terms.shape[0], dtype=np.int64)  # each term's previous answer
    _MANY.compiled()(keys, starts, values, terms, term_offsets, positions, rows, row_offsets,
                     hints, out)


def _positions_held_signatures(types: Any) -> list[Any]:
    i8 = types.Array(types.int64, 1, "C")
    return [types.void(i8, i8, i8, i8, types.Array(types.boolean, 2, "C"))]


def _positions_held_into(laid: Int64s, bounds: Int64s, which: Int64s, positions: Int64s,
                         out: Bools) -> None:
    terms = which.shape[0]
    if bounds.shape[0] != terms + 1 or bounds[terms] > laid.shape[0] \
            or out.shape[1] != positions.shape[0]:
        raise IndexError("bounds, rows or answer do not fit the postings")
    for t in range(terms):
        row = which[t]
        first, end = bounds[t], bounds[t + 1]
        if row < 0 or row >= out.shape[0] or first < 0 or first > end:
            raise IndexError("a term's row or postings outside the answer")
        for j in range(positions.shape[0]):
            p = positions[j]
            at = _search_left(laid, first, end, p)
            out[row, j] = at < end and laid[at] == p


_POSITIONS_HELD: Kernel[Callable[[Int64s, Int64s, Int64s, Int64s, Bools], None]] = Kernel(
    _positions_held_into, _positions_held_signatures, name="held_positions",
    calls=(_search_left,))


def held_positions(postings: list[Int64s], which: list[int], positions: Int64s,
                   out: Bools) -> None:
    """Set ``out[which[i], j]`` to whether ``postings[i]`` (positions, ascending) holds
    ``positions[j]`` (-1 is held by none), by a binary search per position in one compiled
    pass (:meth:`~planner_svc.index.lexical.LexicalView.holds_many`, in place of numpy's
    joined ``searchsorted`` and its temporaries); the other rows of ``out`` (bool,
    ``(rows, len(positions))``, C order) are left as they are.

    Raises:
        IndexError: a row of ``which`` outside ``out``.
    """
    laid = np.concatenate(postings) if postings else np.zeros(0, dtype=np.int64)
    bounds = np.fromiter(accumulate(map(len, postings), initial=0), dtype=np.int64,
                         count=len(postings) + 1)
    _POSITIONS_HELD.compiled()(laid.astype(np.int64, copy=False), bounds,
                               np.asarray(which, dtype=np.int64),
                               np.ascontiguousarray(positions, dtype=np.int64), out)
