"""A semantic search's hits ranked by exact similarity, compiled.

The semantic leg re-scores the candidates the vector index chose with their exact, order-fixed
similarity (:func:`~planner_svc.recall.dots.ordered_dots`: each float32 product widened to
float64, the products added in index order) and ranks them by it, most similar first. In numpy
that is the dot products, a negation, a stable argsort, a gather and a test for equal
neighbours (a dozen calls on about a hundred values); :func:`ranked_dots` is the same
arithmetic and the same order in one compiled call (numba, no fast-math: no addition is
reordered, no product fused into an addition).

When two similarities are equal (or one is NaN) the kernel gives no order: the caller ranks
those hits its own way (by node id), from the similarities it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["RANKED_MAX", "ranked_dots"]

RANKED_MAX = 1024
"""Most rows :func:`ranked_dots` orders (an insertion sort, linear on the nearly ranked
candidates a search gives, quadratic at worst); more are only scored."""

_Ranked = Callable[[npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.float64],
                    npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.float64]],
                   bool]


def _signatures(types: Any) -> list[Any]:
    # the vectors and the rows writable, or read-only (an index segment mapped from its file)
    return [types.boolean(types.Array(types.float32, 2, "C", readonly=fixed),
                          types.Array(types.int64, 1, "C", readonly=read_only_rows),
                          types.float64[::1], types.float64[::1], types.int64[::1],
                          types.float64[::1])
            for fixed in (False, True) for read_only_rows in (False, True)]


def _ranked_into(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
                 query: npt.NDArray[np.float64], exact: npt.NDArray[np.float64],
                 order: npt.NDArray[np.int64], ranked: npt.NDArray[np.float64]) -> bool:
    n = rows.shape[0]
    dim = query.shape[0]
    for i in range(n):
        if rows[i] < 0 or rows[i] >= vectors.shape[0]:
            raise IndexError("row index out of range")
    distinct = True
    products = np.empty(dim, dtype=np.float64)
    for i in range(n):
        r = rows[i]
        # the products first (each exact in float64, so computed apart they are the same
        # values; this loop vectorizes), then their sum in index order
        for j in range(dim):
            products[j] = np.float64(vectors[r, j]) * query[j]
        a = products[0]
        for j in range(1, dim):
            a += products[j]
        exact[i] = a
        if a != a:  # NaN: no order given
            distinct = False
    if not distinct or n > order.shape[0]:
        return False
    # descending, by insertion (the candidates come nearly in this order already)
    for i in range(n):
        value = exact[i]
        at = i
        while at > 0 and ranked[at - 1] < value:
            ranked[at] = ranked[at - 1]
            order[at] = order[at - 1]
            at -= 1
        if at > 0 and ranked[at - 1] == value:  # the values moved past it are below it
            return False
        ranked[at] = value
        order[at] = i
    return True


_KERNEL: Kernel[_Ranked] = Kernel(_ranked_into, _signatures, name="ranked_dots")


def ranked_dots(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
                query: npt.NDArray[np.float32]
                ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64] | None,
                           npt.NDArray[np.float64] | None]:
    """The exact similarity of ``query`` with each of ``vectors[rows]`` and their ranking.

    Args:
        vectors: float32 ``(n, dim)``, ``dim >= 1``, C-contiguous, writable or read-only.
        rows: int64 row indices into ``vectors``, each in ``[0, n)``.
        query: float32 ``(dim,)``.

    Returns:
        ``(exact, order, ranked)``: ``exact`` float64 ``(len(rows),)``, the bits of
        :func:`~planner_svc.recall.dots.ordered_dots` of the same arguments; ``order`` int64,
        the positions by ``exact`` descending (``(-exact).argsort(kind="stable")``) and
        ``ranked`` float64, ``exact[order]``; both None when two values of ``exact`` are
        equal, one is NaN, or there are more than :data:`RANKED_MAX` rows.

    Raises:
        IndexError: a row outside ``[0, n)``.
        ValueError: ``query`` does not have ``dim`` values, ``dim`` is 0, or ``vectors`` is
            not a C-contiguous float32 matrix.
    """
    if query.shape != (vectors.shape[1],) or vectors.shape[1] == 0:
        raise ValueError(f"query: expected shape ({vectors.shape[1]},) with dim >= 1, got "
                         f"{query.shape}")
    if vectors.dtype != np.float32 or not vectors.flags.c_contiguous:
        raise ValueError("vectors: expected a C-contiguous float32 matrix")
    n = rows.shape[0]
    exact = np.empty(n, dtype=np.float64)
    if not n:
        return exact, None, None
    room = n if n <= RANKED_MAX else 0
    order = np.empty(room, dtype=np.int64)
    ranked = np.empty(room, dtype=np.float64)
    if rows.dtype != np.int64 or not rows.flags.c_contiguous:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
    if _KERNEL.compiled()(vectors, rows, query.astype(np.float64), exact, order, ranked):
        return exact, order, ranked
    return exact, None, None
