-- Uploads in pieces, kept here so that any server of the zone takes any piece of one, and a
-- piece acknowledged is never asked for again, after a restart or through another server.
-- `staged` names where the storage keeps the pieces until completion (a file of the
-- resource's .weft-tmp, or an S3 multipart upload). A server completes or aborts an upload
-- by deleting its row first: only one can. Times in ms since the epoch.
CREATE TABLE uploads (
    id           TEXT PRIMARY KEY,
    path         TEXT NOT NULL,
    owner_id     BIGINT NOT NULL REFERENCES principals(id) ON DELETE CASCADE,
    size         BIGINT NOT NULL,
    piece_size   BIGINT NOT NULL,
    resource_id  BIGINT NOT NULL REFERENCES resources(id),
    physical_key TEXT NOT NULL,
    staged       TEXT NOT NULL,
    overwrite    INTEGER NOT NULL,
    replica_of   BIGINT,
    created      BIGINT NOT NULL,
    touched      BIGINT NOT NULL
);
CREATE INDEX uploads_owner ON uploads (owner_id);
CREATE INDEX uploads_touched ON uploads (touched);

-- The pieces received: the BLAKE3 chaining value of each (the root, for a file of one
-- piece), and the S3 part's ETag where the storage needs it to complete.
CREATE TABLE upload_pieces (
    upload_id TEXT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
    idx       BIGINT NOT NULL,
    digest    TEXT NOT NULL,
    etag      TEXT,
    PRIMARY KEY (upload_id, idx)
);
