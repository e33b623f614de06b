-- Per transfer and file state: how many files, their bytes done and attempts, kept in step
-- with transfer_files by the catalog in the same transactions. A transfer's progress is
-- then a read of a few rows rather than an aggregate over all its files: that took ~300 ms
-- for a million files on SQLite (scripts/bench-transfer-counts.py), at every poll of
-- `weft transfer wait` (twice a second).
CREATE TABLE transfer_states (
    transfer_id TEXT NOT NULL REFERENCES transfers (id) ON DELETE CASCADE,
    state       TEXT    NOT NULL,
    files       INTEGER NOT NULL,
    bytes_done  INTEGER NOT NULL,
    attempts    INTEGER NOT NULL,
    PRIMARY KEY (transfer_id, state)
);
INSERT INTO transfer_states (transfer_id, state, files, bytes_done, attempts)
SELECT transfer_id, state, COUNT(*), COALESCE(SUM(bytes_done), 0), COALESCE(SUM(attempts), 0)
FROM transfer_files GROUP BY transfer_id, state;
