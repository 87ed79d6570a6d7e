"""SQLite schema of the embedded store (one file, ``<data_dir>/store.sqlite``).

Tables (times are integer microseconds since the Unix epoch, offsets UTF-8 bytes):

- ``meta``: key/value pairs (``generation`` write counter, ``last_tx`` the latest transaction
  time recorded, ``vector_dim``, ...).
- ``sources``: one row per source with its latest version's tx, title and media type.
- ``source_versions``: every version's canonical text as UTF-8 bytes (a BLOB, so SQL ``substr``
  and ``length`` count bytes).
- ``spans``: the span ledger, (source_id, tx, byte_start, byte_end) -> kind and location (a
  JSON object ``{"page", "headingPath", "cellIndex"}`` with the keys that are set, or NULL:
  :func:`planner_svc.store.records.encode_location`).
- ``nodes``: bitemporal node versions; ``version_id`` is the rowid. labels, properties and
  provenance are JSON. At most one version per node has an open transaction interval.
- ``node_labels``, ``node_props``: lookup tables for label and property filters.
- ``nodes_fts``: FTS5 index over ``nodes.text`` (external content, rowid = version_id), Porter
  stemming over the unicode61 tokenizer with diacritics removed.
- ``edges``: bitemporal weighted edge versions keyed by (src, dst, relation).
- ``vectors``: one float32 little-endian vector per node version.
"""

from __future__ import annotations

SCHEMA_VERSION = 4
"""Stored in ``PRAGMA user_version``; a file with a newer version is refused. Version 2 adds the
``last_tx`` clock row (filled from the recorded times when an older file is opened); version 3
indexes closed transaction intervals, which the change feed reads; version 4 adds each span's
location to the span ledger (:data:`ADDED_COLUMNS`; rows written before have NULL, no
location)."""

DDL = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS sources (
    source_id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    media_type TEXT NOT NULL,
    latest_tx INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sources_by_title ON sources (title, source_id);

CREATE TABLE IF NOT EXISTS source_versions (
    id INTEGER PRIMARY KEY,
    source_id TEXT NOT NULL,
    tx INTEGER NOT NULL,
    title TEXT NOT NULL,
    media_type TEXT NOT NULL,
    text BLOB NOT NULL,
    UNIQUE (source_id, tx)
);

CREATE TABLE IF NOT EXISTS spans (
    source_id TEXT NOT NULL,
    tx INTEGER NOT NULL,
    byte_start INTEGER NOT NULL,
    byte_end INTEGER NOT NULL,
    kind TEXT NOT NULL,
    location TEXT,
    PRIMARY KEY (source_id, tx, byte_start, byte_end)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS nodes (
    version_id INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id TEXT NOT NULL,
    labels TEXT NOT NULL,
    properties TEXT NOT NULL,
    text TEXT NOT NULL,
    confidence REAL NOT NULL,
    provenance TEXT NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_to INTEGER,
    tx_from INTEGER NOT NULL,
    tx_to INTEGER
);
CREATE INDEX IF NOT EXISTS nodes_by_id ON nodes (node_id, tx_from);
CREATE INDEX IF NOT EXISTS nodes_by_tx_to ON nodes (tx_to) WHERE tx_to IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS nodes_open ON nodes (node_id) WHERE tx_to IS NULL;

CREATE TABLE IF NOT EXISTS node_labels (
    label TEXT NOT NULL,
    version_id INTEGER NOT NULL,
    PRIMARY KEY (label, version_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS node_props (
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    version_id INTEGER NOT NULL,
    PRIMARY KEY (key, value, version_id)
) WITHOUT ROWID;

CREATE VIRTUAL TABLE IF NOT EXISTS nodes_fts USING fts5 (
    text,
    content = 'nodes',
    content_rowid = 'version_id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TABLE IF NOT EXISTS edges (
    edge_id INTEGER PRIMARY KEY,
    src TEXT NOT NULL,
    dst TEXT NOT NULL,
    relation TEXT NOT NULL,
    weight REAL NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_to INTEGER,
    tx_from INTEGER NOT NULL,
    tx_to INTEGER
);
CREATE INDEX IF NOT EXISTS edges_by_key ON edges (src, dst, relation, tx_from);
CREATE INDEX IF NOT EXISTS edges_by_dst ON edges (dst, tx_from);
CREATE INDEX IF NOT EXISTS edges_by_tx_to ON edges (tx_to) WHERE tx_to IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS edges_open ON edges (src, dst, relation) WHERE tx_to IS NULL;

CREATE TABLE IF NOT EXISTS vectors (
    version_id INTEGER PRIMARY KEY,
    vector BLOB NOT NULL
);

INSERT OR IGNORE INTO meta (key, value) VALUES ('generation', 0);
"""

LAST_TX_BACKFILL = """
INSERT OR IGNORE INTO meta (key, value) SELECT 'last_tx', max(t) FROM (
    SELECT max(tx) AS t FROM source_versions
    UNION ALL SELECT max(tx_from) FROM nodes UNION ALL SELECT max(tx_to) FROM nodes
    UNION ALL SELECT max(tx_from) FROM edges UNION ALL SELECT max(tx_to) FROM edges
) WHERE t IS NOT NULL HAVING max(t) IS NOT NULL
"""
"""Fills the clock row of a store written before it existed: the latest time any row records."""

ADDED_COLUMNS = (("spans", "location", "TEXT"),)
"""``(table, column, type)`` of columns added after their table was first created: a file of an
older schema gets each one that it lacks (``ALTER TABLE ... ADD COLUMN``, NULL in existing
rows) when it is opened."""
