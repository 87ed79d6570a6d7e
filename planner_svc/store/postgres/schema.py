"""PostgreSQL schema of the shared store (tables in the connection's current schema).

The tables mirror the embedded store's (:mod:`planner_svc.store.schema`); times are ``bigint``
microseconds since the Unix epoch, offsets UTF-8 bytes. Differences:

- ``clock``: one row holding ``last_tx`` (the latest transaction time recorded) and
  ``generation`` (committed writes that changed something). Every write transaction locks it
  first (``SELECT ... FOR UPDATE``), so writers from every replica are serialised: transaction
  times and row ids grow in commit order, and a reader's watermark never skips a row that
  commits late.
- ids (``nodes.version_id``, ``edges.edge_id``, ``source_versions.id``) are ``max + 1`` taken
  under that lock, not sequences: a rolled-back write gives its ids back, as in SQLite, so the
  same writes give the same ids on both backends (ids break ties in recall).
- identifiers and ordered text columns use ``COLLATE "C"`` (byte order of UTF-8 = code point
  order, SQLite's ``BINARY``); free text (titles, media types, node text, canonical text) is
  ``bytea`` holding UTF-8, so any text SQLite stores (a NUL included) is stored unchanged.
- labels, properties and provenance are the same compact JSON text as in SQLite, and
  ``label_set`` holds the labels as an array for label filters.

``meta.store_id`` is a random id made when the store is created: a replica records it beside
its derived indexes and rebuilds them when its data directory was built from another store.

Versions: ``meta.schema_version``; :data:`MIGRATIONS` holds the statements that bring a store
from each version to the next, applied in one transaction under an advisory lock, so replicas
starting together migrate once. A store with a newer version is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

SCHEMA_VERSION = 2
"""The version this build writes and reads: 2 adds each span's location to the span ledger
(``spans.location``, the JSON text :func:`planner_svc.store.records.encode_location` writes;
NULL, no location, in rows written before)."""

INIT_LOCK = 0x706C616E6E6572  # "planner"
"""Advisory lock key held while the schema is created or migrated."""

TABLES = ("meta", "clock", "sources", "source_versions", "spans", "nodes", "edges", "vectors")
"""Every table of the store."""

_V1 = """
CREATE TABLE meta (
    key text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE clock (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last_tx bigint,
    generation bigint NOT NULL DEFAULT 0
);
INSERT INTO clock (singleton) VALUES (true);
INSERT INTO meta (key, value) VALUES ('store_id', gen_random_uuid()::text);

CREATE TABLE sources (
    source_id text COLLATE "C" PRIMARY KEY,
    title bytea NOT NULL,
    media_type bytea NOT NULL,
    latest_tx bigint NOT NULL
);
CREATE INDEX sources_by_title ON sources (title, source_id);

CREATE TABLE source_versions (
    id bigint PRIMARY KEY,
    source_id text COLLATE "C" NOT NULL,
    tx bigint NOT NULL,
    title bytea NOT NULL,
    media_type bytea NOT NULL,
    text bytea NOT NULL,
    UNIQUE (source_id, tx)
);

CREATE TABLE spans (
    source_id text COLLATE "C" NOT NULL,
    tx bigint NOT NULL,
    byte_start bigint NOT NULL,
    byte_end bigint NOT NULL,
    kind text NOT NULL,
    PRIMARY KEY (source_id, tx, byte_start, byte_end)
);

CREATE TABLE nodes (
    version_id bigint PRIMARY KEY,
    node_id text COLLATE "C" NOT NULL,
    labels text NOT NULL,
    label_set text[] NOT NULL,
    properties text NOT NULL,
    text bytea NOT NULL,
    confidence double precision NOT NULL,
    provenance text NOT NULL,
    valid_from bigint NOT NULL,
    valid_to bigint,
    tx_from bigint NOT NULL,
    tx_to bigint
);
CREATE INDEX nodes_by_id ON nodes (node_id, tx_from);
CREATE INDEX nodes_by_tx_to ON nodes (tx_to) WHERE tx_to IS NOT NULL;
CREATE UNIQUE INDEX nodes_open ON nodes (node_id) WHERE tx_to IS NULL;

CREATE TABLE edges (
    edge_id bigint PRIMARY KEY,
    src text COLLATE "C" NOT NULL,
    dst text COLLATE "C" NOT NULL,
    relation text COLLATE "C" NOT NULL,
    weight double precision NOT NULL,
    valid_from bigint NOT NULL,
    valid_to bigint,
    tx_from bigint NOT NULL,
    tx_to bigint
);
CREATE INDEX edges_by_key ON edges (src, dst, relation, tx_from);
CREATE INDEX edges_by_dst ON edges (dst, tx_from);
CREATE INDEX edges_by_tx_to ON edges (tx_to) WHERE tx_to IS NOT NULL;
CREATE UNIQUE INDEX edges_open ON edges (src, dst, relation) WHERE tx_to IS NULL;

CREATE TABLE vectors (
    version_id bigint PRIMARY KEY,
    vector bytea NOT NULL
)
"""

_V2 = """
ALTER TABLE spans ADD COLUMN location text
"""

MIGRATIONS: Mapping[int, str] = MappingProxyType({1: _V1, 2: _V2})
"""Version -> the statements (``;``-separated) that bring a store at version - 1 (0: empty) to
it. A new version adds an entry here and raises :data:`SCHEMA_VERSION`."""
