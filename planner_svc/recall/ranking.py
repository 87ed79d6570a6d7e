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
  descending, then by their smallest version id (numpy's ``lexsort`` of the same keys);
- a group's score is its document's score raised to the integral ``document_sharpness`` (the
  same chain), times ``floor + (1 - floor) x relevance``, times the passage decay of its rank
  (from the run of :func:`~planner_svc.recall.engine._decays`), in that order.

The loop answers only for finite scores, integral exponents in ``[0, 1024]`` and documents of
no more groups than the decay run holds: for a NaN or an infinity (whose propagation through
``maximum`` and ``lexsort`` it does not copy) and the rest it returns ``None`` and the caller
takes numpy's path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["best_share", "rank_groups", "relative_scores"]

Int64s = npt.NDArray[np.int64]
Float64s = npt.NDArray[np.float64]
_Ranked = tuple[Int64s, Float64s, Int64s, Int64s, Int64s, Int64s, Float64s, Int64s, Float64s,
                Int64s]
_Kernel = Callable[..., tuple[int, Int64s, Float64s, Int64s, Int64s, Int64s, Int64s, Float64s,
                             Int64s, Float64s, Int64s]]

_SMALL = 16
"""A document with at most this many groups is ordered by insertion, a larger one by two
stable sorts (the same order: the keys' order, ties by group index)."""


def _unit_power(base: float, exponent: int) -> float:
    """:func:`~planner_svc.core.fusion.unit_power`'s chain for an integral ``exponent >= 0``:
    right-to-left binary exponentiation, started from its first factor (``1.0 * x`` is
    ``x``); 1.0 for exponent 0. ``relevance._unit_power`` is the same chain: each module
    keeps its own, because numba's cache follows a kernel's own source file only."""
    power = 1.0
    square = base
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
    return power


def _relative(value: float, best: float, exponent: int) -> float:
    """A finite ``value`` relative to ``best > 0.0``: ``clamp((max(0, value) / best) **
    exponent)`` (``max(0, -0.0)`` as +0.0, the ratio clamped to 1 before the power), the
    power :func:`_unit_power`'s chain (not raised for exponent 1)."""
    r = (value if value > 0.0 else 0.0) / best
    r = r if r < 1.0 else 1.0
    if exponent != 1:
        r = _unit_power(r, exponent)
    r = r if r > 0.0 else 0.0
    return r if r < 1.0 else 1.0


def _signatures(types: Any) -> list[Any]:
    i8 = types.Array(types.int64, 1, "C")
    f8 = types.Array(types.float64, 1, "C")
    run = types.Array(types.float64, 1, "C", readonly=True)
    result = types.Tuple((types.int64, i8, f8, i8, i8, i8, i8, f8, i8, f8, i8))
    return [result(f8, f8, i8, i8, i8, i8, i8, types.int64, f8, types.int64, types.float64,
                   types.float64, run)]


def _rank_into(lexical: Float64s, cosine: Float64s, starts: Int64s, lengths: Int64s,
               tables: Int64s, spans: Int64s, ids: Int64s, exponent: int,
               scores: Float64s, sharpness: int, floor: float, rest: float, decays: Float64s
               ) -> tuple[int, Int64s, Float64s, Int64s, Int64s, Int64s, Int64s, Float64s,
                          Int64s, Float64s, Int64s]:
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
            or lexical.shape[0] != cosine.shape[0] or scores.shape[0] != documents:
        raise IndexError("ids, group tables or scores shorter than the documents")
    owner = np.empty(groups, dtype=np.int64)
    relevance = np.empty(groups, dtype=np.float64)
    sizes = np.empty(groups, dtype=np.int64)
    firsts = np.empty(groups, dtype=np.int64)
    versions = np.empty(nodes, dtype=np.int64)
    within = np.empty(groups, dtype=np.int64)
    values = np.empty(groups, dtype=np.float64)
    first_ids = np.empty(groups, dtype=np.int64)
    first_values = np.empty(groups, dtype=np.float64)
    first_sizes = np.empty(groups, dtype=np.int64)
    # every score finite and every document's groups within the decay run, or no answer
    # (numpy's path propagates NaN its own way, and computes longer runs)
    for d in range(documents):
        s = starts[d]
        if not np.isfinite(scores[d]) or (spans[d] - lengths[d]) // 2 > decays.shape[0]:
            return (-1, owner, relevance, sizes, firsts, versions, within, values, first_ids,
                    first_values, first_sizes)
        for j in range(lengths[d]):
            if not (np.isfinite(lexical[s + j]) and np.isfinite(cosine[s + j])):
                return (-1, owner, relevance, sizes, firsts, versions, within, values,
                        first_ids, first_values, first_sizes)
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
            rel_l = _relative(lexical[s + j], best_l, 1) if best_l > 0.0 else 0.0
            rel_c = _relative(cosine[s + j], best_c, exponent) if best_c > 0.0 else 0.0
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
        sharp = _unit_power(scores[d], sharpness)  # the document's score, sharpened
        for i in range(g):
            k = order[i]
            size = tables[sizes_at + k]
            within[out + i] = i
            values[out + i] = sharp * (floor + rest * group_rel[k]) * decays[i]
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
    # the groups by their first node (distinct ids: any sort gives one order)
    by_first = np.argsort(firsts, kind="mergesort")
    for i in range(groups):
        k = by_first[i]
        first_ids[i] = firsts[k]
        first_values[i] = values[k]
        first_sizes[i] = sizes[k]
    return (groups, owner, relevance, sizes, firsts, versions, within, values, first_ids,
            first_values, first_sizes)


_KERNEL: Kernel[_Kernel] = Kernel(_rank_into, _signatures, name="ranking",
                                  calls=(_unit_power, _relative))


def _relative_signatures(types: Any) -> list[Any]:
    f8 = types.Array(types.float64, 1, "C")
    return [types.Tuple((types.boolean, f8))(f8, types.float64, types.int64)]


def _relative_into(values: Float64s, best: float, exponent: int) -> tuple[bool, Float64s]:
    out = np.empty(values.shape[0], dtype=np.float64)
    for i in range(values.shape[0]):
        if not np.isfinite(values[i]):
            return False, out
    for i in range(values.shape[0]):
        out[i] = _relative(values[i], best, exponent)
    return True, out


_RELATIVE: Kernel[Callable[[Float64s, float, int], tuple[bool, Float64s]]] = Kernel(
    _relative_into, _relative_signatures, name="relative", calls=(_unit_power, _relative))


def relative_scores(values: Float64s, best: float, sharpness: float) -> Float64s | None:
    """``clamp((max(0, value) / best) ** sharpness)`` of each of ``values`` (float64, C order)
    against one ``best`` above 0.0, as :func:`~planner_svc.recall.engine._relative` computes
    it in numpy (``max(0, -0.0)`` as +0.0, the ratio clamped to 1, raised by
    :func:`~planner_svc.core.fusion.unit_power`'s chain, clamped to [0, 1]): float64, the
    same bits. None when a value is not finite or ``sharpness`` is not an integer in
    ``[0, 1024]`` (numpy's path answers then)."""
    exponent = float(sharpness)
    if not (exponent.is_integer() and 0.0 <= exponent <= 1024.0):
        return None
    finite, out = _RELATIVE.compiled()(values, float(best), int(exponent))
    return out if finite else None


def _share_signatures(types: Any) -> list[Any]:
    i8 = types.Array(types.int64, 1, "C")
    return [types.Tuple((types.int64, types.float64))(
        types.Array(types.boolean, 2, "C"), i8, i8, i8, types.Array(types.float64, 1, "C"),
        types.float64)]


def _best_share_into(held: npt.NDArray[np.bool_], first: Int64s, second: Int64s,
                     chosen: Int64s, weights: Float64s, total: float) -> tuple[int, float]:
    terms, columns = held.shape[0], held.shape[1]
    if weights.shape[0] != terms or first.shape[0] != second.shape[0]:
        raise IndexError("weights or measured pairs do not fit the terms")
    for c in range(first.shape[0]):
        if not (0 <= first[c] < columns and 0 <= second[c] < columns):
            raise IndexError("a measured column outside the documents")
    for c in range(chosen.shape[0]):
        if not 0 <= chosen[c] < columns:
            raise IndexError("a chosen column outside the documents")
    groups = first.shape[0] + (1 if chosen.shape[0] else 0)
    at = -1
    best = 0.0
    for g in range(groups):
        # the held terms' weights added from the first term (add.accumulate's order; a term
        # not held adds 0.0), divided by the total
        share = 0.0
        for t in range(terms):
            if g < first.shape[0]:
                holds = held[t, first[g]] or held[t, second[g]]
            else:
                holds = False
                for c in range(chosen.shape[0]):
                    holds = holds or held[t, chosen[c]]
            value = weights[t] if holds else 0.0
            share = value if t == 0 else share + value
        share = share / total
        if at < 0 or share > best:  # the first of the largest (argmax)
            at = g
            best = share
    return at, best


_SHARE: Kernel[Callable[..., tuple[int, float]]] = Kernel(
    _best_share_into, _share_signatures, name="best_share")


def best_share(held: npt.NDArray[np.bool_], first: list[int], second: list[int],
               chosen: list[int], weights: list[float], total: float) -> tuple[int, float] | None:
    """The first of the largest shares of the question's information among the measured
    groups, as :meth:`~planner_svc.recall.engine._Recall.evidence` reads them from
    :func:`~planner_svc.recall.engine._shares`: group ``g`` holds a term (row of ``held``,
    bool ``(terms, documents)``) when document column ``first[g]`` or ``second[g]`` does, and
    one more group (when ``chosen`` is not empty) when any of the ``chosen`` columns does; its
    share is its held terms' ``weights`` added in term order from the first, divided by
    ``total`` (the same additions and division: the same bits). Returns ``(group, share)``,
    or None when there is no group or a weight or ``total`` is not finite (numpy's path
    answers then).

    Raises:
        IndexError: a column outside ``held``, or not one weight per term.
    """
    values = np.asarray(weights, dtype=np.float64)
    if not (first or chosen) or not math.isfinite(total) or not np.isfinite(values).all():
        return None
    at, share = _SHARE.compiled()(
        np.ascontiguousarray(held, dtype=np.bool_), np.asarray(first, dtype=np.int64),
        np.asarray(second, dtype=np.int64), np.asarray(chosen, dtype=np.int64), values,
        float(total))
    return at, share



def rank_groups(lexical: Float64s, cosine: Float64s, starts: Int64s, lengths: Int64s,
                tables: Int64s, spans: Int64s, ids: Int64s, local_sharpness: float,
                scores: Float64s, document_sharpness: float, floor: float, decays: Float64s
                ) -> _Ranked | None:
    """Rank and score the span groups of documents laid end to end, as :meth:`~planner_svc.
    recall.engine._Recall.rank` does (see the module docstring).

    Args:
        lexical, cosine: float64 node scores; document ``d``'s ``lengths[d]`` nodes sit at
            ``starts[d]`` onwards (BM25; raw cosine, clipped here).
        starts, lengths: int64, one per document.
        tables: the documents' :attr:`~planner_svc.index.catalog.SourceEntry.group_table`
            laid end to end (int64), ``spans[d]`` values for document ``d``.
        spans: int64, each table's length.
        ids: the documents' version ids laid end to end (int64, ``lengths[d]`` each).
        local_sharpness: the cosine's exponent.
        scores: float64, each document's score; ``document_sharpness`` its exponent.
        floor: the passage floor; a group scores ``unit_power(score, document_sharpness) x
            (floor + (1 - floor) x relevance) x decays[rank]``, in that order.
        decays: float64, ``unit_power(passage_decay, r)`` for ``r`` from 0 (read-only or
            not).

    Returns:
        ``(owner, relevance, sizes, firsts, versions, rank, score, first_ids, first_scores,
        first_sizes)``: per group (documents in order, each one's groups most relevant
        first) its document's index, relevance, number of nodes, smallest version id, rank
        in the document and score; the groups' version ids laid end to end; the groups'
        smallest ids ascending with their scores and sizes. None when a score is not finite,
        an exponent is not an integer in ``[0, 1024]`` or a document has more groups than
        ``decays`` holds (numpy's path answers then).

    Raises:
        IndexError: the tables, ids, starts or scores do not fit the lengths.
    """
    exponent = float(local_sharpness)
    sharpness = float(document_sharpness)
    if not (exponent.is_integer() and 0.0 <= exponent <= 1024.0
            and sharpness.is_integer() and 0.0 <= sharpness <= 1024.0):
        return None
    floor = float(floor)
    found = _KERNEL.compiled()(
        _writable(lexical), _writable(cosine), starts, lengths, tables, spans, ids,
        int(exponent), scores, int(sharpness), floor, 1.0 - floor,
        decays if decays.flags.c_contiguous and not decays.flags.writeable
        else _read_only(decays))
    if found[0] < 0:
        return None
    return found[1:]


def _read_only(values: Float64s) -> Float64s:
    """A read-only C-contiguous float64 copy of ``values``."""
    copy = np.array(values, dtype=np.float64)
    copy.setflags(write=False)
    return copy


def _writable(values: Float64s) -> Float64s:
    """``values`` itself when it is a writable C-contiguous float64 array (the kernel's
    signature), else such a copy."""
    flags = values.flags
    if flags.writeable and flags.c_contiguous and values.dtype == np.float64:
        return values
    return np.array(values, dtype=np.float64)
