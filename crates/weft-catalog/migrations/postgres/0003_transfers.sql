-- Managed transfers: a job of files, run by the zone it was submitted to. Rows are the
-- durable state the transfer worker resumes from after a restart.
CREATE TABLE transfers (
    id          TEXT COLLATE "C" PRIMARY KEY,
    owner_id    BIGINT NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    -- The request as JSON (sources, destination, options).
    spec        TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('queued', 'active', 'succeeded', 'failed', 'cancelled')),
    error       TEXT,
    files_total BIGINT NOT NULL DEFAULT 0,
    bytes_total BIGINT NOT NULL DEFAULT 0,
    created     BIGINT NOT NULL,
    started     BIGINT,
    finished    BIGINT
);
CREATE INDEX transfers_owner ON transfers (owner_id, created);
CREATE INDEX transfers_state ON transfers (state);

CREATE TABLE transfer_files (
    transfer_id TEXT COLLATE "C" NOT NULL REFERENCES transfers (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    source      TEXT    NOT NULL,
    destination TEXT    NOT NULL,
    size        BIGINT NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('pending', 'active', 'done', 'skipped', 'failed', 'cancelled')),
    bytes_done  BIGINT NOT NULL DEFAULT 0,
    attempts    BIGINT NOT NULL DEFAULT 0,
    error       TEXT,
    checksum    TEXT,
    -- Where an interrupted large file resumes (upload session and pieces done), as JSON.
    resume      TEXT,
    PRIMARY KEY (transfer_id, seq)
);
CREATE INDEX transfer_files_state ON transfer_files (transfer_id, state);
