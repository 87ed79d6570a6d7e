"""The default embedder: the model shipped in the repository, loaded once per directory."""

from __future__ import annotations

import functools
from pathlib import Path

from planner_svc.embed.base import Embedder
from planner_svc.embed.model2vec_backend import Model2VecEmbedder, check_model_dir

__all__ = ["DEFAULT_MODEL_NAME", "MODEL_DIR_FIELD", "default_embedder", "default_model_dir"]

DEFAULT_MODEL_NAME = "minilm-l6-m2v-256"
"""Directory name (and embedder name) of the model shipped in the repository."""
MODEL_DIR_FIELD = "PLANNER_SVC_MODEL_DIR"
"""The setting errors about the model directory name: the environment variable that sets it."""


def default_model_dir(override: Path | None = None) -> Path:
    """Directory of the default model.

    ``override`` when given, else ``<repo>/models/minilm-l6-m2v-256`` where ``<repo>`` is the
    directory holding the ``planner_svc`` package (an editable install or a source checkout).

    Raises:
        ConfigError: (``PLANNER_SVC_MODEL_DIR``) the directory is missing or incomplete.
    """
    if override is not None:
        return check_model_dir(override, field=MODEL_DIR_FIELD)
    repo_root = Path(__file__).resolve().parent.parent.parent
    return check_model_dir(repo_root / "models" / DEFAULT_MODEL_NAME, field=MODEL_DIR_FIELD)


@functools.lru_cache(maxsize=4)
def _load(directory: Path) -> Model2VecEmbedder:
    return Model2VecEmbedder(directory)


def default_embedder(model_dir: Path | None = None) -> Embedder:
    """The default embedder: :class:`Model2VecEmbedder` over :func:`default_model_dir`
    (``model_dir``, else the repository's model).

    Loaded once per resolved directory and shared (embedding is thread-safe: the model is a
    read-only table). Loading takes about half a second and never uses the network.

    Raises:
        ConfigError: (``PLANNER_SVC_MODEL_DIR``) the model directory is missing or incomplete.
    """
    return _load(default_model_dir(model_dir))
