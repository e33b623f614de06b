-- weft catalog, SQLite dialect. Times are unix milliseconds; ids never reused (AUTOINCREMENT
-- where ids are handed out and referenced from outside: nodes, replicas).
-- Text compares with the BINARY collation, i.e. byte order: path ranges are prefix ranges.

CREATE TABLE principals (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    name     TEXT    NOT NULL UNIQUE,
    kind     TEXT    NOT NULL CHECK (kind IN ('user', 'group')),
    is_admin INTEGER NOT NULL DEFAULT 0,
    created  INTEGER NOT NULL
);

CREATE TABLE group_members (
    group_id INTEGER NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    user_id  INTEGER NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members (user_id);

CREATE TABLE tokens (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     INTEGER NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    secret_hash TEXT    NOT NULL UNIQUE,
    label       TEXT    NOT NULL,
    created     INTEGER NOT NULL,
    expires     INTEGER
);
CREATE INDEX tokens_user ON tokens (user_id);

CREATE TABLE resources (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL UNIQUE,
    kind       TEXT    NOT NULL,
    config     TEXT    NOT NULL,
    tier       TEXT    NOT NULL,
    is_default INTEGER NOT NULL DEFAULT 0,
    created    INTEGER NOT NULL
);
-- At most one default resource.
CREATE UNIQUE INDEX resources_one_default ON resources (is_default) WHERE is_default;

-- Collections and data objects. The full path is stored on every node so that any path
-- resolves in one indexed lookup; a subtree is the byte range [path || '/', path || '0').
CREATE TABLE nodes (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    parent_id INTEGER REFERENCES nodes (id),
    path      TEXT    NOT NULL UNIQUE,
    name      TEXT    NOT NULL,
    kind      TEXT    NOT NULL CHECK (kind IN ('collection', 'object')),
    size      INTEGER NOT NULL DEFAULT 0,
    checksum  TEXT,
    owner_id  INTEGER NOT NULL REFERENCES principals (id),
    created   INTEGER NOT NULL,
    modified  INTEGER NOT NULL,
    UNIQUE (parent_id, name)
);
CREATE INDEX nodes_owner ON nodes (owner_id);

CREATE TABLE replicas (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id      INTEGER NOT NULL REFERENCES nodes (id),
    resource_id  INTEGER NOT NULL REFERENCES resources (id),
    physical_key TEXT    NOT NULL,
    size         INTEGER NOT NULL,
    checksum     TEXT,
    state        TEXT    NOT NULL CHECK (state IN ('writing', 'good', 'stale')),
    created      INTEGER NOT NULL,
    verified     INTEGER
);
CREATE INDEX replicas_node ON replicas (node_id);
-- Also the index by resource: "is this key still referenced?" for the garbage collector.
CREATE UNIQUE INDEX replicas_resource_key ON replicas (resource_id, physical_key);

CREATE TABLE avus (
    id        INTEGER PRIMARY KEY,
    node_id   INTEGER NOT NULL REFERENCES nodes (id),
    attr      TEXT    NOT NULL,
    value     TEXT    NOT NULL,
    unit      TEXT    NOT NULL DEFAULT '',
    -- weft_types::meta::parse_number(value), for attr > number queries.
    value_num REAL
);
CREATE INDEX avus_attr_value ON avus (attr, value);
CREATE INDEX avus_attr_num ON avus (attr, value_num) WHERE value_num IS NOT NULL;
CREATE INDEX avus_node ON avus (node_id);

CREATE TABLE acls (
    node_id      INTEGER NOT NULL REFERENCES nodes (id),
    principal_id INTEGER NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    level        INTEGER NOT NULL CHECK (level BETWEEN 1 AND 3),
    PRIMARY KEY (node_id, principal_id)
);
CREATE INDEX acls_principal ON acls (principal_id);
