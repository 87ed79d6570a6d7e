"""Text embedders: the ``Embedder`` protocol and its backends.

- :class:`HashingEmbedder`: deterministic feature hashing, numpy only (tests).
- :class:`Model2VecEmbedder`: a model2vec static model from a local directory (production).
- :func:`default_embedder`: the model shipped in the repository (``models/minilm-l6-m2v-256``),
  or the directory named by the environment variable ``PLANNER_SVC_MODEL_DIR``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from planner_svc.embed.base import Embedder, normalize_rows
from planner_svc.embed.hashing import HashingEmbedder
from planner_svc.embed.model2vec_backend import Model2VecEmbedder, check_model_dir

__all__ = [
    "DEFAULT_MODEL_NAME",
    "MODEL_DIR_ENV",
    "Embedder",
    "HashingEmbedder",
    "Model2VecEmbedder",
    "default_embedder",
    "default_model_dir",
    "normalize_rows",
]

#: Directory name (and embedder name) of the model shipped in the repository.
DEFAULT_MODEL_NAME = "minilm-l6-m2v-256"
#: Environment variable that overrides the model directory.
MODEL_DIR_ENV = "PLANNER_SVC_MODEL_DIR"


def default_model_dir() -> Path:
    """Directory of the default model.

    ``$PLANNER_SVC_MODEL_DIR`` when set and non-empty, else ``<repo>/models/minilm-l6-m2v-256``
    where ``<repo>`` is the directory holding the ``planner_svc`` package (an editable install
    or a source checkout).

    Raises:
        ConfigError: (``PLANNER_SVC_MODEL_DIR``) the directory is missing or incomplete.
    """
    override = os.environ.get(MODEL_DIR_ENV, "")
    if override:
        return check_model_dir(Path(override), field=MODEL_DIR_ENV)
    repo_root = Path(__file__).resolve().parent.parent.parent
    return check_model_dir(repo_root / "models" / DEFAULT_MODEL_NAME, field=MODEL_DIR_ENV)


@functools.lru_cache(maxsize=4)
def _load(directory: Path) -> Model2VecEmbedder:
    return Model2VecEmbedder(directory)


def default_embedder() -> Embedder:
    """The default embedder: :class:`Model2VecEmbedder` over :func:`default_model_dir`.

    Loaded once per resolved directory and shared (embedding is thread-safe: the model is a
    read-only table). Loading takes about half a second and never uses the network.

    Raises:
        ConfigError: (``PLANNER_SVC_MODEL_DIR``) the model directory is missing or incomplete.
    """
    return _load(default_model_dir())
