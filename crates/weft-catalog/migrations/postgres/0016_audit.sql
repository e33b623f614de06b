-- The audit log: every change to the zone, written in the transaction of the change (a
-- change committed is a change recorded). `actor` is the principal that made it ("zone"
-- for the zone's own work), `origin` where it came from (the client's address, or the
-- background work: "transfer ID", "policy RULE"), `action` one of a fixed set (put, rm,
-- mv, mkdir, meta, acl, pid, token, user, group, resource, zone, staging, quota, policy,
-- qos, transfer), `path` the logical path it concerns if any. Times in ms since the epoch.
CREATE TABLE audit (
    id BIGSERIAL PRIMARY KEY,
    at         BIGINT NOT NULL,
    actor      TEXT NOT NULL,
    origin     TEXT NOT NULL,
    request_id TEXT,
    action     TEXT NOT NULL,
    path       TEXT COLLATE "C",
    detail     TEXT NOT NULL
);
-- Paths compare byte-wise (as in `nodes`): "below /z/a" is the range ['/z/a/', '/z/a0').
-- SP-GiST, not a B-tree: a QoS requirement's path need not be a node's, and a B-tree
-- refuses a key over 2704 bytes (a long incompressible path) and with it the change.
CREATE INDEX audit_path ON audit USING spgist (path);
CREATE INDEX audit_actor ON audit (actor, id);
CREATE INDEX audit_at ON audit (at);
