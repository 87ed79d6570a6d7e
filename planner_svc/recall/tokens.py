"""Token accounting for recall: the model registry's counter.

Exact counts where the registry names a usable tokenizer for the model, context windows for
every registered model, the estimator (``core.tokens``) for everything else. See
:mod:`planner_svc.tokens` for the registry format.
"""

from __future__ import annotations

from pathlib import Path

from planner_svc.tokens import RegistryCounter, load_registry


def default_counter(registry_path: Path | None = None) -> RegistryCounter:
    """The counter the server plans with: the registry at ``registry_path``, or the packaged
    default (``planner_svc/data/models.json``) when None.

    Tokenizers are loaded on first use, not here.

    Raises:
        ConfigError: the registry file is unreadable or invalid (field path inside the file).
    """
    return RegistryCounter(load_registry(registry_path))
