"""The server's settings: one frozen, validated tree, the environment, and the ``serve`` flags.

Tree (every node frozen, slotted, keyword-only and validated at construction; an error names the
field, the value and the allowed range)::

    ServerSettings                 data directory, embedder model, registry, worker processes
    ├── transport: TransportSettings   bind address, handler threads, message size, shutdown,
    │                                  metrics, TLS, bearer token
    ├── selection: SelectionSettings   weighting and selection defaults (planner_svc.core.config)
    ├── recall: RecallSettings         document, hop and passage scoring, abstention,
    │                                  default k/limit
    │                                  (planner_svc.recall.settings)
    └── research: ResearchSettings     provider cassettes, the OpenAI-compatible endpoint,
                                       the duplicate threshold of sub-questions

Each node states its bounds once (a ``BOUNDS`` mapping of :class:`~planner_svc.core.limits.Bounds`
per field); validation, the flags' argument types and their help text read them, and the flags'
defaults are the fields' defaults (:data:`SERVE_FLAGS`, :func:`add_serve_flags`,
:func:`settings_from_flags`). Environment variables are read here and nowhere else
(:func:`read_environment`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import ConfigError
from planner_svc.core.limits import TCP_PORT, Bounds
from planner_svc.recall.settings import RecallSettings
from planner_svc.research.duplicates import DEFAULT_DUPLICATE_SIMILARITY, DUPLICATE_SIMILARITY
from planner_svc.research.openai_provider import OpenAISettings

__all__ = [
    "DEFAULT_DATA_DIR",
    "ENV_ADDRESS",
    "ENV_AUTH_TOKEN",
    "ENV_LLM_API_KEY",
    "ENV_LLM_BASE_URL",
    "ENV_LLM_MODEL",
    "ENV_LLM_TIMEOUT_S",
    "ENV_MODEL_DIR",
    "SERVE_FLAGS",
    "Environment",
    "Flag",
    "ResearchSettings",
    "ServerSettings",
    "TransportSettings",
    "add_serve_flags",
    "default_address",
    "read_environment",
    "settings_from_flags",
]

DEFAULT_DATA_DIR = Path("data/demo")
"""Data directory of every command when none is given (the demo's)."""

ENV_AUTH_TOKEN = "PLANNER_SVC_AUTH_TOKEN"
"""Bearer token the server requires on every RPC but health and reflection; the clients send it."""
ENV_ADDRESS = "PLANNER_SVC_ADDRESS"
"""``HOST:PORT`` the clients call when no ``--address`` is given (unset or empty: the default
bind address and port)."""
ENV_MODEL_DIR = "PLANNER_SVC_MODEL_DIR"
"""Directory of the embedding model, instead of the repository's ``models/minilm-l6-m2v-256``."""
ENV_LLM_BASE_URL = "PLANNER_LLM_BASE_URL"
"""Root of an OpenAI-compatible chat-completions API (``http://127.0.0.1:8000/v1``)."""
ENV_LLM_MODEL = "PLANNER_LLM_MODEL"
"""Model name sent to that API."""
ENV_LLM_API_KEY = "PLANNER_LLM_API_KEY"
"""Bearer token for that API (optional)."""
ENV_LLM_TIMEOUT_S = "PLANNER_LLM_TIMEOUT_S"
"""Per-attempt timeout of a model call, seconds (optional)."""

@dataclass(frozen=True, slots=True, kw_only=True)
class TransportSettings:
    """How the gRPC server listens, runs its handlers and shuts down.

    Attributes:
        host: bind address (loopback by default).
        port: TCP port, 0..65535; 0 picks a free one (tests).
        max_workers: gRPC handler threads, 2..256 (open research sessions take at most half).
        max_message_bytes: largest request/response message, bytes, 1024..2**30.
        grace_s: graceful-shutdown grace period for in-flight calls, seconds, [0, 300].
        drain_s: seconds between health turning NOT_SERVING and refusing new calls, so load
            balancers move traffic away first, [0, 300].
        reuse_port: allow several processes to share the port (SO_REUSEPORT); off for a single
            process so a port clash fails loudly.
        metrics_port: Prometheus /metrics HTTP port on the bind host, 1..65535; None disables it.
        auth_token: when set, every RPC but health and reflection must send
            ``authorization: Bearer <token>`` (from :data:`ENV_AUTH_TOKEN`).
        tls_cert, tls_key: PEM files; both or neither (TLS when both are set).
        tls_client_ca: PEM file of the certificate authorities client certificates must chain
            to; when set (with TLS), every client must present such a certificate (mutual TLS),
            and one without, or with another authority's, is refused at the handshake.
        keepalive_time_s: seconds of silence on a connection before the server pings the
            client to check it is still there, [1, 7200].
        keepalive_timeout_s: seconds the server waits for that ping's acknowledgement before
            closing the connection, [1, 600].
        min_ping_interval_s: shortest interval between client pings the server accepts while
            it sends no data, seconds, [0.1, 300]; pings may come with no call open. A client
            pinging more often gets 2 strikes, then ``GOAWAY ENHANCE_YOUR_CALM``. The default
            (5 s) lets clients ping every 10 s, a common setting, through a research stream
            that waits minutes for its workers.
    """

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
    tls_client_ca: Path | None = None
    keepalive_time_s: float = 60.0
    keepalive_timeout_s: float = 20.0
    min_ping_interval_s: float = 5.0

    BOUNDS: ClassVar[Mapping[str, Bounds]] = MappingProxyType({
        "port": Bounds(0, TCP_PORT.high),
        "max_workers": Bounds(2, 256),
        "max_message_bytes": Bounds(1024, 1 << 30),
        "grace_s": Bounds(0.0, 300.0),
        "drain_s": Bounds(0.0, 300.0),
        "metrics_port": TCP_PORT,
        "keepalive_time_s": Bounds(1.0, 7200.0),
        "keepalive_timeout_s": Bounds(1.0, 600.0),
        "min_ping_interval_s": Bounds(0.1, 300.0),
    })
    """The allowed interval of each bounded field."""

    def __post_init__(self) -> None:
        _check_bounds(self, self.BOUNDS)
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("tls_cert", "tls_cert and tls_key must be given together")
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise ConfigError("tls_client_ca",
                              "client certificates need TLS: give tls_cert and tls_key too")
        if self.auth_token is not None and not self.auth_token:
            raise ConfigError("auth_token", "must be non-empty when set")

    @property
    def address(self) -> str:
        """``host:port`` to bind (``[host]:port`` for an IPv6 host)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResearchSettings:
    """How research sessions plan.

    Attributes:
        cassette_dir: directory of provider cassettes (``cassette:NAME`` and ``record:NAME``
            providers); None refuses them.
        openai: the OpenAI-compatible endpoint for the ``openai`` provider (from the
            ``PLANNER_LLM_*`` variables); None refuses ``openai``.
        duplicate_similarity: threshold of the similar-meaning rule that refuses a proposed
            sub-question repeating one of the session, in (0, 1]
            (:mod:`planner_svc.research.duplicates`, where the default was measured).

    Raises:
        ConfigError: a field out of range (the field is named).
    """

    cassette_dir: Path | None = None
    openai: OpenAISettings | None = None
    duplicate_similarity: float = DEFAULT_DUPLICATE_SIMILARITY

    BOUNDS: ClassVar[Mapping[str, Bounds]] = MappingProxyType({
        "duplicate_similarity": DUPLICATE_SIMILARITY,
    })
    """The allowed interval of each bounded field."""

    def __post_init__(self) -> None:
        _check_bounds(self, self.BOUNDS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSettings:
    """Everything one server process (or each of its workers) runs with.

    Attributes:
        data_dir: directory holding ``store.sqlite`` and ``index/`` (with ``store``: only the
            replica's derived indexes).
        store: a shared PostgreSQL store's URL (``postgresql://user@host:port/database``);
            None = the SQLite store in ``data_dir``.
        semantic: open the vector index and embedder (False: a store-only server).
        model_dir: the embedding model's directory; None = the repository's model.
        models_path: model registry JSON (context windows, tokenizers); None = the packaged
            ``planner_svc/data/models.json``.
        workers: server processes sharing the port, 1..64 (with port 0, one ephemeral port
            for all of them).
        span_text_mib: memory for span texts kept between plans, MiB per process, 0..65536
            (0 reads every plan's texts from the store).
        plan_slots: plans computed at once per process, 1..256; more calls wait their turn
            (:mod:`planner_svc.recall.slots`: planning holds the interpreter lock, so plans at
            once only take turns on one core, and switching between them costs; one at a time
            served the most plans, on the embedded and on a shared store alike).
        transport, selection, recall, research: the subtrees (see the module docstring).

    Raises:
        ConfigError: a field out of range, or workers that cannot share the port or the
            metrics ports.
    """

    data_dir: Path = DEFAULT_DATA_DIR
    store: str | None = None
    semantic: bool = True
    model_dir: Path | None = None
    models_path: Path | None = None
    workers: int = 1
    span_text_mib: int = 64
    plan_slots: int = 1
    transport: TransportSettings = field(default_factory=TransportSettings)
    selection: SelectionSettings = field(default_factory=SelectionSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    research: ResearchSettings = field(default_factory=ResearchSettings)

    BOUNDS: ClassVar[Mapping[str, Bounds]] = MappingProxyType({
        "workers": Bounds(1, 64), "span_text_mib": Bounds(0, 65536),
        "plan_slots": Bounds(1, 256)})
    """The allowed interval of each bounded field."""

    def __post_init__(self) -> None:
        _check_bounds(self, self.BOUNDS)
        from planner_svc.store.url import check_store_url

        object.__setattr__(self, "store", check_store_url(self.store))
        if self.workers > 1:
            t = self.transport
            if t.metrics_port is not None:
                metrics = range(t.metrics_port, t.metrics_port + self.workers)
                if metrics.stop - 1 > TCP_PORT.high or t.port in metrics:
                    raise ConfigError(
                        "metrics_port",
                        f"workers export metrics on {metrics.start}..{metrics.stop - 1}: that "
                        f"range must stay within {TCP_PORT} and leave out the gRPC port "
                        f"{t.port}",
                    )

    @property
    def research_sessions(self) -> int:
        """Research sessions open at once: half the handler threads (at least one), so Plan
        and health checks always find a free thread."""
        return max(1, self.transport.max_workers // 2)

    def worker(self, index: int) -> ServerSettings:
        """The settings of worker process ``index`` (0-based) of :attr:`workers`: one process
        on the shared port (SO_REUSEPORT), exporting metrics on ``metrics_port + index``."""
        t = self.transport
        return dataclasses.replace(
            self,
            workers=1,
            transport=dataclasses.replace(
                t,
                reuse_port=True,
                metrics_port=None if t.metrics_port is None else t.metrics_port + index,
            ),
        )


def _check_bounds(settings: object, bounds: Mapping[str, Bounds]) -> None:
    """Raise ConfigError naming the first field of ``settings`` outside its bounds (None is
    allowed for optional fields)."""
    for name, allowed in bounds.items():
        value = getattr(settings, name)
        if value is not None and value not in allowed:
            raise ConfigError(name, f"must be in {allowed}, got {value}")


def default_address() -> str:
    """``HOST:PORT`` of a server started with the default transport settings: the clients'
    default address."""
    t = TransportSettings()
    return f"{t.host}:{t.port}"


# --------------------------------------------------------------------------- environment


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """The variables of the process's environment the service uses, as read (stripped).

    Attributes:
        auth_token: :data:`ENV_AUTH_TOKEN`; None when unset or empty.
        model_dir: :data:`ENV_MODEL_DIR`; None when unset or empty.
        llm_base_url, llm_model, llm_api_key, llm_timeout_s: the ``PLANNER_LLM_*`` variables;
            ``""`` when unset.
    """

    auth_token: str | None = None
    model_dir: Path | None = None
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""
    llm_timeout_s: str = ""

    def openai(self) -> OpenAISettings | None:
        """The endpoint of the ``PLANNER_LLM_*`` variables; None unless both the base URL and
        the model are set.

        Raises:
            ConfigError: (``PLANNER_LLM_TIMEOUT_S``) not a number, or a value
                :class:`~planner_svc.research.openai_provider.OpenAISettings` refuses.
        """
        if not self.llm_base_url or not self.llm_model:
            return None
        extra: dict[str, Any] = {}
        if self.llm_timeout_s:
            try:
                extra["timeout_s"] = float(self.llm_timeout_s)
            except ValueError:
                raise ConfigError(
                    ENV_LLM_TIMEOUT_S, f"{self.llm_timeout_s!r} is not a number"
                ) from None
        return OpenAISettings(
            base_url=self.llm_base_url.rstrip("/"),
            model=self.llm_model,
            api_key=self.llm_api_key or None,
            **extra,
        )


def read_environment(env: Mapping[str, str] | None = None) -> Environment:
    """Read every variable the service uses: the only place that reads the environment.

    Args:
        env: the variables; None reads ``os.environ``.
    """
    env = os.environ if env is None else env
    model_dir = env.get(ENV_MODEL_DIR, "")
    return Environment(
        auth_token=env.get(ENV_AUTH_TOKEN) or None,
        model_dir=Path(model_dir) if model_dir else None,
        llm_base_url=env.get(ENV_LLM_BASE_URL, "").strip(),
        llm_model=env.get(ENV_LLM_MODEL, "").strip(),
        llm_api_key=env.get(ENV_LLM_API_KEY, ""),
        llm_timeout_s=env.get(ENV_LLM_TIMEOUT_S, "").strip(),
    )


# --------------------------------------------------------------------------- serve flags


@dataclass(frozen=True, slots=True)
class Flag:
    """One ``serve`` flag: its name, the settings field it sets and what it means.

    ``path`` is the field's dotted path in :class:`ServerSettings` (``transport.port``); the
    flag's type, default and range come from that field.
    """

    name: str
    path: str
    help: str


SERVE_FLAGS: tuple[Flag, ...] = (
    Flag("--data", "data_dir",
         "data directory (store + index; with --store: this replica's index)"),
    Flag("--store", "store",
         "shared store URL, postgresql://user@host:port/database (password from PGPASSWORD "
         "or ~/.pgpass); default: the SQLite store in --data"),
    Flag("--host", "transport.host", "bind address; default: %(default)s (loopback only)"),
    Flag("--port", "transport.port",
         "TCP port; 0 picks a free one (the serving log line names it)"),
    Flag("--threads", "transport.max_workers", "gRPC handler threads per worker"),
    Flag("--max-message-bytes", "transport.max_message_bytes",
         "largest request or response message, bytes (a larger response is refused, naming "
         "what to lower)"),
    Flag("--span-text-mib", "span_text_mib",
         "MiB of span texts kept in memory between plans, per worker (0: none)"),
    Flag("--plan-slots", "plan_slots",
         "plans computed at once per worker; more calls wait their turn"),
    Flag("--workers", "workers",
         "worker processes sharing the port (SO_REUSEPORT); 1 = this process"),
    Flag("--grace", "transport.grace_s", "shutdown: seconds in-flight calls get to finish"),
    Flag("--drain", "transport.drain_s",
         "shutdown: seconds health reports NOT_SERVING before new calls are refused"),
    Flag("--metrics-port", "transport.metrics_port", "serve Prometheus /metrics on this port"),
    Flag("--tls-cert", "transport.tls_cert", "PEM certificate chain (enables TLS)"),
    Flag("--tls-key", "transport.tls_key", "PEM private key"),
    Flag("--tls-client-ca", "transport.tls_client_ca",
         "PEM certificate authorities: require client certificates that chain to them "
         "(mutual TLS)"),
    Flag("--keepalive-time", "transport.keepalive_time_s",
         "seconds of silence before the server pings a client"),
    Flag("--keepalive-timeout", "transport.keepalive_timeout_s",
         "seconds to wait for a keepalive ping's acknowledgement"),
    Flag("--min-ping-interval", "transport.min_ping_interval_s",
         "shortest interval between client pings accepted while no data flows (seconds)"),
    Flag("--models", "models_path",
         "model registry JSON (context windows, tokenizers); "
         "default: the packaged planner_svc/data/models.json"),
    Flag("--max-frac-per-source", "selection.max_frac_per_source",
         "per-source cap as a fraction of the budget"),
    Flag("--dedup-overlap", "selection.dedup_overlap",
         "overlap ratio above which spans are duplicates"),
    Flag("--default-budget", "selection.default_budget_tokens",
         "budget in tokens when a request names none"),
    Flag("--structured-sharpness", "recall.structured_sharpness",
         "exponent on a document's full-text score relative to the best"),
    Flag("--semantic-sharpness", "recall.semantic_sharpness",
         "exponent on a document's semantic score relative to the best"),
    Flag("--hop-decay", "recall.hop_decay", "score factor per hop, times the edge weight"),
    Flag("--hop-sources", "recall.hop_sources",
         "best documents whose edges to other documents are followed"),
    Flag("--candidate-documents", "recall.candidate_documents",
         "documents whose passages enter the pool"),
    Flag("--document-sharpness", "recall.document_sharpness",
         "exponent on a document's score before it weights its passages"),
    Flag("--passage-floor", "recall.passage_floor",
         "share of its document's score the least relevant passage keeps"),
    Flag("--passage-decay", "recall.passage_decay",
         "score factor per rank of a passage within its document"),
    Flag("--local-sharpness", "recall.local_sharpness",
         "exponent on a passage's similarity relative to its document's best"),
    Flag("--abstain-coverage", "recall.abstain_coverage",
         "decline when the best documents hold less of the question than this ..."),
    Flag("--abstain-similarity", "recall.abstain_similarity",
         "... and no passage is this similar to it (not counted when no document holds "
         "a term of the question; 0 and 0: never decline)"),
    Flag("--default-k", "recall.default_k",
         "semantic neighbours when a request names none"),
    Flag("--default-limit", "recall.default_limit",
         "documents the full-text leg keeps when a request names none"),
    Flag("--cassettes", "research.cassette_dir",
         "directory for research-provider cassettes (record/replay)"),
    Flag("--duplicate-similarity", "research.duplicate_similarity",
         "research: a proposed sub-question whose content words all have a counterpart this "
         "similar in one of the session is refused as a duplicate"),
)
"""The ``serve`` flags, in help order."""

_SUBTREES: Mapping[str, type] = MappingProxyType({
    "": ServerSettings,
    "transport": TransportSettings,
    "selection": SelectionSettings,
    "recall": RecallSettings,
    "research": ResearchSettings,
})


def _field(path: str) -> tuple[type, dataclasses.Field[Any]]:
    owner_path, _, name = path.rpartition(".")
    owner = _SUBTREES[owner_path]
    for f in dataclasses.fields(owner):
        if f.name == name:
            return owner, f
    raise KeyError(path)


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def add_serve_flags(parser: argparse.ArgumentParser) -> None:
    """Add :data:`SERVE_FLAGS` to ``parser``: each flag's type and range from its field's
    annotation and bounds, its default from the field's default."""
    from planner_svc.cliargs import bounded

    for flag in SERVE_FLAGS:
        owner, f = _field(flag.path)
        bounds: Bounds | None = getattr(owner, "BOUNDS", {}).get(f.name)
        annotation = str(f.type)
        default = _default(f)
        help_text = flag.help if bounds is None else f"{flag.help}; {bounds}"
        if annotation.startswith("Path"):
            parser.add_argument(flag.name, type=Path, default=default, help=help_text)
        elif annotation.startswith(("int", "float")):
            kind = int if annotation.startswith("int") else float
            parser.add_argument(flag.name, type=bounded(kind, bounds), default=default,
                                help=help_text)
        else:
            parser.add_argument(flag.name, default=default, help=help_text)


def _dest(flag: Flag) -> str:
    return flag.name.lstrip("-").replace("-", "_")


def settings_from_flags(args: argparse.Namespace, environment: Environment) -> ServerSettings:
    """The settings tree from parsed :data:`SERVE_FLAGS` and the environment.

    Raises:
        ConfigError: a value out of range or inconsistent (named by its field).
    """
    values: dict[str, dict[str, Any]] = {prefix: {} for prefix in _SUBTREES}
    for flag in SERVE_FLAGS:
        owner_path, _, name = flag.path.rpartition(".")
        values[owner_path][name] = getattr(args, _dest(flag))
    transport = TransportSettings(**values["transport"], auth_token=environment.auth_token)
    research = ResearchSettings(**values["research"], openai=environment.openai())
    return ServerSettings(
        **values[""],
        model_dir=environment.model_dir,
        transport=transport,
        selection=SelectionSettings(**values["selection"]),
        recall=RecallSettings(**values["recall"]),
        research=research,
    )
