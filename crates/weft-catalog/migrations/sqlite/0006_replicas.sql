-- Replication (issue 4). A replica can now also be `bad`: the scrubber re-read it and the
-- bytes did not hash to the recorded checksum (or were gone). SQLite cannot change a CHECK
-- constraint, so the table is rebuilt with the same rows and indexes.
CREATE TABLE replicas_v6 (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id      INTEGER NOT NULL REFERENCES nodes (id),
    resource_id  INTEGER NOT NULL REFERENCES resources (id),
    physical_key TEXT    NOT NULL,
    size         INTEGER NOT NULL,
    checksum     TEXT,
    state        TEXT    NOT NULL CHECK (state IN ('writing', 'good', 'stale', 'bad')),
    created      INTEGER NOT NULL,
    verified     INTEGER
);
INSERT INTO replicas_v6 SELECT id, node_id, resource_id, physical_key, size, checksum, state, created, verified
    FROM replicas;
DROP TABLE replicas;
ALTER TABLE replicas_v6 RENAME TO replicas;
CREATE INDEX replicas_node ON replicas (node_id);
CREATE UNIQUE INDEX replicas_resource_key ON replicas (resource_id, physical_key);
-- The scrubber's queue: replicas by the time they were last verified (or made).
CREATE INDEX replicas_scrub ON replicas (coalesce(verified, created));

-- Replicas of this zone's data objects held by a federated zone: there, the copy is the
-- data object `location` (under `/<that zone>/replicas/<this zone>/`) on `resource`.
-- This zone's catalog is the one record of which copies exist and whether they are good.
CREATE TABLE remote_replicas (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id  INTEGER NOT NULL REFERENCES nodes (id),
    zone     TEXT    NOT NULL,
    resource TEXT    NOT NULL,
    location TEXT    NOT NULL,
    size     INTEGER NOT NULL,
    checksum TEXT,
    state    TEXT    NOT NULL CHECK (state IN ('good', 'stale', 'bad')),
    created  INTEGER NOT NULL,
    verified INTEGER,
    UNIQUE (node_id, zone, resource)
);
CREATE INDEX remote_replicas_scrub ON remote_replicas (coalesce(verified, created));
