"""Order-fixed mean pooling of static token vectors, compiled.

A static embedding model (model2vec) embeds a text as the normalised sum of its tokens' rows.
The vectors enter the index and every plan's similarities, so each must be the same bits on
every machine (docs/architecture.md, "Reproducible weights"): each text's rows are widened to
float64 (times their token weight, when the model has weights) and added in token order, one
correctly rounded addition at a time; the norm is the square root of the squares added in
column order; each value is divided by it and rounded once to float32. In numpy that order
costs a running-sum matrix per text and per row of squares (about 45 us for a plan's five
texts); :func:`pool_tokens` is the same arithmetic as one compiled loop (numba, no fast-math:
no addition is reordered, and no product is fused into an addition).

The bits equal those of :func:`~planner_svc.embed.base.ordered_sum` over the token rows
followed by :func:`~planner_svc.embed.base.normalize_rows` (tests check it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["NO_WEIGHTS", "pool_offsets", "pool_tokens"]

_Table = npt.NDArray[Any]  # float32 or float64 (table_dtype)
_Pool = Callable[[_Table, npt.NDArray[np.int64], npt.NDArray[np.float64],
                  npt.NDArray[np.int64], npt.NDArray[np.float32]], None]


def _signatures(types: Any) -> list[Any]:
    # float32 tables (a half-precision or int8 model widens exactly), float64 ones as they are
    return [types.void(types.Array(dtype, 2, "C", readonly=readonly),
                       types.int64[::1], types.float64[::1], types.int64[::1],
                       types.float32[:, ::1])
            for dtype in (types.float32, types.float64) for readonly in (False, True)]


def table_dtype(dtype: npt.DTypeLike) -> type[np.float32] | type[np.float64]:
    """The dtype :func:`pool_tokens` reads a token table of ``dtype`` as: float32 when every
    value widens to it exactly (half precision, int8), else float64."""
    return np.float32 if np.can_cast(dtype, np.float32, casting="safe") else np.float64


def _pool_into(table: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
               weights: npt.NDArray[np.float64], offsets: npt.NDArray[np.int64],
               out: npt.NDArray[np.float32]) -> None:
    dim = table.shape[1]
    for i in range(rows.shape[0]):
        if rows[i] < 0 or rows[i] >= table.shape[0]:
            raise IndexError("token row out of range")
    weighted = weights.shape[0] > 0
    sums = np.empty(dim, dtype=np.float64)
    for t in range(offsets.shape[0] - 1):
        start, end = offsets[t], offsets[t + 1]
        if start == end:
            for j in range(dim):
                out[t, j] = 0.0
            continue
        r = rows[start]
        w = weights[start] if weighted else 1.0
        for j in range(dim):  # the first row as it is (a running sum starts from it)
            sums[j] = np.float64(table[r, j]) * w if weighted else np.float64(table[r, j])
        for i in range(start + 1, end):
            r = rows[i]
            if weighted:
                w = weights[i]
                for j in range(dim):
                    sums[j] += np.float64(table[r, j]) * w
            else:
                for j in range(dim):
                    sums[j] += np.float64(table[r, j])
        squares = sums[0] * sums[0]
        for j in range(1, dim):
            squares += sums[j] * sums[j]
        norm = np.sqrt(squares)
        if np.isfinite(norm) and norm > 0.0:
            for j in range(dim):
                out[t, j] = np.float32(sums[j] / norm)
        else:
            for j in range(dim):
                out[t, j] = 0.0


_KERNEL: Kernel[_Pool] = Kernel(_pool_into, _signatures, name="pooling")


def pool_tokens(table: _Table, rows: npt.NDArray[np.int64],
                weights: npt.NDArray[np.float64] | None,
                lengths: list[int]) -> npt.NDArray[np.float32]:
    """Unit vectors of texts from their tokens' rows of ``table``.

    Args:
        table: float32 or float64 ``(vocabulary, dim)``, ``dim >= 1`` (another dtype is
            converted: see :func:`table_dtype`).
        rows: every text's token rows, one text after the other (int64, each in
            ``[0, vocabulary)``).
        weights: each token's weight (float64, aligned with ``rows``), or None.
        lengths: tokens per text, each >= 0 (summing to ``len(rows)``).

    Returns:
        float32 ``(len(lengths), dim)``: each text's rows summed in token order in float64,
        divided by the sum's norm; a zero row for a text without tokens (or whose sum has
        norm 0 or is not finite).

    Raises:
        IndexError: a row outside the table.
        ValueError: ``lengths`` has a negative length or does not add up to ``len(rows)``,
            ``weights`` is not aligned with ``rows``, or ``table`` has no columns.
    """
    if any(length < 0 for length in lengths):
        raise ValueError("lengths: a text cannot have fewer than 0 tokens")
    if sum(lengths) != rows.shape[0]:
        raise ValueError(f"lengths add up to {sum(lengths)}, not to the {rows.shape[0]} rows")
    if weights is not None and weights.shape != rows.shape:
        raise ValueError(f"weights: expected shape {rows.shape}, got {weights.shape}")
    if table.shape[1] == 0:
        raise ValueError("table: need at least one column")
    if not lengths:
        return np.empty((0, table.shape[1]), dtype=np.float32)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pool_offsets(np.ascontiguousarray(table, dtype=table_dtype(table.dtype)),
                        np.ascontiguousarray(rows, dtype=np.int64),
                        (np.ascontiguousarray(weights, dtype=np.float64) if weights is not None
                         else NO_WEIGHTS),
                        offsets)


NO_WEIGHTS = np.zeros(0, dtype=np.float64)
"""The kernel's ``weights`` argument of a model without token weights (never written)."""


def pool_offsets(table: _Table, rows: npt.NDArray[np.int64], weights: npt.NDArray[np.float64],
                 offsets: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    """:func:`pool_tokens` of arguments in the kernel's form, unchecked but for the rows'
    range: the caller guarantees the rest.

    Args:
        table: C-contiguous ``(vocabulary, dim)``, ``dim >= 1``, of :func:`table_dtype`.
        rows: C-contiguous int64, every text's token rows one text after the other.
        weights: C-contiguous float64 aligned with ``rows``, or of length 0 (no weights).
        offsets: C-contiguous int64 ``(texts + 1,)``, ``texts >= 1``: text ``t``'s tokens are
            ``rows[offsets[t]:offsets[t + 1]]`` (0 first, ascending, ``len(rows)`` last).

    Returns:
        float32 ``(texts, dim)``, as :func:`pool_tokens`.

    Raises:
        IndexError: a row outside the table.
    """
    out = np.empty((offsets.shape[0] - 1, table.shape[1]), dtype=np.float32)
    _KERNEL.compiled()(table, rows, weights, offsets, out)
    return out
