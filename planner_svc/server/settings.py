"""Server settings: one frozen record, validated at construction, built from CLI flags.

Units are in the names: ``grace_s`` seconds, ``max_message_bytes`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from planner_svc.core.config import PlannerConfig
from planner_svc.core.errors import ConfigError


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSettings:
    """How the server runs.

    Attributes:
        data_dir: directory holding ``store.sqlite`` and ``index/``.
        host: bind address (loopback by default).
        port: TCP port; 0 picks a free one (tests).
        max_workers: gRPC handler threads, 2..256 (open research sessions take at most half).
        max_message_bytes: largest request/response message, bytes.
        grace_s: graceful-shutdown grace period for in-flight calls, seconds.
        drain_s: seconds between health turning NOT_SERVING and refusing new calls, so load
            balancers move traffic away first.
        reuse_port: allow several processes to share the port (SO_REUSEPORT); off for a single
            process so a port clash fails loudly.
        metrics_port: Prometheus /metrics HTTP port on the bind host; None disables it.
        auth_token: when set, every RPC but health must send ``authorization: Bearer <token>``.
        tls_cert, tls_key: PEM files; both or neither (TLS when both are set).
        planner: weighting and selection defaults.
        semantic: open the vector index and embedder (disable for a store-only server).
        cassette_dir: directory of research-provider cassettes (``cassette:NAME`` and
            ``record:NAME`` providers); None refuses them.
        models_path: model registry JSON (context windows, tokenizers); None = the packaged
            default (``planner_svc/data/models.json``).
    """

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 50151
    max_workers: int = 8
    max_message_bytes: int = 16 * 1024 * 1024
    grace_s: float = 5.0
    drain_s: float = 0.0
    reuse_port: bool = False
    metrics_port: int | None = None
    auth_token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    semantic: bool = True
    cassette_dir: Path | None = None
    models_path: Path | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError("port", f"must be in 0..65535, got {self.port}")
        if not 2 <= self.max_workers <= 256:
            # research streams may hold at most half of them; one must stay free for health
            raise ConfigError("max_workers", f"must be in 2..256, got {self.max_workers}")
        if not 1024 <= self.max_message_bytes <= 1 << 30:
            raise ConfigError(
                "max_message_bytes", f"must be in 1024..{1 << 30}, got {self.max_message_bytes}"
            )
        if not 0.0 <= self.grace_s <= 300.0:
            raise ConfigError("grace_s", f"must be in [0, 300], got {self.grace_s}")
        if not 0.0 <= self.drain_s <= 300.0:
            raise ConfigError("drain_s", f"must be in [0, 300], got {self.drain_s}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("tls_cert", "tls_cert and tls_key must be given together")
        if self.auth_token is not None and not self.auth_token:
            raise ConfigError("auth_token", "must be non-empty when set")

    @property
    def address(self) -> str:
        """``host:port`` to bind."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
