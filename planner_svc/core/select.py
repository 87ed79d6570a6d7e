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
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from planner_svc.core.config import check_ratio
from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import (
    CandidateFate,
    Explanation,
    PlannedSpan,
    PlanStats,
    SpanRef,
)

_U64_MAX = 2**64 - 1


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


def _full_key(
    c: PlannedSpan,
) -> tuple[str, int, int, int, str, int, int, str, float, float]:
    """Coordinates first, then every other field (weight last, descending): a total order."""
    r = c.span
    return (r.source_id, r.source_version_tx, r.start, r.end, c.kind, int(c.span_class),
            c.tokens, c.text, *_desc(c.weight))


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


class _VersionIntervals:
    """Kept spans of one source version, searchable for overlaps by start offset."""

    __slots__ = ("max_len", "ranks", "refs", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.refs: list[SpanRef] = []
        self.ranks: list[int] = []
        self.max_len = 0

    def find_duplicate(self, ref: SpanRef, threshold: float) -> SpanRef | None:
        """The heaviest kept span that ``ref`` duplicates, or None."""
        lo = bisect.bisect_left(self.starts, ref.start - self.max_len + 1)
        hi = bisect.bisect_left(self.starts, ref.end)
        best: tuple[int, SpanRef] | None = None
        for j in range(lo, hi):
            kept = self.refs[j]
            inter = min(kept.end, ref.end) - max(kept.start, ref.start)
            if inter <= 0:
                continue
            shorter = min(kept.length, ref.length)
            overlap = inter / shorter
            duplicate = overlap > threshold or inter == shorter
            if duplicate and (best is None or self.ranks[j] < best[0]):
                best = (self.ranks[j], kept)
        return None if best is None else best[1]

    def add(self, ref: SpanRef, rank: int) -> None:
        at = bisect.bisect_right(self.starts, ref.start)
        self.starts.insert(at, ref.start)
        self.refs.insert(at, ref)
        self.ranks.insert(at, rank)
        self.max_len = max(self.max_len, ref.length)


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
    _validate_settings(budget, max_frac_per_source, dedup_overlap)
    validate_pool(pool)
    stats = PlanStats(pool_spans=len(pool))
    fates: dict[int, tuple[CandidateFate, SpanRef | None]] = {}

    # Each candidate's total-order key, built once and shared by every sort below.
    keys = [_full_key(c) for c in pool]

    # 1. Overlap dedup within a source version, heaviest first.
    by_weight = sorted(range(len(pool)), key=lambda i: (_desc(pool[i].weight), keys[i]))
    kept_by_version: dict[tuple[str, int], _VersionIntervals] = {}
    survivors: list[int] = []
    for rank, i in enumerate(by_weight):
        ref = pool[i].span
        version = (ref.source_id, ref.source_version_tx)
        intervals = kept_by_version.get(version)
        if intervals is None:
            intervals = kept_by_version[version] = _VersionIntervals()
        dup_of = intervals.find_duplicate(ref, dedup_overlap)
        if dup_of is not None:
            stats.deduped += 1
            fates[i] = (CandidateFate.DEDUPED, dup_of)
            continue
        intervals.add(ref, rank)
        survivors.append(i)

    # 2. Greedy packing by density; the scan never stops early.
    survivors.sort(key=lambda i: (_desc(density(pool[i])), keys[i]))
    # The f64 product floored, saturating like a cast to u64: a budget near 2**64 rounds up to
    # 2.0**64 as a double, one past the largest u64.
    cap = min(math.floor(max_frac_per_source * budget), _U64_MAX)
    stats.cap_tokens = cap
    used = 0
    spent: dict[str, int] = {}
    cap_refused_fitting = False
    packed_count = 0
    for i in survivors:
        c = pool[i]
        if c.tokens > budget:
            stats.skipped_unpackable += 1
            fates[i] = (CandidateFate.UNPACKABLE, None)
        elif used + c.tokens > budget:
            stats.skipped_budget_full += 1
            fates[i] = (CandidateFate.BUDGET_FULL, None)
        elif spent.get(c.span.source_id, 0) + c.tokens > cap:
            # Reached only by a span that fits the remaining budget.
            stats.cap_skipped += 1
            cap_refused_fitting = True
            fates[i] = (CandidateFate.CAP_BLOCKED, None)
        else:
            used += c.tokens
            spent[c.span.source_id] = spent.get(c.span.source_id, 0) + c.tokens
            packed_count += 1
            fates[i] = (CandidateFate.PACKED, None)

    stats.selected_spans = packed_count
    stats.budget_stranded_by_cap = budget - used if cap_refused_fitting else 0
    packed_ids = [i for i in survivors if fates[i][0] is CandidateFate.PACKED]
    packed = [pool[i] for i in sorted(packed_ids, key=keys.__getitem__)]

    explanations: tuple[Explanation, ...] = ()
    if explain:
        order = sorted(range(len(pool)), key=keys.__getitem__)
        explanations = tuple(
            Explanation(
                candidate=pool[i],
                fate=fates[i][0],
                density=density(pool[i]),
                deduped_by=fates[i][1],
            )
            for i in order
        )
    return SelectionResult(
        selected=tuple(packed), used=used, stats=stats, explanations=explanations
    )
