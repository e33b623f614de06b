-- The policy engine's durable state. Events are written in the transaction of the change
-- they record (a crash cannot lose one) and deleted once handled; node ids carry no
-- foreign key because an object may be removed before its events or tasks are handled.
CREATE TABLE node_events (
    id      BIGSERIAL PRIMARY KEY,
    node_id BIGINT  NOT NULL,
    kind    TEXT    NOT NULL CHECK (kind IN ('written', 'meta')),
    attr    TEXT,
    at      BIGINT  NOT NULL
);

-- Loaded rules; `definition` is the JSON of weft_policy::Rule.
CREATE TABLE policy_rules (
    name       TEXT COLLATE "C" PRIMARY KEY,
    definition TEXT    NOT NULL,
    updated    BIGINT  NOT NULL,
    last_run   BIGINT
);

-- One action of a rule on one object. `rule` has no foreign key: QoS requirements queue
-- tasks under the pseudo-rule `qos:<id>`.
CREATE TABLE policy_tasks (
    id          BIGSERIAL PRIMARY KEY,
    rule        TEXT COLLATE "C" NOT NULL,
    node_id     BIGINT  NOT NULL,
    path        TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('pending', 'waiting', 'done', 'failed')),
    transfer_id TEXT,
    due         BIGINT  NOT NULL,
    attempts    BIGINT  NOT NULL DEFAULT 0,
    error       TEXT,
    created     BIGINT  NOT NULL,
    updated     BIGINT  NOT NULL
);
CREATE INDEX policy_tasks_due ON policy_tasks (state, due);
CREATE INDEX policy_tasks_rule ON policy_tasks (rule, state);
-- At most one open task per rule, object and action: events and sweeps that fire again
-- while it is open add nothing. The action is keyed by its hash: a B-tree key holds at
-- most 2704 bytes, and an action (a metadata value, a webhook URL) may be longer.
CREATE UNIQUE INDEX policy_tasks_open ON policy_tasks (rule, node_id, md5(action))
    WHERE state IN ('pending', 'waiting');

-- QoS requirements on a path and everything below it.
CREATE TABLE qos (
    id         BIGSERIAL PRIMARY KEY,
    path       TEXT COLLATE "C" NOT NULL,
    expression TEXT    NOT NULL,
    owner_id   BIGINT  NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    status     TEXT    NOT NULL CHECK (status IN ('pending', 'fulfilled', 'impossible')),
    reason     TEXT    NOT NULL DEFAULT '',
    evaluated  BIGINT,
    created    BIGINT  NOT NULL
);
-- One requirement per path and expression, keyed by their hashes for the same B-tree limit
-- (a path may be 4096 bytes).
CREATE UNIQUE INDEX qos_path_expression ON qos (md5(path), md5(expression));
