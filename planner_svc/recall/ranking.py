"""Passage ranking within documents as one compiled loop (:meth:`~planner_svc.recall.engine.
_Recall.rank`'s arithmetic, value for value).

A plan ranks the span groups of some sixty documents. In numpy that is some eighty calls on
arrays of a few hundred values (each document's best BM25 and cosine, every node relative to
them, each group's best node, the groups ordered within each document), several thousand
instructions each; :func:`rank_groups` makes the same operations on the same values in one
compiled pass. numba compiles without fast-math, so every division, multiplication and
comparison is the IEEE-754 operation numpy makes, and the results are the same bits:

- a node's relevance is the better of its BM25 and its cosine clipped at 0 (``-0.0`` as
  ``+0.0``), each divided by the document's best (0.0 where that best is not above 0.0),
  clamped to 1, the cosine's raised to the integral ``local_sharpness`` by the chain of
  multiplications of :func:`~planner_svc.core.fusion.unit_power`;
- a group's relevance is its best member's; a document's groups are ordered by relevance
  descending, then by their smallest version id (numpy's ``lexsort`` of the same keys).

The loop answers only for finite scores and an integral exponent in ``[0, 1024]``: for a NaN or
an infinity (whose propagation through ``maximum`` and ``lexsort`` it does not copy) it returns
``None`` and the caller takes numpy's path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["compile_ranking", "rank_groups"]

Int64s = npt.NDArray[np.int64]
Float64s = npt.NDArray[np.float64]
_Ranked = tuple[Int64s, Float64s, Int64s, Int64s, Int64s]
_Kernel = Callable[[Float64s, Float64s, Int64s, Int64s, Int64s, Int64s, Int64s, int],
                   tuple[int, Int64s, Float64s, Int64s, Int64s, Int64s]]

_SMALL = 16
"""A document with at most this many groups is ordered by insertion, a larger one by two
stable sorts (the same order: the keys' order, ties by group index)."""


def _signatures(types: Any) -> list[Any]:
    i8 = types.Array(types.int64, 1, "C")
    f8 = types.Array(types.float64, 1, "C")
    result = types.Tuple((types.int64, i8, f8, i8, i8, i8))
    return [result(f8, f8, i8, i8, i8, i8, i8, types.int64)]


def _rank_into(lexical: Float64s, cosine: Float64s, starts: Int64s, lengths: Int64s,
               tables: Int64s, spans: Int64s, ids: Int64s, exponent: int
               ) -> tuple[int, Int64s, Float64s, Int64s, Int64s, Int64s]:
    documents = lengths.shape[0]
    nodes = 0
    groups = 0
    for d in range(documents):
        n = lengths[d]
        g2 = spans[d] - n
        if n < 0 or g2 < 0 or g2 % 2 or starts[d] < 0 or starts[d] + n > lexical.shape[0]:
            raise IndexError("document outside the scores or its group table")
        nodes += n
        groups += g2 // 2
    if nodes > ids.shape[0] or nodes + 2 * groups > tables.shape[0] \
            or lexical.shape[0] != cosine.shape[0]:
        raise IndexError("ids or group tables shorter than the documents")
    owner = np.empty(groups, dtype=np.int64)
    relevance = np.empty(groups, dtype=np.float64)
    sizes = np.empty(groups, dtype=np.int64)
    firsts = np.empty(groups, dtype=np.int64)
    versions = np.empty(nodes, dtype=np.int64)
    # every score finite, or no answer (numpy's path propagates NaN its own way)
    for d in range(documents):
        s = starts[d]
        for j in range(lengths[d]):
            if not (np.isfinite(lexical[s + j]) and np.isfinite(cosine[s + j])):
                return -1, owner, relevance, sizes, firsts, versions
    node_rel = np.empty(0, dtype=np.float64)
    group_rel = np.empty(0, dtype=np.float64)
    order = np.empty(0, dtype=np.int64)
    offsets = np.empty(0, dtype=np.int64)
    t = 0  # this document's group table in ``tables``
    v = 0  # its first id in ``ids``
    out = 0  # its first group in the answer
    out_v = 0  # its first version in the answer
    for d in range(documents):
        n = lengths[d]
        g = (spans[d] - n) // 2
        s = starts[d]
        if node_rel.shape[0] < n:
            node_rel = np.empty(2 * n, dtype=np.float64)
        if group_rel.shape[0] < g:
            group_rel = np.empty(2 * g, dtype=np.float64)
            order = np.empty(2 * g, dtype=np.int64)
            offsets = np.empty(2 * g, dtype=np.int64)
        # the document's best BM25 and best clipped cosine (0.0 for no node)
        best_l = -np.inf
        best_c = -np.inf
        for j in range(n):
            x = lexical[s + j]
            if x > best_l:
                best_l = x
            c = cosine[s + j]
            c = c if c > 0.0 else 0.0
            if c > best_c:
                best_c = c
        if n == 0:
            best_l = 0.0
            best_c = 0.0
        for j in range(n):
            rel_l = 0.0
            if best_l > 0.0:
                x = lexical[s + j]
                r = (x if x > 0.0 else 0.0) / best_l
                rel_l = r if r < 1.0 else 1.0
            rel_c = 0.0
            if best_c > 0.0:
                c = cosine[s + j]
                r = (c if c > 0.0 else 0.0) / best_c
                r = r if r < 1.0 else 1.0
                if exponent != 1:
                    # unit_power's chain: right-to-left binary exponentiation, started from
                    # its first factor (1.0 * x is x); exponent 0 gives 1.0
                    power = 1.0
                    square = r
                    first = True
                    e = exponent
                    while e:
                        if e & 1:
                            if first:
                                power = square
                                first = False
                            else:
                                power = power * square
                        e >>= 1
                        if e:
                            square = square * square
                    r = power
                r = r if r > 0.0 else 0.0
                rel_c = r if r < 1.0 else 1.0
            node_rel[j] = rel_l if rel_l >= rel_c else rel_c
        # groups: members (local indices), then sizes, then firsts
        members_at = t
        sizes_at = t + n
        firsts_at = t + n + g
        m = 0
        for k in range(g):
            size = tables[sizes_at + k]
            if size < 0 or m + size > n:
                raise IndexError("group sizes exceed the document's nodes")
            offsets[k] = m
            best = -np.inf
            for i in range(m, m + size):
                member = tables[members_at + i]
                if member < 0 or member >= n:
                    raise IndexError("group member outside the document")
                if node_rel[member] > best:
                    best = node_rel[member]
            group_rel[k] = best if size else 0.0
            m += size
        # relevance descending, then smallest version id, then group index
        if g <= _SMALL:
            for k in range(g):
                key_rel = group_rel[k]
                key_first = tables[firsts_at + k]
                i = k
                while i > 0:
                    prev = order[i - 1]
                    if group_rel[prev] > key_rel or (group_rel[prev] == key_rel
                                                     and tables[firsts_at + prev] <= key_first):
                        break
                    order[i] = prev
                    i -= 1
                order[i] = k
        else:
            by_first = np.argsort(tables[firsts_at:firsts_at + g], kind="mergesort")
            negated = np.empty(g, dtype=np.float64)
            for i in range(g):
                negated[i] = -group_rel[by_first[i]]
            by_rel = np.argsort(negated, kind="mergesort")
            for i in range(g):
                order[i] = by_first[by_rel[i]]
        for i in range(g):
            k = order[i]
            size = tables[sizes_at + k]
            owner[out + i] = d
            relevance[out + i] = group_rel[k]
            sizes[out + i] = size
            firsts[out + i] = tables[firsts_at + k]
            for j in range(offsets[k], offsets[k] + size):
                versions[out_v] = ids[v + tables[members_at + j]]
                out_v += 1
        t += n + 2 * g
        v += n
        out += g
    return groups, owner, relevance, sizes, firsts, versions


_KERNEL: Kernel[_Kernel] = Kernel(_rank_into, _signatures, name="ranking")


def compile_ranking() -> _Kernel:
    """The compiled ranking loop, compiled now if it was not yet (or loaded from numba's cache
    beside this module), so that a server's first plan does not pay for it."""
    return _KERNEL.compiled()


def rank_groups(lexical: Float64s, cosine: Float64s, starts: Int64s, lengths: Int64s,
                tables: Int64s, spans: Int64s, ids: Int64s, local_sharpness: float
                ) -> _Ranked | None:
    """Rank the span groups of documents laid end to end, as :meth:`~planner_svc.recall.
    engine._Recall.rank` does (see the module docstring).

    Args:
        lexical, cosine: float64 node scores; document ``d``'s ``lengths[d]`` nodes sit at
            ``starts[d]`` onwards (BM25; raw cosine, clipped here).
        starts, lengths: int64, one per document.
        tables: the documents' :attr:`~planner_svc.index.catalog.SourceEntry.group_table`
            laid end to end (int64), ``spans[d]`` values for document ``d``.
        spans: int64, each table's length.
        ids: the documents' version ids laid end to end (int64, ``lengths[d]`` each).
        local_sharpness: the cosine's exponent.

    Returns:
        ``(owner, relevance, sizes, firsts, versions)`` as :class:`~planner_svc.recall.engine.
        _Ranked` holds them, or None when a score is not finite or the exponent is not an
        integer in ``[0, 1024]`` (numpy's path answers then).

    Raises:
        IndexError: the tables, ids or starts do not fit the lengths.
    """
    exponent = float(local_sharpness)
    if not (exponent.is_integer() and 0.0 <= exponent <= 1024.0):
        return None
    count, owner, relevance, sizes, firsts, versions = _KERNEL.compiled()(
        _writable(lexical), _writable(cosine), starts, lengths, tables, spans, ids,
        int(exponent))
    if count < 0:
        return None
    return owner, relevance, sizes, firsts, versions


def _writable(values: Float64s) -> Float64s:
    """``values`` itself when it is a writable C-contiguous float64 array (the kernel's
    signature), else such a copy."""
    flags = values.flags
    if flags.writeable and flags.c_contiguous and values.dtype == np.float64:
        return values
    return np.array(values, dtype=np.float64)
