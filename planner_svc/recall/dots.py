"""Order-fixed inner products of stored float32 vectors with a query, compiled.

A plan scores several hundred to a few thousand passages against the question (and against
each hop's residual probe) by cosine similarity. The similarity must be the same bits on every
machine (docs/architecture.md, "Reproducible weights"), so each inner product adds its
``dim`` products in index order, one correctly rounded float64 addition at a time: a BLAS or
SIMD dot product may reassociate the sum. In numpy that order costs a ``(dim, rows)`` float64
product matrix and ``dim`` vector additions (about 0.5 ms for 700 passages of 256 dimensions,
5.7 ms for 3,000); :func:`ordered_dots` is the same arithmetic as one compiled loop per row
(67 us and 361 us). numba is imported, and the loop compiled or loaded from its cache, on first
use, by :func:`compile_kernel`, or with every kernel by :func:`~planner_svc.jit.compile_all`
(a server calls it before it serves). :func:`gathered_dots` is the same loop over the rows of a
plan's passage table, each row's vector found through the table's columns (its gathers and
selection in the compiled call too).

Why the bits are those of :func:`~planner_svc.embed.base.ordered_sum` of the products:
- the product of two float32 values is exact in float64 (24 + 24 significand bits fit in 53),
  so computing it, or fusing it into the addition (FMA), gives the same value;
- numba compiles without fast-math, so LLVM neither reorders nor reassociates the additions;
  rows are independent, and interleaving four of them changes no row's order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["compile_kernel", "gathered_dots", "ordered_dots", "ordered_dots_many"]

_Kernel = Callable[[npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.float64],
                    npt.NDArray[np.int64], npt.NDArray[np.float64]], None]


def _signatures(types: Any) -> list[Any]:
    # the vectors writable, or read-only (an index segment mapped from its file)
    return [types.void(types.Array(types.float32, 2, "C", readonly=readonly),
                       types.int64[::1], types.Array(types.float64, 2, "C", readonly=True),
                       types.int64[::1], types.float64[::1])
            for readonly in (False, True)]


def compile_kernel() -> _Kernel:
    """The compiled kernel, compiled now if it was not yet (or loaded from numba's cache beside
    this module: about 0.3 s, 0.5 s when compiled afresh): a server does it before it serves,
    not in its first plan. numba is imported here, not with this module, so client commands
    that never score a passage do not load it. Where numba finds no writable cache directory
    (beside the module, ``NUMBA_CACHE_DIR`` or the user's cache), it compiles in memory and
    logs ``similarity_kernel_uncached`` (:class:`~planner_svc.jit.Kernel`)."""
    return _KERNEL.compiled()


def _dots(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
          which: npt.NDArray[np.int64], count: int, queries: npt.NDArray[np.float64],
          out: npt.NDArray[np.float64]) -> None:
    """``out[k]``: the inner product of ``vectors[rows[k]]`` with ``queries[which[k]]`` for
    ``k < count`` (indices checked by the caller), the products added in index order."""
    dim = queries.shape[1]
    k = 0
    while k + 4 <= count:  # four rows at once: their running sums overlap in the pipeline
        r0, r1, r2, r3 = rows[k], rows[k + 1], rows[k + 2], rows[k + 3]
        q0, q1, q2, q3 = which[k], which[k + 1], which[k + 2], which[k + 3]
        a0 = np.float64(vectors[r0, 0]) * queries[q0, 0]
        a1 = np.float64(vectors[r1, 0]) * queries[q1, 0]
        a2 = np.float64(vectors[r2, 0]) * queries[q2, 0]
        a3 = np.float64(vectors[r3, 0]) * queries[q3, 0]
        for j in range(1, dim):
            a0 += np.float64(vectors[r0, j]) * queries[q0, j]
            a1 += np.float64(vectors[r1, j]) * queries[q1, j]
            a2 += np.float64(vectors[r2, j]) * queries[q2, j]
            a3 += np.float64(vectors[r3, j]) * queries[q3, j]
        out[k], out[k + 1], out[k + 2], out[k + 3] = a0, a1, a2, a3
        k += 4
    while k < count:
        r, q = rows[k], which[k]
        a = np.float64(vectors[r, 0]) * queries[q, 0]
        for j in range(1, dim):
            a += np.float64(vectors[r, j]) * queries[q, j]
        out[k] = a
        k += 1


def _ordered_dots_into(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
                       queries: npt.NDArray[np.float64], which: npt.NDArray[np.int64],
                       out: npt.NDArray[np.float64]) -> None:
    n = rows.shape[0]
    for i in range(n):
        if rows[i] < 0 or rows[i] >= vectors.shape[0]:
            raise IndexError("row index out of range")
        if which[i] < 0 or which[i] >= queries.shape[0]:
            raise IndexError("query index out of range")
    _dots(vectors, rows, which, n, queries, out)


def ordered_dots(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
                 query: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Inner product of ``query`` ``(dim,)`` with each of ``vectors[rows]``, as float64
    ``(len(rows),)``: the products added in index order (the bits of
    :func:`~planner_svc.recall.semantic.exact_similarities` of ``vectors[rows]``).

    Args:
        vectors: float32 ``(n, dim)``, ``dim >= 1``, writable or read-only (copied once if
            not C-contiguous).
        rows: row indices into ``vectors``, each in ``[0, n)``.
        query: float32 ``(dim,)``.

    Raises:
        IndexError: a row outside ``[0, n)``.
        ValueError: ``query`` does not have ``dim`` values, or ``dim`` is 0.
    """
    if query.shape != (vectors.shape[1],):
        raise ValueError(f"query: expected shape ({vectors.shape[1]},), got {query.shape}")
    return ordered_dots_many(vectors, rows, query.reshape(1, -1),
                             np.zeros(rows.shape[0], dtype=np.int64))


def ordered_dots_many(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
                      queries: npt.NDArray[np.float32] | npt.NDArray[np.float64],
                      which: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """:func:`ordered_dots` of several queries in one call: row ``i``'s inner product with
    ``queries[which[i]]``, as float64 ``(len(rows),)``, each with the bits
    :func:`ordered_dots` gives it alone (a row's products are added in index order whatever
    the other rows' queries are).

    Args:
        vectors: float32 ``(n, dim)``, ``dim >= 1``, writable or read-only (copied once if
            not C-contiguous).
        rows: row indices into ``vectors``, each in ``[0, n)`` (any integer dtype, writable or
            read-only).
        queries: ``(m, dim)``, float32 (widened to float64 exactly) or float64.
        which: ``(len(rows),)`` integers, each row's query, each in ``[0, m)``.

    Raises:
        IndexError: a row outside ``[0, n)`` or a query index outside ``[0, m)``.
        ValueError: ``queries`` do not have ``dim`` columns, ``which`` is not one per row, or
            ``dim`` is 0.
    """
    if queries.ndim != 2 or queries.shape[1] != vectors.shape[1]:
        raise ValueError(f"queries: expected shape (m, {vectors.shape[1]}), got "
                         f"{queries.shape}")
    if which.shape != rows.shape:
        raise ValueError(f"which: expected shape {rows.shape}, got {which.shape}")
    if vectors.shape[1] == 0:
        raise ValueError("vectors: need at least one dimension")
    out = np.empty(rows.shape[0], dtype=np.float64)
    if rows.shape[0]:
        kernel = _KERNEL.compiled()
        kernel(np.ascontiguousarray(vectors, dtype=np.float32),
               np.require(rows, dtype=np.int64, requirements=("C", "W")),
               np.ascontiguousarray(queries, dtype=np.float64),
               np.require(which, dtype=np.int64, requirements=("C", "W")), out)
    return out


_KERNEL: Kernel[_Kernel] = Kernel(_ordered_dots_into, _signatures, name="similarity",
                                  calls=(_dots,))


def _gathered_signatures(types: Any) -> list[Any]:
    # the vectors writable, or read-only (an index segment mapped from its file)
    return [types.void(types.Array(types.float32, 2, "C", readonly=readonly),
                       types.int64[::1], types.int64[::1], types.int64[::1], types.int64[::1],
                       types.float64[:, ::1], types.int64, types.float64[::1])
            for readonly in (False, True)]


def _gathered_dots_into(vectors: npt.NDArray[np.float32], block: npt.NDArray[np.int64],
                        block_rows: npt.NDArray[np.int64], rows: npt.NDArray[np.int64],
                        offsets: npt.NDArray[np.int64], queries: npt.NDArray[np.float64],
                        number: int, out: npt.NDArray[np.float64]) -> None:
    n = rows.shape[0]
    dim = queries.shape[1]
    if offsets.shape[0] != queries.shape[0] + 1 or offsets[0] != 0 or offsets[-1] != n:
        raise ValueError("offsets do not cut the rows into one run per query")
    if dim < 1 or vectors.shape[1] != dim or out.shape[0] < n:
        raise ValueError("vectors and queries must share dim >= 1; out one value per row")
    for q in range(queries.shape[0]):  # all runs checked before any is read
        if offsets[q + 1] < offsets[q]:
            raise ValueError("offsets do not ascend")
    picked = np.empty(n, dtype=np.int64)  # the rows of the block, with their vector row
    slot = np.empty(n, dtype=np.int64)
    asked = np.empty(n, dtype=np.int64)
    count = 0
    for q in range(queries.shape[0]):
        for i in range(offsets[q], offsets[q + 1]):
            r = rows[i]
            if r < 0 or r >= block.shape[0] or r >= block_rows.shape[0]:
                raise IndexError("table row out of range")
            if block[r] == number:
                v = block_rows[r]
                if v < 0 or v >= vectors.shape[0]:
                    raise IndexError("vector row out of range")
                picked[count] = i
                slot[count] = v
                asked[count] = q
                count += 1
    sums = np.empty(count, dtype=np.float64)
    _dots(vectors, slot, asked, count, queries, sums)
    for k in range(count):
        out[picked[k]] = sums[k]


def gathered_dots(vectors: npt.NDArray[np.float32], block: npt.NDArray[np.int64],
                  block_rows: npt.NDArray[np.int64], rows: npt.NDArray[np.int64],
                  offsets: npt.NDArray[np.int64], queries: npt.NDArray[np.float64],
                  number: int, out: npt.NDArray[np.float64]) -> None:
    """:func:`ordered_dots_many` of the rows of one matrix among rows of a table, written in
    place: for each ``i`` with ``block[rows[i]] == number``, ``out[i]`` receives the inner
    product of ``vectors[block_rows[rows[i]]]`` with the query of ``i``'s run (the bits
    :func:`ordered_dots` gives it); every other ``out[i]`` is left as it is. One call does
    the gathers, the selection and the products.

    Args:
        vectors: float32 ``(n, dim)``, ``dim >= 1``, C-contiguous, writable or read-only.
        block: int64, C-contiguous: each table row's matrix number (-1: no vector).
        block_rows: int64, C-contiguous: each table row's row in its matrix.
        rows: int64, C-contiguous: table rows, one run per query.
        offsets: int64 ``(m + 1,)``, C-contiguous: query ``q``'s rows are
            ``rows[offsets[q]:offsets[q + 1]]`` (0 first, ascending, ``len(rows)`` last).
        queries: float64 ``(m, dim)``, C-contiguous.
        number: the matrix number of ``vectors``.
        out: float64 ``(len(rows),)``, C-contiguous.

    Raises:
        IndexError: a table row outside ``block`` or ``block_rows``, or a vector row of the
            matrix outside ``[0, n)``.
        ValueError: ``offsets`` do not cut ``rows`` into one run per query, ``vectors`` and
            ``queries`` differ in ``dim`` (or it is 0), or ``out`` is shorter than ``rows``.
    """
    _GATHERED.compiled()(vectors, block, block_rows, rows, offsets, queries, number, out)


_GATHERED: Kernel[Callable[..., None]] = Kernel(_gathered_dots_into, _gathered_signatures,
                                                name="gathered_similarity", calls=(_dots,))
