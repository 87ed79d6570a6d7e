"""Embedders: shapes, norms, sentinel rows, determinism, semantics, offline loading."""

from __future__ import annotations

import math
import shutil
import socket
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from planner_svc.core.errors import ConfigError
from planner_svc.embed import (
    DEFAULT_MODEL_NAME,
    Embedder,
    HashingEmbedder,
    Model2VecEmbedder,
    default_embedder,
    default_model_dir,
    normalize_rows,
)
from planner_svc.embed.base import ordered_sum
from planner_svc.embed.model2vec_backend import IN_THREAD_TEXTS
from planner_svc.settings import ENV_MODEL_DIR, read_environment

REPO_MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / DEFAULT_MODEL_NAME


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# ---------------------------------------------------------------- normalize_rows


def test_normalize_rows_units_and_zero_sentinel() -> None:
    out = normalize_rows([[3.0, 4.0], [0.0, 0.0], [np.nan, 1.0], [np.inf, 0.0]])
    assert out.dtype == np.float32
    assert out.flags.c_contiguous
    np.testing.assert_allclose(out[0], [0.6, 0.8], rtol=1e-6)
    assert np.all(out[1:] == 0.0)


def test_normalize_rows_rejects_one_dimensional_input() -> None:
    with pytest.raises(ValueError, match="expected 2 dimensions"):
        normalize_rows([1.0, 2.0])


# ---------------------------------------------------------------- hashing embedder


def test_hashing_embedder_shape_norm_and_sentinel() -> None:
    emb = HashingEmbedder(dim=64)
    out = emb.embed(["alpha beta", "", "  ...  ", "Alpha BETA"])
    assert emb.name == "hashing-64"
    assert out.shape == (4, 64)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out[0]), 1.0, rtol=1e-6)
    assert np.all(out[1] == 0.0)
    assert np.all(out[2] == 0.0)
    np.testing.assert_array_equal(out[0], out[3])  # case-insensitive


def test_hashing_embedder_is_stable_across_instances() -> None:
    texts = ["the quick brown fox", "jumps over the lazy dog"]
    a = HashingEmbedder().embed(texts)
    b = HashingEmbedder().embed(texts)
    np.testing.assert_array_equal(a, b)
    # Pinned values: the hash is BLAKE2b, identical in every process (unlike salted hash()).
    fox = HashingEmbedder(dim=16).embed(["fox"])[0]
    assert np.flatnonzero(fox).tolist() == [7]
    assert fox[7] == -1.0
    quick_fox = HashingEmbedder(dim=16).embed(["quick fox"])[0]
    assert np.flatnonzero(quick_fox).tolist() == [5, 7]


def test_hashing_embedder_word_overlap_scores_higher() -> None:
    out = HashingEmbedder().embed(
        ["vector index partitions", "partitions of the vector index", "budget tokens"]
    )
    assert _cos(out[0], out[1]) > _cos(out[0], out[2])


def test_hashing_embedder_empty_batch_and_bad_dim() -> None:
    assert HashingEmbedder(dim=8).embed([]).shape == (0, 8)
    with pytest.raises(ValueError, match="dim: 0"):
        HashingEmbedder(dim=0)


def test_hashing_embedder_satisfies_protocol() -> None:
    emb: Embedder = HashingEmbedder()
    assert emb.dim == 256


# ---------------------------------------------------------------- model2vec / default model


@pytest.fixture(scope="module")
def model() -> Embedder:
    return default_embedder()


def test_default_model_dir_is_the_repository_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MODEL_DIR, raising=False)
    assert read_environment().model_dir is None
    assert default_model_dir(read_environment().model_dir) == REPO_MODEL_DIR


def test_default_embedder_identity(model: Embedder) -> None:
    assert model.name == "minilm-l6-m2v-256/ordered-f64"
    assert model.dim == 256
    assert default_embedder() is model  # loaded once


def test_model_rows_are_unit_float32_with_zero_sentinel(model: Embedder) -> None:
    texts = ["Evidence plans cite source spans.", "", "   ", "\u2603\u2603", "budget"]
    out = model.embed(texts)
    assert out.shape == (5, 256)
    assert out.dtype == np.float32
    norms = np.linalg.norm(out.astype(np.float64), axis=1)
    np.testing.assert_allclose(norms[[0, 4]], 1.0, atol=1e-6)
    assert np.all(out[1:4] == 0.0)  # no known token -> zero row
    assert model.embed([]).shape == (0, 256)


def test_model_pools_in_token_order_in_double_precision(model: Embedder) -> None:
    """The embedding equals a plain left-to-right Python computation, bit for bit, over the
    model files as model2vec itself reads them."""
    from model2vec import StaticModel

    assert isinstance(model, Model2VecEmbedder)
    reference = StaticModel.from_pretrained(model.path, force_download=False)
    text = "Evidence plans cite source spans under a token budget."
    ids = reference.tokenize([text])[0]
    table = np.asarray(reference.embedding)
    total = [0.0] * model.dim
    for token in ids:
        row = table[token].astype(np.float64).tolist()
        total = [a + b for a, b in zip(total, row, strict=True)]
    squares = 0.0
    for value in total:
        squares += value * value
    norm = math.sqrt(squares)
    expected = np.asarray([value / norm for value in total], dtype=np.float64).astype(np.float32)
    np.testing.assert_array_equal(model.embed([text])[0], expected)


def test_model_pools_a_mixed_batch_like_ordered_sum_per_text(model: Embedder) -> None:
    """A batch of texts of every length (none, one token, many, an empty one) pools each text
    as :func:`ordered_sum` of its own rows would, bit for bit."""
    assert isinstance(model, Model2VecEmbedder)
    texts = ["", "river", "Evidence plans cite source spans under a token budget.", "   ",
             "The Tennessee Three backed Johnny Cash. " * 20, "lakes and rivers"]
    table = np.asarray(model._model.embedding)
    sums = np.zeros((len(texts), model.dim), dtype=np.float64)
    for i, ids in enumerate(model._token_ids(texts)):
        if ids:
            sums[i] = ordered_sum(table[np.asarray(ids)].astype(np.float64), axis=0)
    expected = normalize_rows(sums)
    np.testing.assert_array_equal(model.embed(texts), expected)
    assert not np.any(expected[[0, 3]]) and np.all(np.any(expected[[1, 2, 4, 5]], axis=1))


PINNED_BITS = ["-0x1.ec6e9c0000000p-4", "0x1.1ed64c0000000p-8", "0x1.5a97240000000p-3",
               "-0x1.253c2a0000000p-2"]


def test_model_bits_are_pinned(model: Embedder) -> None:
    """Bits of one embedding, as computed on the machine that wrote this test: a machine
    that pools differently would give other plan weights (and hashes)."""
    row = model.embed(["The Tennessee Three backed Johnny Cash."])[0]
    assert [float(x).hex() for x in row[:4]] == PINNED_BITS


def test_model_is_deterministic(model: Embedder) -> None:
    texts = [f"sentence number {i} about rivers and lakes" for i in range(50)]
    a = model.embed(texts)
    b = model.embed(texts)
    c = Model2VecEmbedder(REPO_MODEL_DIR).embed(texts)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    # Batching does not change a row.
    np.testing.assert_array_equal(model.embed([texts[7]])[0], a[7])


@pytest.mark.parametrize(
    ("anchor", "close", "far"),
    [
        (
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Quarterly revenue rose by ten percent.",
        ),
        (
            "How do I reset my password?",
            "I forgot my login credentials and need to change them.",
            "The volcano erupted last night.",
        ),
        (
            "The patient was prescribed antibiotics for the infection.",
            "The doctor gave her medicine to treat the bacterial illness.",
            "The football match ended in a draw.",
        ),
    ],
)
def test_model_semantics_close_beats_unrelated(
    model: Embedder, anchor: str, close: str, far: str
) -> None:
    a, c, f = model.embed([anchor, close, far])
    assert _cos(a, c) > _cos(a, f) + 0.1


def test_model_embedding_is_thread_safe(model: Embedder) -> None:
    # small batches are tokenized in the calling thread, large ones by the batch encoder: both
    # at once from several threads, with no lock
    texts = ["parallel request one", "parallel request two", "another query"]
    large = [f"bulk text {i} about a river delta and its towns" for i in range(3 * IN_THREAD_TEXTS)]
    expected = model.embed(texts)
    expected_large = model.embed(large)
    np.testing.assert_array_equal(expected_large[:3], model.embed(large[:3]))
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(30):
                np.testing.assert_array_equal(model.embed(texts), expected)
                np.testing.assert_array_equal(model.embed(large), expected_large)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_model_loads_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    emb = Model2VecEmbedder(REPO_MODEL_DIR)
    assert emb.embed(["offline"]).shape == (1, 256)
    assert attempts == []


def test_model_dir_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    copy = tmp_path / "other-model"
    shutil.copytree(REPO_MODEL_DIR, copy)
    monkeypatch.setenv(ENV_MODEL_DIR, str(copy))
    assert default_model_dir(read_environment().model_dir) == copy.resolve()
    emb = default_embedder(read_environment().model_dir)
    assert emb.name == "other-model/ordered-f64"
    assert emb.dim == 256


def test_missing_model_dir_is_a_config_error_not_a_download(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENV_MODEL_DIR, str(tmp_path / "absent"))
    with pytest.raises(ConfigError) as info:
        default_embedder(read_environment().model_dir)
    assert info.value.field == ENV_MODEL_DIR
    assert "absent" in info.value.reason

    (tmp_path / "partial").mkdir()
    (tmp_path / "partial" / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"lacks model\.safetensors, tokenizer\.json"):
        Model2VecEmbedder(tmp_path / "partial")
