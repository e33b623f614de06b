-- Managed transfers: a job of files, run by the zone it was submitted to. Rows are the
-- durable state the transfer worker resumes from after a restart.
CREATE TABLE transfers (
    id          TEXT PRIMARY KEY,
    owner_id    INTEGER NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    -- The request as JSON (sources, destination, options).
    spec        TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('queued', 'active', 'succeeded', 'failed', 'cancelled')),
    error       TEXT,
    files_total INTEGER NOT NULL DEFAULT 0,
    bytes_total INTEGER NOT NULL DEFAULT 0,
    created     INTEGER NOT NULL,
    started     INTEGER,
    finished    INTEGER
);
CREATE INDEX transfers_owner ON transfers (owner_id, created);
CREATE INDEX transfers_state ON transfers (state);

CREATE TABLE transfer_files (
    transfer_id TEXT NOT NULL REFERENCES transfers (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    source      TEXT    NOT NULL,
    destination TEXT    NOT NULL,
    size        INTEGER NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('pending', 'active', 'done', 'skipped', 'failed', 'cancelled')),
    bytes_done  INTEGER NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    checksum    TEXT,
    -- Where an interrupted large file resumes (upload session and pieces done), as JSON.
    resume      TEXT,
    PRIMARY KEY (transfer_id, seq)
);
CREATE INDEX transfer_files_state ON transfer_files (transfer_id, state);
