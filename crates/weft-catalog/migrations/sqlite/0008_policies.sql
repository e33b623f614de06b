-- The policy engine's durable state. Events are written in the transaction of the change
-- they record (a crash cannot lose one) and deleted once handled; node ids carry no
-- foreign key because an object may be removed before its events or tasks are handled.
CREATE TABLE node_events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id INTEGER NOT NULL,
    kind    TEXT    NOT NULL CHECK (kind IN ('written', 'meta')),
    attr    TEXT,
    at      INTEGER NOT NULL
);

-- Loaded rules; `definition` is the JSON of weft_policy::Rule.
CREATE TABLE policy_rules (
    name       TEXT    PRIMARY KEY,
    definition TEXT    NOT NULL,
    updated    INTEGER NOT NULL,
    last_run   INTEGER
);

-- One action of a rule on one object. `rule` has no foreign key: QoS requirements queue
-- tasks under the pseudo-rule `qos:<id>`.
CREATE TABLE policy_tasks (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    rule        TEXT    NOT NULL,
    node_id     INTEGER NOT NULL,
    path        TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('pending', 'waiting', 'done', 'failed')),
    transfer_id TEXT,
    due         INTEGER NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    created     INTEGER NOT NULL,
    updated     INTEGER NOT NULL
);
CREATE INDEX policy_tasks_due ON policy_tasks (state, due);
CREATE INDEX policy_tasks_rule ON policy_tasks (rule, state);
-- At most one open task per rule, object and action: events and sweeps that fire again
-- while it is open add nothing. (PostgreSQL keys the action by its hash, for its B-tree key
-- limit; SQLite has none.)
CREATE UNIQUE INDEX policy_tasks_open ON policy_tasks (rule, node_id, action)
    WHERE state IN ('pending', 'waiting');

-- QoS requirements on a path and everything below it.
CREATE TABLE qos (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    path       TEXT    NOT NULL,
    expression TEXT    NOT NULL,
    owner_id   INTEGER NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    status     TEXT    NOT NULL CHECK (status IN ('pending', 'fulfilled', 'impossible')),
    reason     TEXT    NOT NULL DEFAULT '',
    evaluated  INTEGER,
    created    INTEGER NOT NULL,
    UNIQUE (path, expression)
);
