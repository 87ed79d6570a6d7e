"""Order-fixed inner products of stored float32 vectors with a query, compiled.

A plan scores several hundred to a few thousand passages against the question (and against
each hop's residual probe) by cosine similarity. The similarity must be the same bits on every
machine (docs/architecture.md, "Reproducible weights"), so each inner product adds its
``dim`` products in index order, one correctly rounded float64 addition at a time: a BLAS or
SIMD dot product may reassociate the sum. In numpy that order costs a ``(dim, rows)`` float64
product matrix and ``dim`` vector additions (about 0.5 ms for 700 passages of 256 dimensions,
5.7 ms for 3,000); :func:`ordered_dots` is the same arithmetic as one compiled loop per row
(67 us and 361 us). numba is imported, and the loop compiled or loaded from its cache, on first
use or by :func:`compile_kernel` (a server calls it before it serves).

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

__all__ = ["compile_kernel", "ordered_dots", "ordered_dots_many"]

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


def _ordered_dots_into(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
                       queries: npt.NDArray[np.float64], which: npt.NDArray[np.int64],
                       out: npt.NDArray[np.float64]) -> None:
    n = rows.shape[0]
    dim = queries.shape[1]
    for i in range(n):
        if rows[i] < 0 or rows[i] >= vectors.shape[0]:
            raise IndexError("row index out of range")
        if which[i] < 0 or which[i] >= queries.shape[0]:
            raise IndexError("query index out of range")
    i = 0
    while i + 4 <= n:  # four rows at once: their running sums overlap in the pipeline
        r0, r1, r2, r3 = rows[i], rows[i + 1], rows[i + 2], rows[i + 3]
        q0, q1, q2, q3 = which[i], which[i + 1], which[i + 2], which[i + 3]
        a0 = np.float64(vectors[r0, 0]) * queries[q0, 0]
        a1 = np.float64(vectors[r1, 0]) * queries[q1, 0]
        a2 = np.float64(vectors[r2, 0]) * queries[q2, 0]
        a3 = np.float64(vectors[r3, 0]) * queries[q3, 0]
        for j in range(1, dim):
            a0 += np.float64(vectors[r0, j]) * queries[q0, j]
            a1 += np.float64(vectors[r1, j]) * queries[q1, j]
            a2 += np.float64(vectors[r2, j]) * queries[q2, j]
            a3 += np.float64(vectors[r3, j]) * queries[q3, j]
        out[i], out[i + 1], out[i + 2], out[i + 3] = a0, a1, a2, a3
        i += 4
    while i < n:
        r, q = rows[i], which[i]
        a = np.float64(vectors[r, 0]) * queries[q, 0]
        for j in range(1, dim):
            a += np.float64(vectors[r, j]) * queries[q, j]
        out[i] = a
        i += 1


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


_KERNEL: Kernel[_Kernel] = Kernel(_ordered_dots_into, _signatures, name="similarity")
