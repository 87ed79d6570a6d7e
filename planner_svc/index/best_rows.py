"""A BM25 search's best rows as one compiled loop (:meth:`~planner_svc.index.lexical.
LexicalView.search`'s additions and order, value for value).

A search adds its terms' postings into one score per row and keeps the ``limit`` best (score
descending, ties by row id). In numpy that is a dozen calls over arrays as long as the
snapshot (a ``bincount``, a scan for the rows holding a term, a partition, a ``lexsort``);
:func:`best_rows` adds the same contributions in the same order (term by term, in term order,
each row's sum starting from 0.0, as ``bincount`` and the sparse merge both add them) and
keeps the same rows in the same order in one compiled pass. numba compiles without
fast-math, so the additions are the IEEE-754 additions numpy makes: the same bits.

It answers only for contributions that are finite and above 0.0 (BM25's always are: idf and
term frequency are positive), so a row holds a term exactly when its sum is above 0.0, as
both of numpy's paths assume; for any other value it returns None and the caller takes
numpy's path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["best_rows"]

Int64s = npt.NDArray[np.int64]
Float64s = npt.NDArray[np.float64]
_Kernel = Callable[[Int64s, Float64s, int, Int64s, int], tuple[bool, Int64s, Float64s]]


def _signatures(types: Any) -> list[Any]:
    rows = types.Array(types.int64, 1, "C", readonly=True)
    values = types.Array(types.float64, 1, "C", readonly=True)
    result = types.Tuple((types.boolean, types.int64[::1], types.float64[::1]))
    return [result(rows, values, types.int64, ids, types.int64)
            for ids in (types.Array(types.int64, 1, "C"),
                        types.Array(types.int64, 1, "C", readonly=True))]


def _best_rows_into(rows: Int64s, values: Float64s, size: int, row_ids: Int64s, limit: int
                    ) -> tuple[bool, Int64s, Float64s]:
    n = rows.shape[0]
    if values.shape[0] != n or row_ids.shape[0] < size:
        raise IndexError("values or row ids shorter than the postings")
    # each row's contributions in input order, from 0.0 (bincount's additions); a row is met
    # once its sum is above 0.0, which its first contribution makes it. The rows met are a
    # sparse set (Briggs and Torczon, "An efficient representation for sparse sets", 1993):
    # ``met[:count]`` lists them and ``slot[p]`` is row ``p``'s place in the list, so neither
    # array, nor ``dense`` (read only at rows met), needs clearing: row ``p`` is met exactly
    # when ``slot[p]`` is a place below ``count`` whose entry is ``p``, whatever the array
    # held before.
    dense = np.empty(size, dtype=np.float64)
    slot = np.empty(size, dtype=np.int64)
    met = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        p = rows[i]
        if p < 0 or p >= size:
            raise IndexError("posting outside the snapshot")
        value = values[i]
        if not (value > 0.0 and np.isfinite(value)):
            return False, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        at = slot[p]
        if 0 <= at < count and met[at] == p:
            dense[p] += value
        else:
            slot[p] = count
            met[count] = p
            count += 1
            dense[p] = 0.0 + value
    scores = np.empty(count, dtype=np.float64)
    for i in range(count):
        scores[i] = dense[met[i]]
    # the rows scoring at least the limit-th best score (all of them when no more): that
    # score is the smallest of the ``limit`` largest, kept in a min-heap while scanning (the
    # value numpy's partition finds)
    kept = count
    if count > limit:
        heap = np.empty(limit, dtype=np.float64)
        for i in range(limit):  # the first ``limit`` scores, heapified (sift up)
            x = scores[i]
            j = i
            while j > 0:
                parent = (j - 1) >> 1
                if heap[parent] <= x:
                    break
                heap[j] = heap[parent]
                j = parent
            heap[j] = x
        for i in range(limit, count):  # a larger score replaces the smallest (sift down)
            x = scores[i]
            if x <= heap[0]:
                continue
            j = 0
            while True:
                child = 2 * j + 1
                if child >= limit:
                    break
                if child + 1 < limit and heap[child + 1] < heap[child]:
                    child += 1
                if heap[child] >= x:
                    break
                heap[j] = heap[child]
                j = child
            heap[j] = x
        threshold = heap[0]
        kept = 0
        for i in range(count):
            if scores[i] >= threshold:
                met[kept] = met[i]
                scores[kept] = scores[i]
                kept += 1
    ids = np.empty(kept, dtype=np.int64)
    for i in range(kept):
        ids[i] = row_ids[met[i]]
    # score descending, ties by row id (lexsort's order: two stable sorts)
    by_id = np.argsort(ids[:kept], kind="mergesort")
    negated = np.empty(kept, dtype=np.float64)
    for i in range(kept):
        negated[i] = -scores[by_id[i]]
    by_score = np.argsort(negated, kind="mergesort")
    out = min(kept, limit)
    best_ids = np.empty(out, dtype=np.int64)
    best_scores = np.empty(out, dtype=np.float64)
    for i in range(out):
        k = by_id[by_score[i]]
        best_ids[i] = ids[k]
        best_scores[i] = scores[k]
    return True, best_ids, best_scores


_KERNEL: Kernel[_Kernel] = Kernel(_best_rows_into, _signatures, name="best_rows")


def best_rows(rows: Int64s, values: Float64s, size: int, row_ids: Int64s, limit: int
              ) -> tuple[Int64s, Float64s] | None:
    """The ``limit`` best rows of a search (``limit`` at least 1): every term's postings laid
    end to end in term order (``rows``, positions in ``[0, size)``, int64, read-only) with
    their contributions (``values``, float64, read-only), each position's contributions added
    in that order from 0.0. Returns the rows' ids (``row_ids[position]``) and scores, score
    descending, ties by id ascending: :meth:`~planner_svc.index.lexical.LexicalView.
    search`'s rows and bits. None when a contribution is not finite or not above 0.0.

    Raises:
        IndexError: a position outside ``[0, size)``, or ``row_ids`` shorter than ``size``.
    """
    found, ids, scores = _KERNEL.compiled()(_read_only(rows, np.int64),
                                            _read_only(values, np.float64), size,
                                            np.ascontiguousarray(row_ids, dtype=np.int64),
                                            limit)
    return (ids, scores) if found else None


def _read_only(array: npt.NDArray[Any], dtype: type[np.generic]) -> npt.NDArray[Any]:
    """``array`` itself when it is a read-only C-contiguous array of ``dtype`` (the kernel's
    signature), else such a copy."""
    flags = array.flags
    if not flags.writeable and flags.c_contiguous and array.dtype == dtype:
        return array
    copy = np.array(array, dtype=dtype)
    copy.setflags(write=False)
    return copy
