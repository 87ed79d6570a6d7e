"""The ``Embedder`` protocol every text-embedding backend satisfies.

An embedder maps texts to dense vectors for the semantic recall leg and for ingestion. The vector
index relies on rows being L2-normalised, so that inner product equals cosine similarity.

Sentinel: a text that yields no token the model knows (the empty string, whitespace, or only
characters outside the vocabulary) has no direction; its row is all zeros (norm 0), never NaN.
Callers that need a direction check ``np.linalg.norm(row) > 0``; the vector index skips zero rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt


class Embedder(Protocol):
    """Turns texts into unit-norm float32 vectors.

    Attributes:
        name: stable identifier of the model and its settings (e.g. ``"minilm-l6-m2v-256"``).
            Persisted with the vector index; an index built under another name is rebuilt.
        dim: vector dimension (number of columns ``embed`` returns).
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``.

        Returns:
            Array of shape ``(len(texts), dim)``, dtype float32, C-contiguous; row ``i`` belongs
            to ``texts[i]`` and has L2 norm 1, or is all zeros for a text without known tokens
            (see the module docstring). An empty sequence gives shape ``(0, dim)``.
        """
        ...


def ordered_sum(matrix: npt.NDArray[np.float64], *, axis: int) -> npt.NDArray[np.float64]:
    """Sum of float64 ``matrix`` along ``axis``, adding in index order, one element at a time.

    A running (accumulated) sum fixes the order of the additions, and each IEEE-754 addition is
    correctly rounded, so the result is the same bits on every machine, whatever SIMD width or
    thread count the library would use for a plain ``sum`` (which may reassociate). The other
    axes are vectorised.
    """
    if matrix.shape[axis] == 0:
        return np.zeros(np.delete(matrix.shape, axis), dtype=np.float64)
    total: npt.NDArray[np.float64] = np.take(np.add.accumulate(matrix, axis=axis), -1, axis=axis)
    return total


def normalize_rows(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Return ``matrix`` as a C-contiguous float32 array with every non-zero row L2-normalised.

    Reproducible bit for bit: the norm is computed in float64 with :func:`ordered_sum`, then
    each value is divided by it and rounded once to float32. Rows whose norm is 0 (or not
    finite) come back as zero rows (the "no direction" sentinel).

    Args:
        matrix: array-like of shape ``(n, d)``.

    Raises:
        ValueError: ``matrix`` is not two-dimensional.
    """
    m64 = np.array(matrix, dtype=np.float64, copy=True, order="C")
    if m64.ndim != 2:
        raise ValueError(f"matrix: expected 2 dimensions, got shape {m64.shape}")
    norms = np.sqrt(ordered_sum(m64 * m64, axis=1))
    good = np.isfinite(norms) & (norms > 0.0)
    out = np.zeros(m64.shape, dtype=np.float32)
    out[good] = (m64[good] / norms[good, None]).astype(np.float32)
    return out
