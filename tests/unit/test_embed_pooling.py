"""The compiled pooling gives the bits of the numpy running sums it replaces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner_svc.embed.base import normalize_rows, ordered_sum
from planner_svc.embed.pooling import pool_tokens, table_dtype

REPO_MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "minilm-l6-m2v-256"


def reference(table: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
              weights: npt.NDArray[np.float64] | None,
              lengths: list[int]) -> npt.NDArray[np.float32]:
    """Each text's rows widened, weighted, added in token order by numpy, then normalised."""
    sums = np.zeros((len(lengths), table.shape[1]), dtype=np.float64)
    start = 0
    for i, length in enumerate(lengths):
        part = table[rows[start:start + length]].astype(np.float64)
        if weights is not None:
            part *= weights[start:start + length][:, None]
        if length:
            sums[i] = ordered_sum(part, axis=0)
        start += length
    return normalize_rows(sums)


def same_bits(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int32), b.view(np.int32)))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("lengths", [[], [0], [1], [3, 0, 5], [40, 1, 2, 0, 7]])
def test_equal_to_the_numpy_running_sums_bit_for_bit(weighted: bool, lengths: list[int]) -> None:
    rng = np.random.default_rng(sum(lengths) + weighted)
    table = rng.standard_normal((30, 256)).astype(np.float16).astype(np.float32)
    rows = rng.integers(0, 30, sum(lengths)).astype(np.int64)
    weights = rng.random(sum(lengths)).astype(np.float32).astype(np.float64) if weighted else None
    got = pool_tokens(table, rows, weights, lengths)
    assert same_bits(got, reference(table, rows, weights, lengths))
    assert got.shape == (len(lengths), 256)
    for i, length in enumerate(lengths):
        assert (np.linalg.norm(got[i]) > 0.99) == (length > 0)


def test_the_sum_starts_from_the_first_row_itself() -> None:
    # a running sum keeps a first value of -0.0; 0.0 + -0.0 would not, nor its sign after
    # normalising
    table = np.asarray([[-0.0, 1.0], [0.0, 2.0]], dtype=np.float32)
    got = pool_tokens(table, np.asarray([0], dtype=np.int64), None, [1])
    assert np.signbit(got[0, 0]) and got[0, 1] == 1.0
    assert same_bits(got, reference(table, np.asarray([0]), None, [1]))


def test_a_text_whose_rows_cancel_has_no_direction() -> None:
    table = np.asarray([[1.0, -2.0], [-1.0, 2.0]], dtype=np.float32)
    got = pool_tokens(table, np.asarray([0, 1], dtype=np.int64), None, [2])
    assert not got.any()


def test_read_only_tables_are_read_in_place() -> None:
    table = np.eye(3, dtype=np.float32)
    table.setflags(write=False)
    got = pool_tokens(table, np.asarray([0, 1], dtype=np.int64), None, [2])
    assert np.allclose(got, [[2 ** -0.5, 2 ** -0.5, 0.0]])


def test_bad_shapes_and_rows_are_refused() -> None:
    table = np.ones((4, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="add up to 3"):
        pool_tokens(table, np.asarray([0, 1], dtype=np.int64), None, [3])
    with pytest.raises(ValueError, match="weights"):
        pool_tokens(table, np.asarray([0, 1], dtype=np.int64), np.ones(1), [2])
    with pytest.raises(ValueError, match="at least one column"):
        pool_tokens(np.ones((4, 0), dtype=np.float32), np.asarray([0]), None, [1])
    with pytest.raises(IndexError):
        pool_tokens(table, np.asarray([4], dtype=np.int64), None, [1])


finite16 = st.floats(-60000, 60000, allow_nan=False, width=16)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), dim=st.integers(1, 24), vocabulary=st.integers(1, 9),
       lengths=st.lists(st.integers(0, 12), max_size=5), weighted=st.booleans())
def test_any_half_precision_table(data: st.DataObject, dim: int, vocabulary: int,
                                  lengths: list[int], weighted: bool) -> None:
    table = data.draw(hnp.arrays(np.float16, (vocabulary, dim), elements=finite16)
                      ).astype(np.float32)
    rows = data.draw(hnp.arrays(np.int64, sum(lengths),
                                elements=st.integers(0, vocabulary - 1)))
    weights = (data.draw(hnp.arrays(np.float32, sum(lengths),
                                    elements=st.floats(0, 4, width=32))).astype(np.float64)
               if weighted else None)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = reference(table, rows, weights, lengths)
    assert same_bits(pool_tokens(table, rows, weights, lengths), expected)


def test_float64_tables_are_read_as_they_are() -> None:
    # a float64 model's values do not fit float32: narrowing them would move the sums' bits
    rng = np.random.default_rng(11)
    table = rng.standard_normal((20, 64))
    rows = rng.integers(0, 20, 30).astype(np.int64)
    weights = rng.random(30)
    for w in (None, weights):
        got = pool_tokens(table, rows, w, [12, 0, 18])
        assert same_bits(got, reference(table, rows, w, [12, 0, 18]))  # type: ignore[arg-type]


def test_table_dtype_narrows_only_exactly() -> None:
    assert table_dtype(np.float16) is np.float32
    assert table_dtype(np.int8) is np.float32
    assert table_dtype(np.float32) is np.float32
    assert table_dtype(np.float64) is np.float64


def test_negative_lengths_are_refused() -> None:
    table = np.ones((4, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="fewer than 0"):
        pool_tokens(table, np.asarray([0, 1], dtype=np.int64), None, [3, -1])


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_a_model_with_weights_a_token_mapping_and_a_max_length(
    tmp_path: Path, dtype: type[np.floating[Any]]
) -> None:
    """The embedder over a vocabulary-quantized model (per-token weights, token ids mapped to
    fewer rows, truncation) gives the bits of the numpy running sums it pooled with before."""
    from model2vec import StaticModel

    from planner_svc.embed.model2vec_backend import Model2VecEmbedder

    tokenizer = StaticModel.from_pretrained(REPO_MODEL_DIR).tokenizer
    vocabulary = tokenizer.get_vocab_size()
    rng = np.random.default_rng(3)
    table = rng.standard_normal((500, 16)).astype(dtype)
    weights = rng.random(vocabulary).astype(np.float32)
    mapping = rng.integers(0, 500, vocabulary).astype(np.int64)
    StaticModel(vectors=table, tokenizer=tokenizer, weights=weights, token_mapping=mapping,
                max_length=5).save_pretrained(tmp_path)
    embedder = Model2VecEmbedder(tmp_path)
    texts = ["The Tennessee Three backed Johnny Cash on every recording.", "", "rivers",
             "a b c d e f g h i j k"]
    ids = [tokenizer.encode(t, add_special_tokens=False).ids[:5] for t in texts]
    flat = np.asarray([i for row in ids for i in row], dtype=np.int64)
    loaded = np.asarray(embedder._model.embedding)  # as the model stores it
    assert loaded.dtype == dtype and embedder._model.max_length == 5
    assert embedder._model.weights is not None and embedder._model.token_mapping is not None
    sums = np.zeros((len(texts), 16), dtype=np.float64)
    start = 0
    for t, row in enumerate(ids):
        part = (loaded[np.asarray(embedder._model.token_mapping)[flat[start:start + len(row)]]]
                .astype(np.float64)
                * np.asarray(embedder._model.weights)[flat[start:start + len(row)]]
                .astype(np.float64)[:, None])
        if len(row):
            sums[t] = ordered_sum(part, axis=0)
        start += len(row)
    assert same_bits(embedder.embed(texts), normalize_rows(sums))
