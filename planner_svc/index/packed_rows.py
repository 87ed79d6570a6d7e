"""Entries of an index state's version map read and split in one compiled pass.

An index state's version map (:class:`~planner_svc.index.vector_index.VersionRows`) holds one
int64 entry per version id, ``segment << 32 | row`` (a negative segment for a version without a
vector). A read of some versions' vectors takes their entries (ids outside the map clipped to
its first or last entry, as ``take(mode="clip")``) and splits each into whether it is held
(``entry >= 0``), its segment (``entry >> 32``) and its row (``entry & 0xFFFFFFFF``): in numpy
a take and three passes over the result; :func:`unpacked_rows` is the same integer operations
in one compiled call (numba).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.jit import Kernel

__all__ = ["ROW_BITS", "unpacked_rows"]

ROW_BITS = 32
"""Low bits of an entry that hold the row; the bits above hold the segment."""

_Int64s = npt.NDArray[np.int64]
_Unpack = Callable[[_Int64s, _Int64s, npt.NDArray[np.bool_], _Int64s, _Int64s], None]


def _signatures(types: Any) -> list[Any]:
    return [types.void(types.Array(types.int64, 1, "C", readonly=read_only_map),
                       types.Array(types.int64, 1, "C", readonly=read_only_ids),
                       types.boolean[::1], types.int64[::1], types.int64[::1])
            for read_only_map in (False, True) for read_only_ids in (False, True)]


def _unpack_into(packed: _Int64s, wanted: _Int64s, held: npt.NDArray[np.bool_],
                 segment: _Int64s, rows: _Int64s) -> None:
    n = wanted.shape[0]
    last = packed.shape[0] - 1
    if last < 0 or held.shape[0] < n or segment.shape[0] < n or rows.shape[0] < n:
        raise IndexError("an empty map, or outputs smaller than the ids")
    mask = (np.int64(1) << ROW_BITS) - 1
    for i in range(n):
        at = wanted[i]
        if at < 0:
            at = 0
        elif at > last:
            at = last
        entry = packed[at]
        held[i] = entry >= 0
        segment[i] = entry >> ROW_BITS
        rows[i] = entry & mask


_KERNEL: Kernel[_Unpack] = Kernel(_unpack_into, _signatures, name="packed_rows")


def unpacked_rows(packed: _Int64s, wanted: _Int64s
                  ) -> tuple[npt.NDArray[np.bool_], _Int64s, _Int64s]:
    """``(held, segment, rows)`` of the entries of ``packed`` at ``wanted``.

    Args:
        packed: int64 ``(m,)``, ``m >= 1``, C-contiguous: the version map.
        wanted: integer ``(n,)``: version ids (clipped into ``[0, m)``).

    Returns:
        With ``found = packed.take(wanted, mode="clip")``: bool ``found >= 0``, int64
        ``found >> 32`` and int64 ``found & 0xFFFFFFFF``, each ``(n,)``.

    Raises:
        IndexError: ``packed`` is empty.
    """
    if wanted.dtype != np.int64 or not wanted.flags.c_contiguous:
        wanted = np.ascontiguousarray(wanted, dtype=np.int64)
    n = wanted.shape[0]
    held = np.empty(n, dtype=np.bool_)
    segment = np.empty(n, dtype=np.int64)
    rows = np.empty(n, dtype=np.int64)
    _KERNEL.compiled()(packed, wanted, held, segment, rows)
    return held, segment, rows
