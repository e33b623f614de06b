-- The S3 gateway. Access keys act as their user; SigV4 needs the secret itself on the
-- server (an HMAC key), so it is sealed under the zone's key like peer secrets, not hashed
-- like API tokens. A key goes with its user.
CREATE TABLE s3_keys (
    access_key TEXT PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES principals(id) ON DELETE CASCADE,
    secret     TEXT NOT NULL,
    created    INTEGER NOT NULL
);
CREATE INDEX s3_keys_user ON s3_keys (user_id);

-- Buckets an administrator declared, bound to their collection by id (a move keeps them);
-- removing the collection removes the bucket.
CREATE TABLE s3_buckets (
    name        TEXT PRIMARY KEY,
    node_id     INTEGER NOT NULL REFERENCES nodes(id),
    public_read INTEGER NOT NULL,
    created     INTEGER NOT NULL
);

-- What S3 clients need of an object that weft itself does not keep: the ETag they check
-- (an MD5, or AWS's multipart form) and the content type. Valid only while the object's
-- checksum is still `checksum`: content written later by another door (REST) has none.
CREATE TABLE s3_objects (
    node_id      INTEGER PRIMARY KEY REFERENCES nodes(id),
    checksum     TEXT NOT NULL,
    etag         TEXT NOT NULL,
    content_type TEXT
);

-- S3 multipart uploads are upload sessions too (limits, owner, idle sweep, one completer):
-- `s3` holds what to register at completion (content type, metadata), NULL for uploads
-- in pieces. Their parts arrive numbered, sized only by their request, in any order and
-- possibly more than once; each is stored under a physical key of its own on the upload's
-- resource (the orphan sweep spares those keys) and assembled at completion.
ALTER TABLE uploads ADD COLUMN s3 TEXT;
-- When a server began completing it (ms): parts can no longer be added, and the parts stay
-- recorded (spared by the orphan sweep) until the object is registered; a failure clears it
-- so that the client may complete again.
ALTER TABLE uploads ADD COLUMN completing INTEGER;
CREATE TABLE upload_parts (
    upload_id    TEXT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
    part         INTEGER NOT NULL,
    physical_key TEXT NOT NULL,
    size         INTEGER NOT NULL,
    md5          TEXT NOT NULL,
    created      INTEGER NOT NULL,
    PRIMARY KEY (upload_id, part)
);
CREATE INDEX upload_parts_key ON upload_parts (physical_key);
