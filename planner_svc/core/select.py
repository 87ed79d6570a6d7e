"""Phase B: deterministic selection of a candidate pool under a token budget.

Source: memory-planner seed, "Phase B: dedup, then greedy packing by density" and "The hard
per-source cap and stranded budget"; README.md, "Selection rules".

1. Overlap dedup, within one source version (source_id, source_version_tx), visiting candidates
   by weight descending: a candidate whose overlap with an already kept span,
   ``intersection / min(len_a, len_b)``, is above ``dedup_overlap`` (or is 1.0, containment) is
   dropped; the heavier span stays because it was kept first.
2. Greedy packing of the survivors by density ``weight / max(1, tokens)`` descending. Each
   candidate ends in exactly one outcome and the scan always runs to the end of the pool:
   unpackable (tokens > B), budget full (tokens <= B < used + tokens), cap blocked (per-source
   spend + tokens > floor(max_frac_per_source * B)), or packed.
3. ``budget_stranded_by_cap`` is ``B - used`` if the cap ever refused a span that fit the
   remaining budget, else 0. The cap never relaxes.

Every ordering is total: ties break on (source_id, source_version_tx, start, end), then on the
remaining fields, so the result is invariant under any permutation of the pool.

The implementation computes exactly those outcomes with less work than the literal scans: the
pool is read once into lists of primitives; dedup looks only at spans that intersect another
span of their version (:func:`_dedup`); packing orders only the densest part of the pool, since
once the remaining budget is smaller than a span, that span is budget full wherever it comes in
the order (:func:`_pack`). A pool already in coordinate order with no two spans of one version
intersecting (the planner's, as a rule) is recognised in one pass (:func:`_apart`): it needs no
dedup and no sorting into canonical order.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import eq, ge, gt, le, lt
from typing import TypeVar

from planner_svc.core.config import check_ratio
from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import (
    CandidateFate,
    Explanation,
    PlannedSpan,
    PlanStats,
)

_T = TypeVar("_T")
_U64_MAX = 2**64 - 1
_FLOAT_ONLY = {float}
_TOP = 1024
"""Packing orders about this many of the densest candidates first (at least n / 32)."""
_SAMPLE_STEP = 8
"""The density threshold of that top part is read from every 8th candidate."""
_CROWDED = 16
"""Dedup by pairs while a source's spans meet at most this many others each, on average."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionResult:
    """Output of :func:`select`.

    Attributes:
        selected: packed spans in canonical coordinate order.
        used: tokens packed (<= budget).
        stats: the selection counters (pool_spans, selected_spans, deduped, the three skip
            outcomes, cap_tokens, budget_stranded_by_cap); recall counters are left at 0.
        explanations: one per pool candidate in canonical order when ``explain`` was set.
    """

    selected: tuple[PlannedSpan, ...]
    used: int
    stats: PlanStats
    explanations: tuple[Explanation, ...] = ()


def _desc(x: float) -> tuple[float, float]:
    """Descending sort key in the IEEE-754 total order for non-NaN doubles (+0.0 before -0.0).

    ``-x`` alone ties 0.0 with -0.0, whose bit patterns (and so plan hashes) differ.
    """
    return (-x, -math.copysign(1.0, x))


_FullKey = tuple[str, int, int, int, str, int, int, str, float, float]


def _full_key(c: PlannedSpan) -> _FullKey:
    """Coordinates first, then every other field (weight last, descending): a total order."""
    r = c.span
    w = c.weight
    return (r.source_id, r.source_version_tx, r.start, r.end, c.kind, int(c.span_class),
            c.tokens, c.text, -w, -math.copysign(1.0, w))  # fmt: skip


class _Keys:
    """Each candidate's :func:`_full_key` by pool index, computed on first use and kept; and
    the candidates asked for, each built once."""

    __slots__ = ("_built", "_candidate", "_keys")

    def __init__(self, candidate: Callable[[int], PlannedSpan]) -> None:
        self._candidate = candidate
        self._keys: dict[int, _FullKey] = {}
        self._built: dict[int, PlannedSpan] = {}

    def __call__(self, i: int) -> _FullKey:
        key = self._keys.get(i)
        if key is None:
            key = self._keys[i] = _full_key(self.candidate(i))
        return key

    def candidate(self, i: int) -> PlannedSpan:
        """Candidate ``i`` (built on first use)."""
        built = self._built.get(i)
        if built is None:
            built = self._built[i] = self._candidate(i)
        return built


@dataclass(slots=True, kw_only=True)
class PoolColumns:
    """A candidate pool as columns: index ``i`` of every column is candidate ``i`` (not to be
    changed; not frozen: one is built every plan, and a frozen dataclass sets each field
    through ``object.__setattr__``).

    What :func:`select_columns` reads of each candidate, without a
    :class:`~planner_svc.core.model.PlannedSpan` per candidate: selection builds the whole
    candidate (``candidate(i)``) only for the spans it returns and for ties its coordinates and
    weight do not break.

    Attributes:
        source_ids, txs, starts, ends: each candidate's span coordinates (source id, source
            version transaction time in microseconds, start and end in UTF-8 bytes).
        weights: each candidate's weight.
        tokens: each candidate's token count.
        candidate: the whole candidate ``i``, whose fields equal the columns' (pure: the same
            candidate every time it is asked).
    """

    source_ids: Sequence[str]
    txs: Sequence[int]
    starts: Sequence[int]
    ends: Sequence[int]
    weights: Sequence[float]
    tokens: Sequence[int]
    candidate: Callable[[int], PlannedSpan]

    @classmethod
    def of(cls, pool: Sequence[PlannedSpan]) -> PoolColumns:
        """The columns of a pool of candidates."""
        spans = [c.span for c in pool]
        return cls(
            source_ids=[r.source_id for r in spans],
            txs=[r.source_version_tx for r in spans],
            starts=[r.start for r in spans],
            ends=[r.end for r in spans],
            weights=[c.weight for c in pool],
            tokens=[c.tokens for c in pool],
            candidate=pool.__getitem__,
        )

    def __len__(self) -> int:
        return len(self.weights)


def density(candidate: PlannedSpan) -> float:
    """Packing density ``weight / max(1, tokens)``; the floor keeps zero-token spans finite."""
    return candidate.weight / max(1, candidate.tokens)


def validate_pool(pool: Sequence[PlannedSpan], *, field: str = "pool") -> None:
    """Reject candidates selection cannot order or pack.

    Raises:
        InvalidRequest: ``pool[i].weight`` not finite or negative, ``pool[i].span`` empty or
            with a negative offset, ``pool[i].tokens`` negative.
    """
    for i, c in enumerate(pool):
        w = c.weight
        if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w < 0:
            raise InvalidRequest(f"{field}[{i}].weight", f"must be finite and >= 0, got {w!r}")
        if c.span.start < 0:
            raise InvalidRequest(f"{field}[{i}].span.start", f"must be >= 0, got {c.span.start}")
        if c.span.end <= c.span.start:
            raise InvalidRequest(
                f"{field}[{i}].span.end",
                f"must be greater than start ({c.span.start}), got {c.span.end} (empty span)",
            )
        if c.tokens < 0:
            raise InvalidRequest(f"{field}[{i}].tokens", f"must be >= 0, got {c.tokens}")


def _validate_settings(budget: int, max_frac_per_source: float, dedup_overlap: float) -> None:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise InvalidRequest("budget", f"must be an integer >= 0, got {budget!r}")
    check_ratio("max_frac_per_source", max_frac_per_source)
    if max_frac_per_source == 0.0:
        raise InvalidRequest("max_frac_per_source", "must be in (0, 1], got 0.0")
    check_ratio("dedup_overlap", dedup_overlap)


def _sort_tie_runs(order: list[int], primary: Sequence[float], keys: _Keys) -> None:
    """Complete an order by ``primary`` descending: re-sort each run of equal ``primary``
    values by :func:`_full_key`, in place and stably. 0.0 and -0.0 are equal numbers but not
    equal keys: in their run +0.0 comes first (the IEEE-754 total order, descending)."""
    values = [primary[i] for i in order]
    ties = list(compress(range(1, len(values)), map(eq, values[1:], values)))
    k = 0
    while k < len(ties):
        lo = ties[k] - 1
        hi = ties[k] + 1
        k += 1
        while k < len(ties) and ties[k] == hi:
            hi += 1
            k += 1
        run = order[lo:hi]
        if values[lo] == 0:
            run.sort(key=lambda i: (-math.copysign(1.0, primary[i]), keys(i)))
        else:
            run.sort(key=keys)
        order[lo:hi] = run


@dataclass(slots=True)
class _Pairs:
    """Duplicate pairs as parallel lists (the lighter span, the heavier span, the lighter span's
    heaviness), and the groups too crowded to pair up (see :func:`_duplicate_pairs`)."""

    lighter: list[int]
    heavier: list[int]
    light_h: list[float]
    crowded: list[list[int]]


def _duplicate_pairs(
    groups: Iterable[list[int]],
    starts: list[int],
    ends: list[int],
    txs: list[int],
    heaviness: Sequence[float],
    threshold: float,
) -> _Pairs | None:
    """Every pair of spans of one version that duplicate each other.

    ``groups`` holds each source's candidates (two or more) in start order. A group whose spans
    meet more than ``_CROWDED`` times per span on average is set aside whole in ``crowded``
    (pairs grow with the square of a pile of mutually overlapping spans). None when the two
    spans of a pair are equally heavy, so the pair has no orientation.
    """
    out = _Pairs(lighter=[], heavier=[], light_h=[], crowded=[])
    lighter = out.lighter
    heavier = out.heavier
    light_h = out.light_h
    for group in groups:
        last = len(group) - 1
        mark = len(lighter)
        meetings = 0
        limit = _CROWDED * len(group)
        for a in range(last):
            i = group[a]
            end = ends[i]
            b = a + 1
            j = group[b]
            if starts[j] >= end:
                continue
            # Every later span of the source that starts before ``end`` intersects span i.
            length = end - starts[i]
            tx = txs[i]
            hi = heaviness[i]
            while True:
                if txs[j] == tx:
                    sj = starts[j]
                    ej = ends[j]
                    inter = (ej if ej < end else end) - sj
                    shorter = ej - sj
                    if length < shorter:
                        shorter = length
                    if inter == shorter or inter / shorter > threshold:
                        hj = heaviness[j]
                        if hi > hj:
                            lighter.append(j)
                            heavier.append(i)
                            light_h.append(hj)
                        elif hi < hj:
                            lighter.append(i)
                            heavier.append(j)
                            light_h.append(hi)
                        else:
                            return None
                b += 1
                if b > last:
                    break
                j = group[b]
                if starts[j] >= end:
                    break
            meetings += b - a
            if meetings > limit:
                del lighter[mark:], heavier[mark:], light_h[mark:]
                out.crowded.append(group)
                break
    return out


def _resolve(
    lighter: list[int], heavier: list[int], light_h: list[float], heaviness: Sequence[float]
) -> dict[int, int] | None:
    """Greedy dedup over duplicate pairs: ``{dropped span: the kept span that dropped it}``.

    A lighter span is dropped by its heaviest kept partner. A heavier span that is never the
    lighter one of a pair is kept, so those pairs are read in any order; the others are read
    by their lighter span, heaviest first, which settles each heavier span before it is read
    (its own pairs have a heavier lighter span). None when a span has two equally heavy kept
    partners.
    """
    dropped: dict[int, int] = {}
    lights = set(lighter)
    chained: list[int] = []
    for p, heavy in enumerate(heavier):
        if heavy in lights:
            chained.append(p)
            continue
        light = lighter[p]
        other = dropped.get(light)
        if other is None:
            dropped[light] = heavy
        elif heaviness[heavy] >= heaviness[other]:
            if heaviness[heavy] == heaviness[other]:
                return None
            dropped[light] = heavy
    chained.sort(key=light_h.__getitem__, reverse=True)
    for p in chained:
        heavy = heavier[p]
        if heavy in dropped:
            continue
        light = lighter[p]
        other = dropped.get(light)
        if other is None:
            dropped[light] = heavy
        elif heaviness[heavy] >= heaviness[other]:
            if heaviness[heavy] == heaviness[other]:
                return None
            dropped[light] = heavy
    return dropped


class _KeptIntervals:
    """Kept spans of one version, searchable for overlaps by start offset."""

    __slots__ = ("ends", "max_len", "ranks", "spans", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.ranks: list[int] = []
        self.spans: list[int] = []
        self.max_len = 0

    def heaviest_duplicate(self, start: int, end: int, threshold: float) -> int | None:
        """The heaviest kept span (pool index) that [start, end) duplicates, or None."""
        lo = bisect_left(self.starts, start - self.max_len + 1)
        hi = bisect_left(self.starts, end)
        length = end - start
        best_rank = -1
        best = None
        for k in range(lo, hi):
            kept_start = self.starts[k]
            kept_end = self.ends[k]
            inter = min(kept_end, end) - max(kept_start, start)
            if inter <= 0:
                continue
            shorter = min(kept_end - kept_start, length)
            if (inter / shorter > threshold or inter == shorter) and (
                best is None or self.ranks[k] < best_rank
            ):
                best_rank = self.ranks[k]
                best = self.spans[k]
        return best

    def add(self, start: int, end: int, rank: int, span: int) -> None:
        at = bisect_right(self.starts, start)
        self.starts.insert(at, start)
        self.ends.insert(at, end)
        self.ranks.insert(at, rank)
        self.spans.insert(at, span)
        self.max_len = max(self.max_len, end - start)


def _settle(
    groups: list[list[int]],
    starts: list[int],
    ends: list[int],
    txs: list[int],
    heaviness: Sequence[float],
    threshold: float,
) -> tuple[_Pairs, dict[int, int]] | None:
    """:func:`_duplicate_pairs` then :func:`_resolve`; None when ``heaviness`` ties."""
    pairs = _duplicate_pairs(groups, starts, ends, txs, heaviness, threshold)
    if pairs is None:
        return None
    dropped = _resolve(pairs.lighter, pairs.heavier, pairs.light_h, heaviness)
    return None if dropped is None else (pairs, dropped)


def _dedup_one_by_one(
    group: list[int],
    weights: list[float],
    keys: _Keys,
    starts: list[int],
    ends: list[int],
    txs: list[int],
    threshold: float,
    dropped: dict[int, int],
) -> None:
    """Dedup of one source by the rule as stated: heaviest first, each candidate against the
    kept spans of its version. Adds the group's dropped spans to ``dropped``."""
    order = sorted(group, key=lambda i: (_desc(weights[i]), keys(i)))
    kept: dict[int, _KeptIntervals] = {}
    for rank, i in enumerate(order):
        intervals = kept.get(txs[i])
        if intervals is None:
            intervals = kept[txs[i]] = _KeptIntervals()
        by = intervals.heaviest_duplicate(starts[i], ends[i], threshold)
        if by is None:
            intervals.add(starts[i], ends[i], rank, i)
        else:
            dropped[i] = by


def _apart(sids: list[str], txs: list[int], starts: list[int], ends: list[int]) -> bool:
    """True when the candidates are in coordinate order and no two spans of one version
    intersect (so dedup drops nothing), read in one pass over neighbours: each candidate's
    ``(source_id, tx, end)`` is at most the next one's ``(source_id, tx, start)``.

    That makes ``(source_id, tx, start)`` strictly increasing (every span is non-empty), so
    each version's spans are neighbours in start order, and none ends after the next one
    starts: no two intersect. Every coordinate is then there once, so pool order is the
    canonical order (:func:`_full_key`). False for any other pool, including some that dedup
    leaves whole (the caller then looks at every pair)."""
    tail = slice(1, None)
    return all(map(le, zip(sids, txs, ends, strict=True),
                   zip(sids[tail], txs[tail], starts[tail], strict=True)))


def _dedup(
    keys: _Keys,
    txs: list[int],
    weights: list[float],
    starts: list[int],
    ends: list[int],
    sids: list[str],
    threshold: float,
) -> dict[int, int]:
    """Overlap dedup (step 1 of the module docstring; seed "Phase B: dedup, then greedy packing
    by density"): ``{dropped span: the span that dropped it}``, by pool index.

    The same as visiting candidates heaviest first and keeping each unless it duplicates a kept
    span of its version, but built from the duplicate pairs, so that only spans that duplicate
    another reach the greedy step: a sweep over each source's spans in start order finds the
    intersecting pairs and :func:`_resolve` settles the duplicates. Heaviness is the weight
    while that decides every pair, else the rank in the weight order completed by every other
    field. A source whose spans pile up on each other is deduped one candidate at a time.
    (:func:`select_columns` does not call it for a pool :func:`_apart` holds for: nothing to
    drop.)
    """
    by_source: defaultdict[str, list[int]] = defaultdict(list)
    for i, sid in enumerate(sids):
        by_source[sid].append(i)
    groups = [g for g in by_source.values() if len(g) > 1]
    by_start = starts.__getitem__
    for g in groups:
        g.sort(key=by_start)

    settled = _settle(groups, starts, ends, txs, weights, threshold)
    if settled is None:
        n = len(weights)
        by_weight = sorted(range(n), key=weights.__getitem__, reverse=True)
        _sort_tie_runs(by_weight, weights, keys)
        ranks = [0.0] * n
        for rank, i in enumerate(by_weight):
            ranks[i] = float(n - rank)
        settled = _settle(groups, starts, ends, txs, ranks, threshold)
        assert settled is not None  # ranks are distinct: nothing ties
    pairs, dropped = settled
    for group in pairs.crowded:
        _dedup_one_by_one(group, weights, keys, starts, ends, txs, threshold, dropped)
    return dropped


@dataclass(slots=True)
class _Packing:
    """Outcome of :func:`_pack`: spans packed and cap blocked (pool indices), tokens used, and
    whether the cap refused a span that fit the remaining budget."""

    packed: list[int]
    capped: list[int]
    used: int = 0
    cap_refused_fitting: bool = False


def _pack(
    keys: _Keys,
    densities: list[float],
    tokens: list[int],
    sids: list[str],
    dropped: dict[int, int],
    budget: int,
    cap: int,
    min_tokens: int,
) -> _Packing:
    """Greedy packing by density (steps 2 and 3 of the module docstring; seed "Phase B: dedup,
    then greedy packing by density" and "The hard per-source cap and stranded budget").

    Candidates are scanned in order of density descending, completed by :func:`_full_key`, but
    only the densest part is ordered at a time: after scanning it, every other candidate larger
    than the remaining budget is budget full wherever it would come, and only the rest goes on
    to the next, larger part. Dropped and unpackable candidates are skipped; every candidate not
    packed or cap blocked, and neither dropped nor unpackable, is budget full. The scan stops
    as soon as the remaining budget is smaller than ``min_tokens`` (the pool's smallest token
    count): no candidate left can then be packed or cap blocked.
    """
    out = _Packing(packed=[], capped=[])
    spent: dict[str, int] = {}
    used = 0
    pending: list[int] | None = None  # None: every candidate
    pending_d = densities
    size = max(_TOP, len(densities) >> 5)
    # no two densities equal (0.0 and -0.0 are): no run of ties for the full keys to order
    distinct = len(set(densities)) == len(densities)
    while True:
        count = len(pending_d)
        threshold = None
        if count <= 2 * size:
            order = list(range(count)) if pending is None else pending
        else:
            sample = pending_d[::_SAMPLE_STEP]
            sample.sort(reverse=True)
            threshold = sample[size // _SAMPLE_STEP]
            above = map(ge, pending_d, repeat(threshold))
            order = list(compress(range(count) if pending is None else pending, above))
        order.sort(key=densities.__getitem__, reverse=True)
        if not distinct:
            _sort_tie_runs(order, densities, keys)
        for i in order:
            t = tokens[i]
            if used + t > budget or i in dropped:
                continue  # budget full, unpackable or dropped
            sid = sids[i]
            after = spent.get(sid, 0) + t
            if after > cap:
                # Reached only by a span that fits the remaining budget.
                out.capped.append(i)
                out.cap_refused_fitting = True
                continue
            used += t
            spent[sid] = after
            out.packed.append(i)
            if budget - used < min_tokens:
                break  # every candidate not scanned yet is budget full, dropped or unpackable
        room = budget - used
        if threshold is None or room < min_tokens:
            break
        indices = range(count) if pending is None else pending
        below = map(lt, pending_d, repeat(threshold))
        pending = [i for i in compress(indices, below) if tokens[i] <= room and i not in dropped]
        pending_d = [densities[i] for i in pending]
        size *= 4
    out.used = used
    return out


def _listed(column: Sequence[_T]) -> list[_T]:
    """``column`` as a list (itself when it is one)."""
    return column if isinstance(column, list) else list(column)


def select(
    pool: Sequence[PlannedSpan],
    budget: int,
    max_frac_per_source: float,
    dedup_overlap: float,
    *,
    explain: bool = False,
) -> SelectionResult:
    """Select spans from ``pool`` under ``budget`` tokens (pure, deterministic).

    Args:
        pool: candidates; exact-coordinate duplicates are allowed (the heavier one is kept).
        budget: effective budget B in tokens, >= 0.
        max_frac_per_source: per-source cap as a fraction of B, in (0, 1].
        dedup_overlap: overlap threshold in [0, 1].
        explain: also return every candidate's fate.
    Returns:
        A :class:`SelectionResult`; ``used <= budget`` and per-source spend <= the cap always.
    Raises:
        InvalidRequest: invalid settings or candidates (see :func:`validate_pool`).
    """
    return select_columns(PoolColumns.of(pool), budget, max_frac_per_source, dedup_overlap,
                          explain=explain)


def select_columns(
    pool: PoolColumns,
    budget: int,
    max_frac_per_source: float,
    dedup_overlap: float,
    *,
    explain: bool = False,
) -> SelectionResult:
    """:func:`select` over a pool given as columns: the same result, bit for bit, as
    :func:`select` of ``[pool.candidate(i) for i in range(len(pool))]``.

    Raises:
        InvalidRequest: invalid settings or candidates (see :func:`validate_pool`).
    """
    _validate_settings(budget, max_frac_per_source, dedup_overlap)
    n = len(pool)
    # The f64 product floored, saturating like a cast to u64: a budget near 2**64 rounds up to
    # 2.0**64 as a double, one past the largest u64.
    cap = min(math.floor(max_frac_per_source * budget), _U64_MAX)
    stats = PlanStats(pool_spans=n, cap_tokens=cap)
    if n == 0:
        return SelectionResult(selected=(), used=0, stats=stats)

    # Columns of primitives (read, never written).
    weights = _listed(pool.weights)
    tokens = _listed(pool.tokens)
    starts = _listed(pool.starts)
    ends = _listed(pool.ends)
    candidate = pool.candidate
    if not (
        set(map(type, weights)) == _FLOAT_ONLY
        and math.isfinite(sum(weights))
        and min(weights) >= 0.0
        and min(starts) >= 0
        and all(map(lt, starts, ends))
        and (min_tokens := min(tokens)) >= 0
    ):
        # raises for the first invalid candidate; passes int weights
        validate_pool([candidate(i) for i in range(n)])
        min_tokens = min(tokens)
    sids = _listed(pool.source_ids)

    # 1. Overlap dedup within a source version, heaviest first.
    keys = _Keys(candidate)
    txs = _listed(pool.txs)
    # A pool in coordinate order whose versions' spans are apart (the planner's usual pool):
    # nothing to drop, and pool order is the canonical order.
    apart = _apart(sids, txs, starts, ends)
    dropped = {} if apart else _dedup(keys, txs, weights, starts, ends, sids, dedup_overlap)

    # 2. Greedy packing by density: the outcomes of a scan to the end of the pool.
    densities = [w / (t if t > 1 else 1) for w, t in zip(weights, tokens, strict=True)]
    packing = _pack(keys, densities, tokens, sids, dropped, budget, cap, min_tokens)
    used = packing.used
    unpackable = 0
    if max(tokens) > budget:
        unpackable = sum(map(gt, tokens, repeat(budget)))
        unpackable -= sum([tokens[i] > budget for i in dropped])

    stats.deduped = len(dropped)
    stats.selected_spans = len(packing.packed)
    stats.skipped_unpackable = unpackable
    stats.cap_skipped = len(packing.capped)
    stats.skipped_budget_full = (
        n - stats.deduped - unpackable - stats.selected_spans - stats.cap_skipped
    )
    stats.budget_stranded_by_cap = budget - used if packing.cap_refused_fitting else 0
    # each candidate built once: through the keys' cache, which tie sorts may have filled
    packed = sorted(packing.packed) if apart else sorted(packing.packed, key=keys)
    selected = tuple([keys.candidate(i) for i in packed])

    explanations: tuple[Explanation, ...] = ()
    if explain:
        fates = [CandidateFate.BUDGET_FULL] * n
        for i, t in enumerate(tokens):
            if t > budget:
                fates[i] = CandidateFate.UNPACKABLE
        for i in dropped:
            fates[i] = CandidateFate.DEDUPED
        for i in packing.packed:
            fates[i] = CandidateFate.PACKED
        for i in packing.capped:
            fates[i] = CandidateFate.CAP_BLOCKED
        canonical = range(n) if apart else sorted(range(n), key=keys)
        explanations = tuple(
            Explanation(
                candidate=keys.candidate(i),
                fate=fates[i],
                density=densities[i],
                deduped_by=keys.candidate(dropped[i]).span if i in dropped else None,
            )
            for i in canonical
        )
    return SelectionResult(selected=selected, used=used, stats=stats, explanations=explanations)
