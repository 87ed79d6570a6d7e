"""Text embedders: the ``Embedder`` protocol and its backends.

- :class:`HashingEmbedder`: deterministic feature hashing, numpy only (tests).
- :class:`Model2VecEmbedder`: a model2vec static model from a local directory (production).
- :func:`default_embedder`: the model shipped in the repository (``models/minilm-l6-m2v-256``),
  or another model directory (the server and the commands pass the one the environment names,
  :data:`planner_svc.settings.ENV_MODEL_DIR`).
"""

from __future__ import annotations

from planner_svc.embed.base import Embedder, normalize_rows
from planner_svc.embed.defaults import (
    DEFAULT_MODEL_NAME,
    MODEL_DIR_FIELD,
    default_embedder,
    default_model_dir,
)
from planner_svc.embed.hashing import HashingEmbedder
from planner_svc.embed.model2vec_backend import Model2VecEmbedder

__all__ = [
    "DEFAULT_MODEL_NAME",
    "MODEL_DIR_FIELD",
    "Embedder",
    "HashingEmbedder",
    "Model2VecEmbedder",
    "default_embedder",
    "default_model_dir",
    "normalize_rows",
]
