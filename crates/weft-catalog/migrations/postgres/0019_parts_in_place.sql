-- S3 multipart uploads onto a file-system resource write each part into one staged file,
-- at (part - 1) x the upload's stride (uploads.piece_size, set by the first part of at
-- least 5 MiB), so that completion renames that file instead of copying every byte.

-- Where the part lies in its upload's staged file; NULL: under its own physical key.
ALTER TABLE upload_parts ADD COLUMN staged_offset BIGINT;
-- The BLAKE3 chaining value (hex) of the part at its place in the object, when the stride
-- is a power of two: completion merges these instead of reading the object back.
ALTER TABLE upload_parts ADD COLUMN digest TEXT;

-- A place in the staged file is written once only: a part sent again goes under a key of
-- its own, so that bytes already acknowledged are never overwritten by a write that may
-- fail. "writing" while that one write runs (one never ended: its server died).
CREATE TABLE upload_slots (
    upload_id TEXT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
    part      BIGINT NOT NULL,
    writing   BIGINT NOT NULL,
    PRIMARY KEY (upload_id, part)
);
