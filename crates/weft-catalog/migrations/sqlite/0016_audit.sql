-- The audit log: every change to the zone, written in the transaction of the change (a
-- change committed is a change recorded). `actor` is the principal that made it ("zone"
-- for the zone's own work), `origin` where it came from (the client's address, or the
-- background work: "transfer ID", "policy RULE"), `action` one of a fixed set (put, rm,
-- mv, mkdir, meta, acl, pid, token, user, group, resource, zone, staging, quota, policy,
-- qos, transfer), `path` the logical path it concerns if any. Times in ms since the epoch.
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at         BIGINT NOT NULL,
    actor      TEXT NOT NULL,
    origin     TEXT NOT NULL,
    request_id TEXT,
    action     TEXT NOT NULL,
    path       TEXT,
    detail     TEXT NOT NULL
);
CREATE INDEX audit_path ON audit (path, id);
CREATE INDEX audit_actor ON audit (actor, id);
CREATE INDEX audit_at ON audit (at);
