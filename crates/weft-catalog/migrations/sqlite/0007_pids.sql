-- Persistent identifiers `<prefix>/<suffix>` bound to a collection or data object by id, so
-- they survive moves and renames. When the node is removed the record stays (a PID is never
-- reused or forgotten): `node_id` becomes NULL, `path` keeps where it was, `removed` when.
CREATE TABLE pids (
    prefix  TEXT    NOT NULL,
    suffix  TEXT    NOT NULL,
    node_id INTEGER UNIQUE REFERENCES nodes (id),
    path    TEXT    NOT NULL,
    created INTEGER NOT NULL,
    removed INTEGER,
    PRIMARY KEY (prefix, suffix)
);
