"""A deterministic, dependency-free embedder for tests (the feature-hashing trick).

Each lowercase word (``\\w+`` run) is hashed with BLAKE2b into a column and a sign; a text's
vector is the signed count of its words, L2-normalised (Weinberger et al., "Feature Hashing for
Large Scale Multitask Learning", 2009). Texts sharing words are close; it captures no meaning
beyond word overlap, which is what tests need: stable, fast, and identical on every machine.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from planner_svc.embed.base import normalize_rows

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Feature-hashing embedder satisfying :class:`planner_svc.embed.base.Embedder`.

    Args:
        dim: vector dimension, 1..65536 (default 256, the default model's dimension).

    Raises:
        ValueError: ``dim`` is out of range.
    """

    def __init__(self, dim: int = 256) -> None:
        if not 1 <= dim <= 65536:
            raise ValueError(f"dim: {dim} is outside the allowed range 1..65536")
        self.dim: int = dim
        self.name: str = f"hashing-{dim}"

    def _slot(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "big")
        return value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: shape ``(len(texts), dim)``, float32, unit rows; zero row when a text
        has no word characters."""
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            for token in _WORD.findall(text.lower()):
                col, sign = self._slot(token)
                out[row, col] += sign
        return normalize_rows(out)
