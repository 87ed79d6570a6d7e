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


def normalize_rows(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Return ``matrix`` as a C-contiguous float32 array with every non-zero row L2-normalised.

    Rows whose norm is 0 (or not finite) come back as zero rows (the "no direction" sentinel).

    Args:
        matrix: array-like of shape ``(n, d)``.

    Raises:
        ValueError: ``matrix`` is not two-dimensional.
    """
    out = np.array(matrix, dtype=np.float32, copy=True, order="C")
    if out.ndim != 2:
        raise ValueError(f"matrix: expected 2 dimensions, got shape {out.shape}")
    norms = np.linalg.norm(out.astype(np.float64), axis=1)
    good = np.isfinite(norms) & (norms > 0.0)
    out[~good] = 0.0
    out[good] = (out[good].astype(np.float64) / norms[good, None]).astype(np.float32)
    return out
