-- Staging areas: external directories and buckets the zone administrator lets transfers
-- read and write (`file:///...`, `s3://bucket/prefix`). `settings` is the store's JSON
-- (S3 credentials included: they never leave this zone); `allow` is a JSON array of the
-- users and groups that may use the area, empty for every user of the zone.
CREATE TABLE staging_areas (
    name     TEXT COLLATE "C" PRIMARY KEY,
    kind     TEXT    NOT NULL,
    url      TEXT    NOT NULL,
    settings TEXT    NOT NULL,
    allow    TEXT    NOT NULL,
    created  BIGINT  NOT NULL
);
