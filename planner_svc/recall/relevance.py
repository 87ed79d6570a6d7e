"""Relevance relative to a best, compiled: a hop's target values, runs' maxima, relative rows.

:meth:`~planner_svc.recall.engine._Recall.hops` scores every target of every step: a target's
lexical (cosine) relevance is its best node's BM25 (cosine) relative to its step's best
target, ``clamp((max(0, value) / best) ** sharpness)`` (0.0 where the best is not above 0.0;
the BM25 is not sharpened), its relevance the larger of the two (the cosine only counts for a
step with a probe vector), and its value ``step score x edge weight x hop decay x relevance``.
In numpy that is some thirty calls on arrays of a few dozen values;
:func:`hop_values` is the same operations per value as one compiled loop: the same maxima
(NaN propagated, as ``np.maximum`` does), the same division, clamps and chain of
multiplications for the power (:func:`~planner_svc.core.fusion.unit_power`'s, for an integral
exponent), the same products in the same order (numba without fast-math: nothing is
reordered or fused), so the bits are those of the numpy code (a test compares them).
:func:`segment_max` and :func:`relative_rows` are the two steps alone
(``engine._segment_max`` and ``engine._relative_rows``): a document's best similarity when the
legs are completed, and the numpy paths that passage ranking and hops take where their compiled
loops do not apply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["hop_values", "relative_rows", "segment_max"]

Float64s = npt.NDArray[np.float64]
Int64s = npt.NDArray[np.int64]


def _maximum(a: float, b: float) -> float:
    """``np.maximum(a, b)``: NaN when either is NaN (the sign of an equal zero never counts
    here: a maximum is only compared with 0.0, or clipped at 0.0 and added to +0.0)."""
    return a if a != a else b if b != b else a if a >= b else b


def _unit_power(base: float, exponent: int) -> float:
    """:func:`~planner_svc.core.fusion.unit_power`'s chain for an integral ``exponent >= 0``:
    right-to-left binary exponentiation, started from its first factor (``1.0 * x`` is
    ``x``); 1.0 for exponent 0. ``ranking._unit_power`` is the same chain: each module keeps
    its own, because numba's cache follows a kernel's own source file only."""
    n = exponent
    result = 1.0
    started = False
    square = base
    while n:
        if n & 1:
            if started:
                result = result * square
            else:
                result = square
                started = True
        n >>= 1
        if n:
            square = square * square
    return result


def _relative(value: float, best: float, exponent: int) -> float:
    """``value`` relative to ``best > 0.0``: ``min(1, max(0, min(1, (max(0, value) + 0.0) /
    best) ** n) + 0.0)``, the minima and maxima NaN-propagating (``np.minimum``,
    ``np.maximum``), the power :func:`_unit_power`'s chain (not raised for exponent 1)."""
    ratio = (value if value != value or value > 0.0 else 0.0) + 0.0
    ratio = ratio / best
    ratio = ratio if ratio != ratio or ratio < 1.0 else 1.0
    if exponent != 1:
        ratio = _unit_power(ratio, exponent)
    ratio = (ratio if ratio != ratio or ratio > 0.0 else 0.0) + 0.0
    return ratio if ratio != ratio or ratio < 1.0 else 1.0


def _signatures(types: Any) -> list[Any]:
    return [types.void(types.float64[::1], types.float64[::1], types.int64[::1],
                       types.int64[::1], types.boolean[::1], types.float64[::1],
                       types.float64[::1], types.float64, types.int64, types.float64[::1])]


def _values_into(lexical: Float64s, cosine: Float64s, targets: Int64s, per_step: Int64s,
                 probed: npt.NDArray[np.bool_], scores: Float64s, weights: Float64s,
                 decay: float, exponent: int, out: Float64s) -> None:
    count = targets.shape[0]
    total = 0
    for t in range(count):
        if targets[t] < 0:
            raise ValueError("a negative number of nodes")
        total += targets[t]
    if total != lexical.shape[0] or total != cosine.shape[0]:
        raise ValueError("the targets' nodes are not the nodes given")
    steps = per_step.shape[0]
    if probed.shape[0] != steps or scores.shape[0] != steps:
        raise ValueError("one probe flag and one score per step")
    total = 0
    for s in range(steps):
        if per_step[s] < 0:
            raise ValueError("a negative number of targets")
        total += per_step[s]
    if total != count or weights.shape[0] != count or out.shape[0] != count:
        raise ValueError("the steps' targets are not the targets given")
    best_lexical = np.empty(count, dtype=np.float64)
    best_cosine = np.empty(count, dtype=np.float64)
    node = 0
    for t in range(count):  # each target's best node (0.0 for a target without a node)
        a = 0.0
        c = 0.0
        if targets[t] > 0:
            a = lexical[node]
            c = cosine[node]
            for j in range(node + 1, node + targets[t]):
                a = _maximum(a, lexical[j])
                c = _maximum(c, cosine[j])
        best_lexical[t] = a
        best_cosine[t] = c
        node += targets[t]
    first = 0
    for s in range(steps):
        end = first + per_step[s]
        if end > first:
            top_lexical = best_lexical[first]  # the step's best target
            top_cosine = best_cosine[first]
            for t in range(first + 1, end):
                top_lexical = _maximum(top_lexical, best_lexical[t])
                top_cosine = _maximum(top_cosine, best_cosine[t])
            for t in range(first, end):
                # each relative to the step's best (0.0 unless that best is above 0.0), the
                # BM25 not raised
                lexical_relevance = 0.0
                if top_lexical > 0.0:
                    lexical_relevance = _relative(best_lexical[t], top_lexical, 1)
                cosine_relevance = 0.0
                if probed[s] and top_cosine > 0.0:
                    cosine_relevance = _relative(best_cosine[t], top_cosine, exponent)
                relevance = _maximum(lexical_relevance, cosine_relevance)
                out[t] = scores[s] * weights[t] * decay * relevance
        first = end


_KERNEL: Kernel[Callable[..., None]] = Kernel(_values_into, _signatures, name="hop_values",
                                              calls=(_maximum, _unit_power, _relative))


def hop_values(lexical: Float64s, cosine: Float64s, targets: Int64s, per_step: Int64s,
               probed: npt.NDArray[np.bool_], scores: Float64s, weights: Float64s,
               decay: float, exponent: int) -> Float64s:
    """Every target's hop value (see the module docstring), float64 ``(len(targets),)``.

    Args:
        lexical, cosine: float64, C-contiguous: the BM25 and the cosine of every node of
            every target, laid end to end (target ``t`` has ``targets[t]`` nodes).
        targets: int64, C-contiguous: nodes per target, targets laid end to end by step.
        per_step: int64, C-contiguous: targets per step.
        probed: bool, C-contiguous: whether each step has a probe vector (else its cosine
            relevance is 0.0).
        scores: float64, C-contiguous: each step's score.
        weights: float64, C-contiguous: each target's edge weight.
        decay: the hop decay.
        exponent: the cosine's sharpness, an integer in ``[0, 1024]``.

    Raises:
        ValueError: the counts do not match the arrays.
    """
    out = np.empty(targets.shape[0], dtype=np.float64)
    _KERNEL.compiled()(lexical, cosine, targets, per_step, probed, scores, weights, decay, exponent,
              out)
    return out


def _segment_signatures(types: Any) -> list[Any]:
    return [types.boolean(types.float64[:, ::1], types.int64[::1], types.float64[:, ::1])]


def _segment_max_into(values: Float64s, lengths: Int64s, out: Float64s) -> bool:
    total = 0
    for i in range(lengths.shape[0]):
        if lengths[i] < 0:
            return False
        total += lengths[i]
    if total != values.shape[1]:
        return False
    for row in range(values.shape[0]):
        start = 0
        for i in range(lengths.shape[0]):
            best = 0.0
            if lengths[i] > 0:
                best = values[row, start]
                for j in range(start + 1, start + lengths[i]):
                    best = _maximum(best, values[row, j])
            out[row, i] = best
            start += lengths[i]
    return True


_SEGMENT_MAX: Kernel[Callable[[Float64s, Int64s, Float64s], bool]] = Kernel(
    _segment_max_into, _segment_signatures, name="segment_max", calls=(_maximum,))


def segment_max(values: Float64s, lengths: Int64s, out: Float64s) -> bool:
    """The largest value of each consecutive run of each row of ``values`` into ``out`` (run
    ``i`` holds ``lengths[i]`` values; 0.0 for an empty run; NaN when a run holds a NaN, as
    ``np.maximum`` propagates it). False, and ``out`` untouched, when the lengths are not
    all non-negative or do not add up to the rows' length.

    Args:
        values: float64 ``(rows, n)``, C-contiguous.
        lengths: int64 ``(runs,)``, C-contiguous.
        out: float64 ``(rows, runs)``, C-contiguous.
    """
    done: bool = _SEGMENT_MAX.compiled()(values, lengths, out)
    return done


def _relative_signatures(types: Any) -> list[Any]:
    return [types.void(types.float64[:, ::1], types.float64[:, ::1], types.int64[::1],
                       types.float64[:, ::1])]


def _relative_into(values: Float64s, best: Float64s, exponents: Int64s, out: Float64s) -> None:
    for row in range(values.shape[0]):
        exponent = exponents[row]
        for i in range(values.shape[1]):
            b = best[row, i]
            out[row, i] = _relative(values[row, i], b, exponent) if b > 0.0 else 0.0


_RELATIVE: Kernel[Callable[[Float64s, Float64s, Int64s, Float64s], None]] = Kernel(
    _relative_into, _relative_signatures, name="relative_rows",
    calls=(_unit_power, _relative))


def relative_rows(values: Float64s, best: Float64s, exponents: Int64s, out: Float64s) -> None:
    """Each value relative to its best, row ``r`` raised to the integer ``exponents[r]`` (in
    ``[0, 1024]``; 1: not raised), into ``out``: 0.0 where the best is not above 0.0, else
    ``min(1, max(0, min(1, (max(0, value) + 0.0) / best) ** n) + 0.0)``, the power
    :func:`~planner_svc.core.fusion.unit_power`'s chain (the operations, per value, of
    ``engine._relative_rows`` in numpy).

    Args:
        values, best, out: float64 ``(rows, n)``, C-contiguous.
        exponents: int64 ``(rows,)``, C-contiguous.
    """
    _RELATIVE.compiled()(values, best, exponents, out)
