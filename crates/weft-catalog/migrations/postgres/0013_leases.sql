-- Who runs a unit of background work (a managed transfer, a zone-wide worker such as the
-- scrubber), and until when: several servers of one zone share this catalog, and each unit
-- runs on exactly one of them. A holder extends its leases while it works; a lease that
-- expires (its server was killed) is taken by another server. Times in ms since the epoch.
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires BIGINT NOT NULL,
    taken BIGINT NOT NULL
);
