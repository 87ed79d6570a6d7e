"""The compiled read of the version map is numpy's take (clipped) and split of its entries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.index.packed_rows import ROW_BITS, unpacked_rows


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 60), n=st.integers(0, 80),
       read_only=st.booleans(), strided=st.booleans())
def test_matches_numpys_take_and_split(seed: int, m: int, n: int, read_only: bool,
                                       strided: bool) -> None:
    rng = np.random.default_rng(seed)
    segments = rng.integers(-1, 5, m)
    packed = (segments << ROW_BITS) + np.where(segments >= 0, rng.integers(0, 1 << 31, m), 0)
    packed = packed.astype(np.int64)
    wanted = rng.integers(-5, m + 5, 2 * n if strided else n).astype(np.int64)
    if strided:
        wanted = wanted[::2]
    if read_only:
        packed.setflags(write=False)
        wanted.setflags(write=False)
    held, segment, rows = unpacked_rows(packed, wanted)
    found = packed.take(wanted, mode="clip")
    assert np.array_equal(held, found >= 0)
    assert np.array_equal(segment, found >> ROW_BITS)
    assert np.array_equal(rows, found & ((1 << ROW_BITS) - 1))
    assert held.dtype == np.bool_ and segment.dtype == rows.dtype == np.int64


def test_an_empty_map_is_refused() -> None:
    with pytest.raises(IndexError):
        unpacked_rows(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
