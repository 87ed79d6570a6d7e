"""Static-embedding backend: a model2vec ``StaticModel`` loaded from a local directory.

A model2vec model is a token-embedding table distilled from a sentence transformer: encoding is
a tokenizer pass plus a mean of table rows, so it needs no torch at run time and embeds thousands
of texts per second on one core. The default model (``models/minilm-l6-m2v-256`` at the
repository root) is distilled from sentence-transformers/all-MiniLM-L6-v2; see its PROVENANCE.md
and ``scripts/build_model.py``.

Loading never touches the network: the directory must exist (model2vec would otherwise treat the
path as a hub repository id and try to download it), and ``HF_HUB_OFFLINE=1`` is set by default
before model2vec (and with it huggingface_hub) is imported.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.core.errors import ConfigError
from planner_svc.embed.base import normalize_rows

#: Files a model directory must hold for the loader to use it locally.
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def check_model_dir(path: Path, *, field: str) -> Path:
    """Return ``path`` resolved if it is a directory holding a model2vec model.

    Raises:
        ConfigError: (``field``) the directory or one of :data:`REQUIRED_FILES` is missing.
    """
    resolved = path.expanduser().resolve()
    if not resolved.is_dir():
        raise ConfigError(field, f"{str(path)!r} is not a directory holding a model2vec model")
    missing = [name for name in REQUIRED_FILES if not (resolved / name).is_file()]
    if missing:
        raise ConfigError(field, f"{str(path)!r} lacks {', '.join(missing)}")
    return resolved


class Model2VecEmbedder:
    """Embedder backed by ``model2vec.StaticModel``; satisfies ``Embedder``.

    Args:
        path: local model directory (config.json, model.safetensors, tokenizer.json).
        name: stable id persisted with the vector index; defaults to the directory name.

    Attributes:
        name: ``name`` or the directory name, e.g. ``"minilm-l6-m2v-256"``.
        dim: the model's vector dimension (256 for the default model).

    Raises:
        ConfigError: (``embed.model_dir``) the directory is missing or incomplete.
    """

    def __init__(self, path: str | os.PathLike[str], *, name: str | None = None) -> None:
        directory = check_model_dir(Path(path), field="embed.model_dir")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from model2vec import StaticModel

        self._model: Any = StaticModel.from_pretrained(directory, force_download=False)
        self.path: Path = directory
        self.name: str = name if name is not None else directory.name
        self.dim: int = int(self._model.dim)
        # StaticModel.encode re-sets the tokenizer's truncation on every call, a mutation that
        # the tokenizers binding refuses ("Already borrowed") while another thread encodes.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``.

        Returns:
            Shape ``(len(texts), dim)``, float32, rows L2-normalised in float32 (the model
            stores float16); a zero row for a text with no known token (e.g. ``""``).
            Deterministic: runs in the calling thread (never a worker pool); thread-safe, calls
            are serialised by a lock (a one-sentence query takes tens of microseconds).
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        batch = list(texts)
        with self._lock:
            raw = self._model.encode(batch, use_multiprocessing=False, show_progress_bar=False)
        return normalize_rows(raw)
