"""The compiled ordered inner products are the bits of a running float64 sum in index order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner_svc.embed.base import ordered_sum
from planner_svc.recall.dots import gathered_dots, ordered_dots, ordered_dots_many
from planner_svc.recall.semantic import exact_similarities


def running_sums(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
                 query: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """The reference: exact float64 products, added in index order by numpy."""
    products = vectors[rows].astype(np.float64) * query.astype(np.float64)
    return ordered_sum(products, axis=1)


def same_bits(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


@pytest.mark.parametrize("n_rows", [0, 1, 3, 4, 5, 8, 701])
@pytest.mark.parametrize("dim", [1, 2, 256])
def test_equal_to_the_running_sum_bit_for_bit(n_rows: int, dim: int) -> None:
    rng = np.random.default_rng(n_rows * 1000 + dim)
    vectors = rng.standard_normal((50, dim)).astype(np.float32)
    rows = rng.integers(0, 50, n_rows).astype(np.int64)
    query = rng.standard_normal(dim).astype(np.float32)
    assert same_bits(ordered_dots(vectors, rows, query), running_sums(vectors, rows, query))


@pytest.mark.parametrize("n_rows", [0, 1, 5, 9, 702])
def test_several_queries_give_each_row_the_bits_of_its_query_alone(n_rows: int) -> None:
    rng = np.random.default_rng(n_rows)
    vectors = rng.standard_normal((60, 256)).astype(np.float32)
    queries = rng.standard_normal((3, 256)).astype(np.float32)
    rows = rng.integers(0, 60, n_rows).astype(np.int64)
    which = rng.integers(0, 3, n_rows).astype(np.int64)
    got = ordered_dots_many(vectors, rows, queries, which)
    expected = np.zeros(n_rows, dtype=np.float64)
    for q in range(3):
        mine = which == q
        expected[mine] = running_sums(vectors, rows[mine], queries[q])
    assert same_bits(got, expected)


def test_read_only_rows_and_query_indexes_are_scored() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((10, 8)).astype(np.float32)
    queries = rng.standard_normal((2, 8))  # float64 queries are taken as they are
    rows, which = np.array([3, 1, 4, 1, 5]), np.array([0, 1, 1, 0, 1])
    rows.setflags(write=False)
    which.setflags(write=False)
    got = ordered_dots_many(vectors, rows, queries, which)
    expected = [ordered_sum(vectors[r].astype(np.float64) * queries[q], axis=0)
                for r, q in zip(rows.tolist(), which.tolist(), strict=True)]
    assert got.tolist() == [float(e) for e in expected]


def test_a_query_index_outside_the_queries_is_refused() -> None:
    vectors = np.ones((2, 4), dtype=np.float32)
    queries = np.ones((2, 4), dtype=np.float32)
    with pytest.raises(IndexError, match="query index"):
        ordered_dots_many(vectors, np.array([0, 1]), queries, np.array([0, 2]))
    with pytest.raises(ValueError, match="which"):
        ordered_dots_many(vectors, np.array([0, 1]), queries, np.array([0]))
    with pytest.raises(ValueError, match="queries"):
        ordered_dots_many(vectors, np.array([0]), np.ones((2, 3), dtype=np.float32),
                          np.array([0]))


def test_read_only_vectors_mapped_from_a_file_score_in_place(tmp_path: Path) -> None:
    """An index segment is a read-only memory map: scored as it is, the same bits."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((40, 256)).astype(np.float32)
    np.save(tmp_path / "segment.npy", vectors)
    mapped = np.load(tmp_path / "segment.npy", mmap_mode="r")
    assert not mapped.flags.writeable
    rows = rng.integers(0, 40, 9).astype(np.int64)
    query = rng.standard_normal(256).astype(np.float32)
    assert same_bits(ordered_dots(mapped, rows, query), running_sums(vectors, rows, query))


def test_the_order_of_additions_is_fixed() -> None:
    # 1 + 2**-53 + 2**-53: added left to right each tiny term is lost (ties to even); a
    # reassociating sum that added the tiny terms first would keep them
    vectors = np.array([[1.0, 2.0**-53 * 2**20, 2.0**-53 * 2**20]], dtype=np.float32)
    query = np.array([1.0, 2.0**-20, 2.0**-20], dtype=np.float32)
    [value] = ordered_dots(vectors, np.array([0]), query).tolist()
    assert value == 1.0
    assert (1.0 + 2.0**-53) + 2.0**-53 == 1.0 and 1.0 + (2.0**-53 + 2.0**-53) > 1.0


def test_a_first_product_of_minus_zero_keeps_its_sign() -> None:
    vectors = np.array([[-0.0], [0.0]], dtype=np.float32)
    query = np.array([1.0], dtype=np.float32)
    out = ordered_dots(vectors, np.array([0, 1]), query)
    assert np.signbit(out).tolist() == [True, False]


def test_rows_outside_the_matrix_are_refused() -> None:
    vectors = np.ones((3, 4), dtype=np.float32)
    query = np.ones(4, dtype=np.float32)
    for bad in (3, -1):
        with pytest.raises(IndexError):
            ordered_dots(vectors, np.array([0, bad]), query)


def test_a_query_of_another_dimension_is_refused() -> None:
    with pytest.raises(ValueError, match="expected shape"):
        ordered_dots(np.ones((3, 4), dtype=np.float32), np.array([0]),
                     np.ones(5, dtype=np.float32))


def test_exact_similarities_scores_every_row_in_order() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((9, 16)).astype(np.float32)
    query = rng.standard_normal(16).astype(np.float32)
    assert same_bits(exact_similarities(query, vectors),
                     running_sums(vectors, np.arange(9), query))
    assert exact_similarities(query, np.zeros((0, 16), dtype=np.float32)).shape == (0,)


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), dim=st.integers(1, 40), n=st.integers(1, 12))
def test_any_finite_vectors(data: st.DataObject, dim: int, n: int) -> None:
    vectors = data.draw(hnp.arrays(np.float32, (n, dim), elements=finite32))
    query = data.draw(hnp.arrays(np.float32, (dim,), elements=finite32))
    rows = data.draw(hnp.arrays(np.int64, st.integers(0, 10), elements=st.integers(0, n - 1)))
    with np.errstate(over="ignore", invalid="ignore"):
        expected = running_sums(vectors, rows, query)
    assert same_bits(ordered_dots(vectors, rows, query), expected)


def test_numba_loads_with_the_first_similarity_not_with_the_module() -> None:
    # `planner-svc plan` imports recall modules to build its help; numba must not load there
    code = ("import sys, planner_svc.recall.engine, planner_svc.cli, planner_svc.embed.pooling, "
            "planner_svc.embed.model2vec_backend; print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"
    warmed = subprocess.run(
        [sys.executable, "-c", "import sys; from planner_svc.recall.dots import compile_kernel; "
                               "compile_kernel(); print('numba' in sys.modules)"],
        capture_output=True, text=True, check=True, timeout=120)
    assert warmed.stdout.strip() == "True"


def test_without_a_writable_cache_the_kernel_compiles_in_memory() -> None:
    # a read-only install with no writable home: numba's cache locators all refuse
    code = (
        "import numpy as np, numba.core.caching as caching\n"
        "caching.CacheImpl._locator_classes = []\n"
        "from planner_svc.recall.dots import ordered_dots\n"
        "print(ordered_dots(np.eye(2, dtype=np.float32), np.array([1, 0]),"
        " np.array([3.0, 4.0], dtype=np.float32)).tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[4.0, 3.0]"
    assert "similarity_kernel_uncached" in out.stdout + out.stderr


def test_vectors_without_dimensions_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one dimension"):
        ordered_dots(np.ones((5, 0), dtype=np.float32), np.arange(5),
                     np.ones(0, dtype=np.float32))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), dim=st.integers(1, 20), n=st.integers(1, 8), table=st.integers(1, 12),
       runs=st.lists(st.integers(0, 9), min_size=1, max_size=4), read_only=st.booleans())
def test_gathered_dots_are_the_gather_then_ordered_dots_many(
        data: st.DataObject, dim: int, n: int, table: int, runs: list[int],
        read_only: bool) -> None:
    """gathered_dots against the numpy formulation it replaces: the table's rows with a vector
    in the matrix picked, their vector rows gathered, ordered_dots_many of them; the other
    values left as they were."""
    vectors = data.draw(hnp.arrays(np.float32, (n, dim), elements=finite32))
    vectors.setflags(write=not read_only)
    block = data.draw(hnp.arrays(np.int64, (table,), elements=st.integers(-1, 1)))
    block_rows = data.draw(hnp.arrays(np.int64, (table,), elements=st.integers(0, n - 1)))
    rows = data.draw(hnp.arrays(np.int64, (sum(runs),), elements=st.integers(0, table - 1)))
    queries = data.draw(hnp.arrays(np.float32, (len(runs), dim), elements=finite32))
    offsets = np.asarray([0, *np.cumsum(runs)], dtype=np.int64)
    which = np.arange(len(runs), dtype=np.int64).repeat(runs)
    out = np.full(rows.shape[0], 7.0)
    gathered_dots(vectors, block, block_rows, rows, offsets, queries.astype(np.float64), 1, out)
    expected = np.full(rows.shape[0], 7.0)
    mine = (block[rows] == 1).nonzero()[0]
    with np.errstate(over="ignore", invalid="ignore"):
        expected[mine] = ordered_dots_many(vectors, block_rows[rows[mine]], queries, which[mine])
    assert same_bits(out, expected)


def test_gathered_dots_refuse_rows_outside_the_table_and_bad_runs() -> None:
    vectors = np.ones((2, 3), dtype=np.float32)
    block, block_rows = np.zeros(2, dtype=np.int64), np.asarray([0, 5], dtype=np.int64)
    queries = np.ones((1, 3))
    out = np.zeros(1)
    offsets = np.asarray([0, 1], dtype=np.int64)
    with pytest.raises(IndexError, match="table row"):
        gathered_dots(vectors, block, block_rows, np.asarray([2]), offsets, queries, 0, out)
    with pytest.raises(IndexError, match="vector row"):
        gathered_dots(vectors, block, block_rows, np.asarray([1]), offsets, queries, 0, out)
    with pytest.raises(ValueError, match="offsets"):
        gathered_dots(vectors, block, block_rows, np.asarray([0]),
                      np.asarray([0, 2], dtype=np.int64), queries, 0, out)


def test_gathered_dots_refuses_a_dimension_mismatch_and_a_short_out() -> None:
    vectors = np.ones((2, 3), dtype=np.float32)
    block = np.zeros(2, dtype=np.int64)
    block_rows = np.asarray([0, 1], dtype=np.int64)
    rows = np.asarray([0, 1], dtype=np.int64)
    offsets = np.asarray([0, 2], dtype=np.int64)
    with pytest.raises(ValueError):
        gathered_dots(vectors, block, block_rows, rows, offsets, np.ones((1, 2)), 0, np.zeros(2))
    with pytest.raises(ValueError):
        gathered_dots(vectors, block, block_rows, rows, offsets, np.ones((1, 3)), 0, np.zeros(1))
    with pytest.raises(ValueError, match="ascend"):  # refused before a run is read
        gathered_dots(vectors, block, block_rows, rows, np.asarray([0, 5, 2], dtype=np.int64),
                      np.ones((2, 3)), 0, np.zeros(2))
    out = np.zeros(2)
    gathered_dots(vectors, block, block_rows, rows, offsets, np.ones((1, 3)), 0, out)
    assert out.tolist() == [3.0, 3.0]
